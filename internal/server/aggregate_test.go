package server

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// issue 21 item 3: an upstream's item keeps its bytes except the one member the gateway renames.
func TestSetMember(t *testing.T) {
	for _, tc := range []struct{ in, key, val, want string }{
		{`{"name":"a","title":"T","arguments":[{"name":"x"}]}`, "name", "s/a", `{"name":"s/a","title":"T","arguments":[{"name":"x"}]}`},
		{`{"title":"T","uri":"test://x","_meta":{"k":1.50}}`, "uri", "codemode://s/test://x", `{"title":"T","uri":"codemode://s/test://x","_meta":{"k":1.50}}`},
		{`{"name":"same"}`, "name", "same", `{"name":"same"}`},
		{`{"other":1}`, "name", "x", `{"other":1}`}, // no such member: unchanged
		{`[1,2]`, "name", "x", `[1,2]`},
		{`{"name":"a","name":"b"}`, "name", "c", `{"name":"c","name":"b"}`},
		{`{"name":"a\u00e9"}`, "name", "s/aé", `{"name":"s/aé"}`},
	} {
		if got := string(setMember(json.RawMessage(tc.in), tc.key, tc.val)); got != tc.want {
			t.Errorf("setMember(%s, %s, %s) = %s, want %s", tc.in, tc.key, tc.val, got, tc.want)
		}
	}
}

func FuzzSetMember(f *testing.F) {
	f.Add([]byte(`{"name":"a","title":"T"}`), "name", "s/a")
	f.Add([]byte(`{"uri":"x","n":[1,{"a":null}]}`), "uri", "codemode://s/x")
	f.Add([]byte(`{"name":`), "name", "x")
	f.Fuzz(func(t *testing.T, raw []byte, key, val string) {
		out := setMember(raw, key, val)
		if string(out) == string(raw) || !utf8.ValidString(val) {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("setMember(%q) produced invalid JSON %q: %v", raw, out, err)
		}
		var got string
		if json.Unmarshal(m[key], &got) != nil || got != val {
			t.Fatalf("setMember(%q, %q, %q) = %q", raw, key, val, out)
		}
	})
}

// Routing of names and URIs (issue 21 item 3): listed names first, then the prefixed forms,
// then templates; ambiguity is an error that names the choices.
func TestAggregatorRoutes(t *testing.T) {
	tmpl := func(server, s string) templateRoute {
		re, err := uritemplate.New(s)
		if err != nil {
			t.Fatal(err)
		}
		return templateRoute{server: server, tmpl: s, re: re}
	}
	a := &aggregator{
		visible: map[string]bool{"a": true, "b": true},
		prompts: map[string]promptRoute{
			"solo":     {server: "a", name: "solo"},
			"a/shared": {server: "a", name: "shared"},
			"b/shared": {server: "b", name: "shared"},
		},
		resources: map[string]resourceRoute{
			"file:///only-a":                  {server: "a", uri: "file:///only-a"},
			"codemode://a/test://dup":         {server: "a", uri: "test://dup"},
			"codemode://b/test://dup":         {server: "b", uri: "test://dup"},
			"codemode://b/codemode://a/weird": {server: "b", uri: "codemode://a/weird"},
		},
		ambiguous: map[string][]string{"test://dup": {"codemode://a/test://dup", "codemode://b/test://dup"}},
		templates: []templateRoute{tmpl("a", "mem://a/{id}"), tmpl("a", "both://{x}"), tmpl("b", "both://{x}")},
		resOwners: []string{"a", "b"},
	}
	for _, tc := range []struct {
		name, server, up string
		ok               bool
	}{
		{"solo", "a", "solo", true},
		{"a/solo", "a", "solo", true}, // the prefixed form is always accepted
		{"b/shared", "b", "shared", true},
		{"shared", "", "", false}, // ambiguous: only the prefixed forms are listed
		{"c/solo", "", "", false}, // not a visible server
		{"b/solo", "", "", false}, // b has no such prompt
		{"a/", "", "", false},
	} {
		srv, up, ok := a.routePrompt(tc.name)
		if srv != tc.server || up != tc.up || ok != tc.ok {
			t.Errorf("routePrompt(%q) = %q %q %v", tc.name, srv, up, ok)
		}
	}
	var nf *jsonrpc.Error
	errors.As(mcp.ResourceNotFoundError("x"), &nf) // the SDK's code for it (-32002 or, by its compatibility switch, -32602)
	notFound := nf.Code
	for _, tc := range []struct {
		uri, server, up string
		code            int64
	}{
		{"file:///only-a", "a", "file:///only-a", 0},
		{"codemode://b/test://dup", "b", "test://dup", 0},
		{"codemode://b/codemode://a/weird", "b", "codemode://a/weird", 0},
		{"codemode://c/x://y", "", "", notFound}, // c is not visible: nothing routes there
		{"test://dup", "", "", jsonrpc.CodeInvalidParams},
		{"mem://a/42", "a", "mem://a/42", 0},
		{"both://q", "", "", jsonrpc.CodeInvalidParams}, // two servers' templates match
		{"unlisted://z", "", "", notFound},              // two servers offer resources
	} {
		srv, up, err := a.routeResource(tc.uri)
		var je *jsonrpc.Error
		code := int64(0)
		if errors.As(err, &je) {
			code = je.Code
		}
		if srv != tc.server || up != tc.up || code != tc.code {
			t.Errorf("routeResource(%q) = %q %q %v (code %d)", tc.uri, srv, up, err, code)
		}
	}
	a.resOwners = []string{"a"}
	if srv, up, err := a.routeResource("unlisted://z"); srv != "a" || up != "unlisted://z" || err != nil {
		t.Errorf("the one resource server should get unlisted URIs: %q %q %v", srv, up, err)
	}
}
