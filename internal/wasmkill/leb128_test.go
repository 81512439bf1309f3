package wasmkill

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestLEB128(t *testing.T) {
	b := func(x ...byte) []byte { return x }
	ff9 := bytes.Repeat([]byte{0xff}, 9)
	x809 := bytes.Repeat([]byte{0x80}, 9)
	tests := []struct {
		name   string
		signed bool
		bits   uint
		in     []byte
		want   int64 // for unsigned, compared as uint64(want)
		err    string
	}{
		{"u32 zero", false, 32, b(0x00), 0, ""},
		{"u32 127", false, 32, b(0x7f), 127, ""},
		{"u32 128", false, 32, b(0x80, 0x01), 128, ""},
		{"u32 max", false, 32, b(0xff, 0xff, 0xff, 0xff, 0x0f), math.MaxUint32, ""},
		{"u32 padded zero", false, 32, b(0x80, 0x80, 0x80, 0x80, 0x00), 0, ""},
		{"u32 overflow", false, 32, b(0xff, 0xff, 0xff, 0xff, 0x1f), 0, "overflows u32"},
		{"u32 too long", false, 32, b(0x80, 0x80, 0x80, 0x80, 0x80, 0x00), 0, "overflows u32"},
		{"u32 truncated", false, 32, b(0x80), 0, "truncated"},
		{"u32 empty", false, 32, nil, 0, "truncated"},
		{"u64 max", false, 64, append(bytes.Clone(ff9), 0x01), -1, ""},
		{"u64 overflow", false, 64, append(bytes.Clone(ff9), 0x02), 0, "overflows u64"},
		{"s32 -1", true, 32, b(0x7f), -1, ""},
		{"s32 -64", true, 32, b(0x40), -64, ""},
		{"s32 63", true, 32, b(0x3f), 63, ""},
		{"s32 64", true, 32, b(0xc0, 0x00), 64, ""},
		{"s32 -128", true, 32, b(0x80, 0x7f), -128, ""},
		{"s32 max", true, 32, b(0xff, 0xff, 0xff, 0xff, 0x07), math.MaxInt32, ""},
		{"s32 min", true, 32, b(0x80, 0x80, 0x80, 0x80, 0x78), math.MinInt32, ""},
		{"s32 padded -1", true, 32, b(0xff, 0xff, 0xff, 0xff, 0x7f), -1, ""},
		{"s32 unused bits", true, 32, b(0xff, 0xff, 0xff, 0xff, 0x0f), 0, "overflows s32"},
		{"s32 unused bits negative", true, 32, b(0x80, 0x80, 0x80, 0x80, 0x70), 0, "overflows s32"},
		{"s32 too long", true, 32, b(0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), 0, "overflows s32"},
		{"s32 truncated", true, 32, b(0xff), 0, "truncated"},
		{"s33 u32 max", true, 33, b(0xff, 0xff, 0xff, 0xff, 0x0f), math.MaxUint32, ""},
		{"s33 -2^32", true, 33, b(0x80, 0x80, 0x80, 0x80, 0x70), -(1 << 32), ""},
		{"s33 unused bits", true, 33, b(0xff, 0xff, 0xff, 0xff, 0x1f), 0, "overflows s33"},
		{"s64 max", true, 64, append(bytes.Clone(ff9), 0x00), math.MaxInt64, ""},
		{"s64 min", true, 64, append(bytes.Clone(x809), 0x7f), math.MinInt64, ""},
		{"s64 unused bits", true, 64, append(bytes.Clone(x809), 0x01), 0, "overflows s64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Trailing byte: the reader must stop exactly after the value.
			in := append(bytes.Clone(tc.in), 0xaa)
			r := reader{buf: in, end: len(in)}
			var got int64
			var err error
			if tc.signed {
				got, err = r.sleb(tc.bits)
			} else {
				var u uint64
				u, err = r.uleb(tc.bits)
				got = int64(u)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
			if r.pos != len(tc.in) {
				t.Errorf("consumed %d bytes, want %d", r.pos, len(tc.in))
			}
		})
	}
}

func TestAppendU32(t *testing.T) {
	for _, v := range []uint32{0, 1, 63, 64, 127, 128, 200, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<28 - 1, 1 << 28, math.MaxUint32} {
		enc := appendU32(nil, v)
		if len(enc) != sizeU32(v) {
			t.Errorf("sizeU32(%d) = %d, encoding has %d bytes", v, sizeU32(v), len(enc))
		}
		r := reader{buf: enc, end: len(enc)}
		got, err := r.u32()
		if err != nil || got != v || r.pos != len(enc) {
			t.Errorf("round trip of %d: got %d, err %v, consumed %d of %d", v, got, err, r.pos, len(enc))
		}
	}
}
