package results

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestScan(t *testing.T) { // issue 22 item 2: observed paths, types and counts
	items := make([]string, 500)
	for i := range items {
		tags := `["a","b"]`
		if i%5 == 0 {
			tags = `[]`
		}
		extra := ""
		if i%2 == 0 {
			extra = `,"note":null`
		}
		items[i] = fmt.Sprintf(`{"id":%d,"name":"n%d","tags":%s,"weird key":true%s}`, i, i, tags, extra)
	}
	v := `[` + strings.Join(items, ",") + `]`
	s := Scan([]byte(v))
	if s.Count != 500 {
		t.Fatalf("count %d", s.Count)
	}
	keys, vals := s.describe(100)
	got := map[string]string{}
	for i := range keys {
		got[keys[i]] = vals[i]
	}
	want := map[string]string{
		"$":                 "array ×1 (length 500)",
		"$[*]":              "object ×500",
		"$[*].id":           "number ×500",
		"$[*].tags":         "array ×500 (length 0–2)",
		"$[*].tags[*]":      "string ×800",
		`$[*]["weird key"]`: "boolean ×500",
		"$[*].note":         "null ×250",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
	for _, c := range []struct {
		in    string
		count int
		root  string
	}{{`"x"`, 1, "string ×1"}, {`{"a":1,"b":2}`, 2, "object ×1"}, {`[]`, 0, "array ×1 (length 0)"}, {` [ 1 , 2 ] `, 2, "array ×1 (length 2)"}} {
		s := Scan([]byte(c.in))
		_, vals := s.describe(1)
		if s.Count != c.count || vals[0] != c.root {
			t.Errorf("%s: count %d, root %q", c.in, s.Count, vals[0])
		}
	}
}

func TestScanBounds(t *testing.T) { // deep, wide and key-heavy values stay bounded and say so
	deep := strings.Repeat(`{"a":`, 50) + `1` + strings.Repeat(`}`, 50)
	wide := `{` + func() string {
		var b []string
		for i := range 100 {
			b = append(b, fmt.Sprintf(`"k%d":%d`, i, i))
		}
		return strings.Join(b, ",")
	}() + `}`
	for _, in := range []string{deep, wide} {
		s := Scan([]byte(in))
		if len(s.paths) > maxPaths {
			t.Fatalf("%d paths", len(s.paths))
		}
		d := Descriptor{ID: "res_x", Bytes: len(in), Count: s.Count, Shape: s, JSON: []byte(in)}.Render(1 << 20)
		if !strings.Contains(string(d), "not listed") {
			t.Fatalf("bounded traversal not labelled: %s", d)
		}
	}
}

func TestRenderFitsBudget(t *testing.T) {
	v := []byte(`[` + strings.Repeat(`{"id":1,"text":"<b>\"quoted\"</b> é\u2028"},`, 2000) + `{"id":2}]`)
	s := Scan(v)
	for _, budget := range []int{60, 120, 256, 700, 2048, 65536} {
		d := Descriptor{ID: NewID(), Bytes: len(v), Count: s.Count, Shape: s, JSON: v}
		b := d.Render(budget)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("budget %d: invalid JSON %v: %s", budget, err, b)
		}
		if m["id"] != d.ID {
			t.Fatalf("budget %d: identity lost: %s", budget, b)
		}
		if len(b) > budget && budget >= 100 {
			t.Fatalf("budget %d: %d bytes", budget, len(b))
		}
		ref := Reference(d, 65536, budget)
		if len(ref) > budget && budget >= 256 {
			t.Fatalf("reference over budget %d: %d", budget, len(ref))
		}
		tr := Truncated(v, len(v), 65536, budget, "test")
		if (len(tr) > budget && budget >= 256) || !json.Valid(tr) || !json.Valid(ref) {
			t.Fatalf("truncated: %d bytes %s", len(tr), tr)
		}
	}
}

// FuzzPreview: whatever JSON a cell returns, its description is valid JSON within the budget and
// keeps the reference's identity (issue 22 item 2).
func FuzzPreview(f *testing.F) {
	for _, s := range []string{`[1,2,3]`, `{"a":{"b":[{"c":"<>&\u2028"}]}}`, `"\ud83d\ude00"`, `null`, strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40)} {
		f.Add([]byte(s), 300)
	}
	f.Fuzz(func(t *testing.T, v []byte, budget int) {
		if !json.Valid(v) || len(v) > 1<<16 {
			return
		}
		budget = 256 + abs(budget)%8192
		s := Scan(v)
		d := Descriptor{ID: "res_AAAAAAAAAAAAAAAAAAAAAA", Bytes: len(v), Count: s.Count, Shape: s, JSON: v}
		for _, b := range [][]byte{d.Render(budget), Reference(d, 65536, budget), Truncated(v, len(v), 65536, budget, "why")} {
			if !json.Valid(b) || !utf8.Valid(b) || len(b) > budget {
				t.Fatalf("budget %d: %d bytes: %s", budget, len(b), b)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
