package source

import (
	"reflect"
	"testing"
)

// encodeVLQ is the inverse of decodeVLQ for round trips.
func encodeVLQ(vals []int) string {
	var out []byte
	for _, v := range vals {
		u := v << 1
		if v < 0 {
			u = (-v)<<1 | 1
		}
		for {
			d := u & 31
			u >>= 5
			if u != 0 {
				d |= 32
			}
			out = append(out, b64[d])
			if u == 0 {
				break
			}
		}
	}
	return string(out)
}

func TestDecodeVLQ(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		ok   bool
	}{
		{"", nil, true},
		{"A", []int{0}, true},
		{"C", []int{1}, true},
		{"D", []int{-1}, true},
		{"AAAA", []int{0, 0, 0, 0}, true},
		{"CAAC", []int{1, 0, 0, 1}, true},
		{"iBAAkB", []int{17, 0, 0, 18}, true},
		{"gB", []int{16}, true},
		{"2H", []int{123}, true},
		{"+/////B", []int{1<<30 - 1}, true},
		{"+//////B", nil, false}, // more than 30 bits of shift
		{"g", nil, false},        // continuation without an end
		{"A!", nil, false},       // not base64
		{"A=", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := decodeVLQ(tt.in)
			if ok != tt.ok || (ok && !reflect.DeepEqual(got, tt.want)) {
				t.Fatalf("decodeVLQ(%q) = %v %v, want %v %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
	for _, vals := range [][]int{{0}, {1, -1, 15, -16, 16, -17}, {1 << 20, -(1 << 20)}, {1<<30 - 1}} {
		if got, ok := decodeVLQ(encodeVLQ(vals)); !ok || !reflect.DeepEqual(got, vals) {
			t.Errorf("round trip %v: %v %v", vals, got, ok)
		}
	}
}

func TestSourceMapLookup(t *testing.T) {
	// Generated line 1: col 0 → (0,0), col 4 → (0,10); line 2 empty; line 3: col 2 → (2,0),
	// col 8 → (3,4) (original lines accumulate across generated lines).
	raw := `{"version":3,"mappings":"AAAA,IAAU;;EAEV,MACI"}`
	sm := decodeSourceMap([]byte(raw))
	if len(sm) != 3 {
		t.Fatalf("decoded %d lines: %+v", len(sm), sm)
	}
	tests := []struct {
		line, col int
		wl, wc    int
		ok        bool
	}{
		{1, 1, 1, 1, true},
		{1, 3, 1, 3, true},  // inside the first segment
		{1, 5, 1, 11, true}, // second segment start
		{1, 9, 1, 15, true}, // extrapolated
		{2, 1, 0, 0, false}, // no segments
		{3, 1, 3, 1, true},  // before the first segment: its start, never column < 1
		{3, 3, 3, 1, true},  // first segment
		{3, 9, 4, 5, true},  // second segment
		{0, 1, 0, 0, false}, // out of range
		{4, 1, 0, 0, false}, // out of range
		{-3, -3, 0, 0, false},
	}
	for _, tt := range tests {
		l, c, ok := sm.lookup(tt.line, tt.col)
		if ok != tt.ok || l != tt.wl || c != tt.wc {
			t.Errorf("lookup(%d, %d) = %d:%d %v, want %d:%d %v", tt.line, tt.col, l, c, ok, tt.wl, tt.wc, tt.ok)
		}
	}
	for _, bad := range []string{"", "{", "null", `{"mappings":1}`, `{"mappings":"!!!;;;A"}`} {
		sm := decodeSourceMap([]byte(bad))
		if _, _, ok := sm.lookup(1, 1); ok {
			t.Errorf("%q: lookup succeeded on a map without segments", bad)
		}
	}
}
