package rawjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// Keys and values come back as written; Object of Members is the object without the whitespace
// between members (issue 21: results relayed byte for byte).
func TestMembers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		keys []string
		out  string // "" when not an object
	}{
		{`{"a":1}`, []string{"a"}, `{"a":1}`},
		{` { "a" : [1, 2] , "b\u0041" :"x<&>" }  `, []string{"a", "bA"}, `{"a":[1, 2],"b\u0041":"x<&>"}`},
		{`{"n":1.50e+3,"n":null}`, []string{"n", "n"}, `{"n":1.50e+3,"n":null}`},
		{`{}`, nil, `{}`},
		{`[1]`, nil, ""},
		{`{"a":1}x`, nil, ""},
		{`{"a":1`, nil, ""},
		{`{"a" 1}`, nil, ""},
		{``, nil, ""},
	} {
		ms, ok := Members([]byte(tc.in))
		if !ok {
			if tc.out != "" {
				t.Errorf("Members(%s) failed", tc.in)
			}
			continue
		}
		if tc.out == "" {
			t.Errorf("Members(%s) accepted", tc.in)
			continue
		}
		var keys []string
		for _, m := range ms {
			keys = append(keys, m.Key)
		}
		if !reflect.DeepEqual(keys, tc.keys) || string(Object(ms)) != tc.out {
			t.Errorf("Members(%s): keys %q, object %s", tc.in, keys, Object(ms))
		}
	}
	if m := NewMember("a<b", json.RawMessage(`1`)); string(Object([]Member{m})) != `{"a<b":1}` {
		t.Errorf("NewMember: %s", Object([]Member{m}))
	}
}

// FuzzMembers: whatever Members accepts, Object writes back as the same JSON value, and a second
// pass is the identity.
func FuzzMembers(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":{"c":[true,null]}}`))
	f.Add([]byte(` {"\u00e9" : "\ud83d\ude00", "n": -0.0e-0}`))
	f.Add([]byte(`{"a":`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ms, ok := Members(raw)
		if !ok {
			return
		}
		out := Object(ms)
		var a, b any
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatalf("accepted invalid JSON %q: %v", raw, err)
		}
		if err := json.Unmarshal(out, &b); err != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("Object(Members(%q)) = %q (%v)", raw, out, err)
		}
		again, ok := Members(out)
		if !ok || !bytes.Equal(Object(again), out) {
			t.Fatalf("second pass over %q changed it", out)
		}
	})
}
