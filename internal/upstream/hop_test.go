package upstream

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestWithoutHopMembers: a 2026-07-28 result loses its resultType and reserved _meta keys, and
// nothing else; other results come back as the same bytes (issue 21).
func TestWithoutHopMembers(t *testing.T) {
	info := `"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}`
	for _, tc := range []struct{ in, want string }{
		{`{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{` + info + `}}`, `{"content":[{"type":"text","text":"hi"}]}`},
		{`{"_meta":{"app/x":1.50,` + info + `},"content":[],"resultType":"complete"}`, `{"_meta":{"app/x":1.50},"content":[]}`},
		{`{"content":[{"type":"text","text":"\"resultType\" io.modelcontextprotocol/"}]}`, ""},
		{`{"content":[{"type":"text","_meta":{` + info + `},"text":"x"}]}`, ""}, // a content block's own _meta
		{`{"content":[], "isError" : true}`, ""},
		{`[1,"resultType"]`, ""},
		{`{"resultType":`, ""},
	} {
		want := tc.want
		if want == "" {
			want = tc.in
		}
		if got := string(withoutHopMembers(json.RawMessage(tc.in))); got != want {
			t.Errorf("withoutHopMembers(%s)\n got %s\nwant %s", tc.in, got, want)
		}
	}
}

// FuzzWithoutHopMembers: the result is the input's JSON less the hop members, and stripping again
// changes nothing.
func FuzzWithoutHopMembers(f *testing.F) {
	f.Add([]byte(`{"content":[],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{},"k":[1]}}`))
	f.Add([]byte(`{"resultType":1,"resultType":2}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		out := withoutHopMembers(raw)
		if string(out) == string(raw) {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("withoutHopMembers(%q) = invalid %q", raw, out)
		}
		var meta map[string]json.RawMessage
		_ = json.Unmarshal(m["_meta"], &meta)
		for k := range meta {
			if strings.HasPrefix(k, reservedMeta) {
				t.Fatalf("withoutHopMembers(%q) kept %s", raw, k)
			}
		}
		if _, ok := m["resultType"]; ok {
			t.Fatalf("withoutHopMembers(%q) kept resultType", raw)
		}
		if again := withoutHopMembers(out); string(again) != string(out) {
			t.Fatalf("not idempotent: %q → %q", out, again)
		}
	})
}
