package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
)

func scopeOf(v any) func(context.Context, api.NamespaceContext) (any, error) {
	return func(context.Context, api.NamespaceContext) (any, error) { return v, nil }
}

func issues() api.Namespace {
	return api.Namespace{ID: "github-issues", GlobalName: "Issues", Description: "GitHub issues.",
		RequiredToolNames: []string{"github_list_issues", "github_update_issue"},
		CreateScope: scopeOf(map[string]any{
			"list": api.NamespaceTool("github_list_issues", nil),
		})}
}

func TestRegisterErrors(t *testing.T) { // N1, N4: specific registration errors
	base := issues()
	with := func(f func(*api.Namespace)) api.Namespace {
		ns := base
		f(&ns)
		return ns
	}
	cases := []struct {
		name   string
		plugin string
		ns     api.Namespace
		want   string
	}{
		{"reserved tools", "github", with(func(n *api.Namespace) { n.GlobalName = "tools" }), `globalName "tools" is reserved`},
		{"reserved MCP", "github", with(func(n *api.Namespace) { n.GlobalName = "MCP" }), `globalName "MCP" is reserved`},
		{"reserved ALL_TOOLS", "github", with(func(n *api.Namespace) { n.GlobalName = "ALL_TOOLS" }), `is reserved`},
		{"reserved JSON", "github", with(func(n *api.Namespace) { n.GlobalName = "JSON" }), `is reserved`},
		{"internal prefix", "github", with(func(n *api.Namespace) { n.GlobalName = "__codemodeX" }), "reserved prefix"},
		{"not an identifier", "github", with(func(n *api.Namespace) { n.GlobalName = "my-issues" }), "not a JavaScript identifier"},
		{"keyword", "github", with(func(n *api.Namespace) { n.GlobalName = "class" }), "not a JavaScript identifier"},
		{"empty global", "github", with(func(n *api.Namespace) { n.GlobalName = "" }), "globalName is empty"},
		{"no plugin", "", base, "plugin id is empty"},
		{"no id", "github", with(func(n *api.Namespace) { n.ID = "" }), "id is empty"},
		{"no tools", "github", with(func(n *api.Namespace) { n.RequiredToolNames = nil }), "requiredToolNames is empty"},
		{"no scope", "github", with(func(n *api.Namespace) { n.CreateScope = nil }), "createScope is missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := NewRegistry().Register(c.plugin, c.ns, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
	r := NewRegistry()
	if err := r.Register("github", base, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("other", base, nil); err == nil || !strings.Contains(err.Error(), "already registered (by plugin github)") {
		t.Fatalf("duplicate id: %v", err)
	}
	if err := r.Register("other", with(func(n *api.Namespace) { n.ID = "x" }), nil); err == nil || !strings.Contains(err.Error(), `globalName "Issues" is already taken`) {
		t.Fatalf("duplicate global: %v", err)
	}
}

func TestVisibilityAndClearing(t *testing.T) { // N2, N6
	r := NewRegistry()
	if err := r.Register("github", issues(), nil); err != nil {
		t.Fatal(err)
	}
	catalog := func(ids ...string) func(string) bool {
		return func(id string) bool {
			for _, x := range ids {
				if x == id {
					return true
				}
			}
			return false
		}
	}
	both := catalog("native:github:github_list_issues", "native:github:github_update_issue")
	if v := r.Visible(both); len(v) != 1 || v[0].NS.GlobalName != "Issues" {
		t.Fatalf("visible: %v", v)
	}
	// One backing tool missing: hidden.
	if v := r.Visible(catalog("native:github:github_list_issues")); len(v) != 0 {
		t.Fatalf("visible without all its tools: %v", v)
	}
	// Same-named tools owned by another plugin (or an MCP server) do not expose it.
	if v := r.Visible(catalog("native:evil:github_list_issues", "native:evil:github_update_issue", "mcp:github:github_list_issues")); len(v) != 0 {
		t.Fatalf("visible through another owner's tools: %v", v)
	}
	v0 := r.Version()
	if n := r.ClearPlugin("github"); n != 1 || r.Version() == v0 || len(r.Visible(both)) != 0 {
		t.Fatalf("cleared %d", n)
	}
	_ = r.Register("github", issues(), nil)
	r.ClearAll()
	if len(r.Visible(both)) != 0 {
		t.Fatal("ClearAll left a namespace")
	}
}

type stamp struct {
	When time.Time `json:"when"`
	N    int       `json:"n"`
}

type withFunc struct{ F func() }

func TestSerialize(t *testing.T) { // N3, N4
	e := &Entry{PluginID: "github", NS: issues()}
	shared := map[string]any{"owner": "acme", "repo": "app"}
	cyclic := map[string]any{"a": 1}
	cyclic["self"] = cyclic
	var selfList []any
	selfList = append(selfList, nil)
	selfList[0] = selfList
	cases := []struct {
		name     string
		scope    any
		wantData string // exact JSON when set
		calls    []string
		wantErr  string
	}{
		{"callables and data", map[string]any{
			"repository": shared, "again": shared, // shared reference, no cycle
			"list":   api.NamespaceTool("github_list_issues", nil),
			"nested": map[string]any{"update": api.NamespaceTool("github_update_issue", nil), "n": 3},
		}, `{"again":{"owner":"acme","repo":"app"},"list":null,"nested":{"n":3,"update":null},"repository":{"owner":"acme","repo":"app"}}`,
			[]string{"list:github_list_issues", "nested.update:github_update_issue"}, ""},
		{"non-JSON values become safe fallbacks", map[string]any{
			"nan": math.NaN(), "inf": math.Inf(1), "ch": make(chan int), "when": stamp{When: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), N: 2},
			"bytes": []byte("hi"), "ints": map[int]string{1: "a"}, "nil": nil,
		}, `{"bytes":"aGk=","ch":"[chan int]","inf":null,"ints":{"1":"a"},"nan":null,"nil":null,"when":{"n":2,"when":"2026-01-02T03:04:05Z"}}`, nil, ""},
		{"raw function", map[string]any{"list": func() {}}, "", nil, "list is a raw function"},
		{"raw function in a struct", map[string]any{"x": withFunc{F: func() {}}}, "", nil, "holds a function"},
		{"cycle", cyclic, "", nil, "is a cycle"},
		{"slice cycle", map[string]any{"l": selfList}, "", nil, "is a cycle"},
		{"__proto__", map[string]any{"__proto__": map[string]any{}}, "", nil, `unsafe key "__proto__"`},
		{"constructor", map[string]any{"a": map[string]any{"constructor": 1}}, "", nil, `unsafe key "constructor"`},
		{"prototype", map[string]any{"prototype": 1}, "", nil, `unsafe key "prototype"`},
		{"empty key", map[string]any{"": 1}, "", nil, "empty key"},
		{"separator", map[string]any{"a.b": 1}, "", nil, "path separator"},
		{"undeclared tool", map[string]any{"drop": api.NamespaceTool("github_delete_repo", nil)}, "", nil, `targets tool "github_delete_repo", which is not one of`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Serialize(e, c.scope)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.wantData != "" && string(s.Data) != c.wantData {
				t.Fatalf("data %s\nwant %s", s.Data, c.wantData)
			}
			var calls []string
			for _, cl := range s.Calls {
				calls = append(calls, strings.Join(cl.Path, PathSep)+":"+cl.Tool)
			}
			if strings.Join(calls, ",") != strings.Join(c.calls, ",") {
				t.Fatalf("calls %v, want %v", calls, c.calls)
			}
		})
	}
}

func TestBuild(t *testing.T) { // N3: createScope gets the run context and config; failures are contained
	var got api.NamespaceContext
	ns := issues()
	ns.CreateScope = func(ctx context.Context, sc api.NamespaceContext) (any, error) {
		got = sc
		return map[string]any{"list": api.NamespaceTool("github_list_issues", nil)}, nil
	}
	e := &Entry{PluginID: "github", NS: ns, Config: []byte(`{"org":"acme"}`)}
	rc := api.RunContext{AgentID: "a", SessionKey: "s", RunID: "r"}
	s, err := Build(context.Background(), e, api.NamespaceContext{Run: rc})
	if err != nil || got.Run != rc || string(got.Config) != `{"org":"acme"}` || len(s.Calls) != 1 {
		t.Fatalf("%v %+v", err, got)
	}
	g, _ := json.Marshal(s.GuestJSON())
	if string(g) != `{"id":"github-issues","global":"Issues","data":{"list":null},"calls":[["list"]]}` {
		t.Fatalf("%s", g)
	}
	ns.CreateScope = func(context.Context, api.NamespaceContext) (any, error) { panic("boom") }
	if _, err := Build(context.Background(), &Entry{PluginID: "github", NS: ns}, api.NamespaceContext{}); err == nil || !strings.Contains(err.Error(), "panicked: boom") {
		t.Fatalf("%v", err)
	}
	ns.CreateScope = func(context.Context, api.NamespaceContext) (any, error) { return nil, errors.New("no token") }
	if _, err := Build(context.Background(), &Entry{PluginID: "github", NS: ns}, api.NamespaceContext{}); err == nil || !strings.Contains(err.Error(), "no token") {
		t.Fatalf("%v", err)
	}
}
