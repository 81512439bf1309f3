package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/testtools/trajtest"
)

// issuesPlugin is a plugin with a namespace like the seed's example: Issues.list(params),
// Issues.update(number, patch), nested Issues.admin.close(number), plain data and a shared
// reference.
func issuesPlugin(calls *atomic.Int64, slow chan struct{}) api.Plugin {
	tool := func(name string, out string) *api.Tool {
		return &api.Tool{Name: name, Description: "GitHub " + name + ".", ReadOnly: name == "github_list_issues",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"state":{"type":"string"},"number":{"type":"integer"},"patch":{"type":"object"}},"additionalProperties":false}`),
			OutputSchema: json.RawMessage(out),
			Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
				calls.Add(1)
				var in map[string]any
				_ = json.Unmarshal(c.Input, &in)
				if in["state"] == "broken" {
					return nil, &api.ToolError{Name: "Error", Code: "bad_state", Message: "no such state"}
				}
				if in["state"] == "slow" && slow != nil {
					select {
					case <-slow:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				return api.TextResult(name, map[string]any{"tool": name, "input": in})
			}}
	}
	repo := map[string]any{"owner": "acme", "repo": "app"}
	out := `{"type":"object","properties":{"tool":{"type":"string"},"input":{"type":"object"}},"required":["tool","input"]}`
	return api.Plugin{
		ID:    "github",
		Tools: []*api.Tool{tool("github_list_issues", out), tool("github_update_issue", out)},
		Namespaces: []api.Namespace{{
			ID: "github-issues", GlobalName: "Issues",
			Description:       "GitHub issue helpers for the current repository.",
			Prompt:            "Use Issues.list(params) and Issues.update(number, patch).",
			RequiredToolNames: []string{"github_list_issues", "github_update_issue"},
			CreateScope: func(ctx context.Context, sc api.NamespaceContext) (any, error) {
				return map[string]any{
					"repository": repo, "mirror": repo, // a shared reference, no cycle
					"run":  sc.Run.RunID,
					"list": api.NamespaceTool("github_list_issues", nil),
					"update": api.NamespaceTool("github_update_issue", func(args []json.RawMessage) (json.RawMessage, error) {
						if len(args) < 2 {
							return nil, errors.New("update(number, patch) takes two arguments")
						}
						return json.Marshal(map[string]json.RawMessage{"number": args[0], "patch": args[1]})
					}),
					"admin": map[string]any{"close": api.NamespaceTool("github_update_issue", func(args []json.RawMessage) (json.RawMessage, error) {
						return json.Marshal(map[string]any{"number": args[0], "patch": map[string]string{"state": "closed"}})
					})},
				}, nil
			},
		}},
	}
}

func TestNamespaces(t *testing.T) { // N1–N5, Q4, the seed's namespace checklist
	var calls atomic.Int64
	var rec trajtest.Recorder
	rt := newRuntime(t, testConfig(t), func(o *Options) { o.Trajectory = &rec })
	if err := rt.AddPlugin(context.Background(), issuesPlugin(&calls, nil)); err != nil {
		t.Fatal(err)
	}
	rc := api.RunContext{AgentID: "a", SessionKey: "s", RunID: "run-7"}
	s := rt.Activate(rc, fixtureTools())
	// Q4: the description and prompt are in the exec description when visible.
	desc := s.Tools()[0].Description
	if !strings.Contains(desc, "Issues: GitHub issue helpers for the current repository. Use Issues.list(params) and Issues.update(number, patch).") {
		t.Fatalf("namespace prompt missing:\n%s", desc)
	}
	got := mustComplete(t, execCode(t, s, `
		const open = await Issues.list({state: "open"});
		const alsoOpen = await namespaces.Issues.list({state: "open"});
		const upd = await Issues.update(7, {title: "x"});
		const closed = await Issues.admin.close(9);
		let caught;
		try { await Issues.list({state: "broken"}) } catch (e) { caught = e.code + ": " + e.message }
		let mapperFailed;
		try { await Issues.update(1) } catch (e) { mapperFailed = e.code }
		const frozen = Object.isFrozen(Issues) && Object.isFrozen(Issues.repository);
		return {open, same: JSON.stringify(open) === JSON.stringify(alsoOpen), upd: upd.input, closed: closed.input,
			caught, mapperFailed, frozen, repo: Issues.repository, mirror: Issues.mirror, run: Issues.run}`))
	var v struct {
		Open         map[string]any
		Same         bool
		Upd, Closed  map[string]any
		Caught       string
		MapperFailed string
		Frozen       bool
		Repo, Mirror map[string]string
		Run          string
	}
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Fatal(err)
	}
	if v.Open["tool"] != "github_list_issues" || !v.Same || v.Upd["number"] != float64(7) || v.Closed["number"] != float64(9) ||
		!strings.HasPrefix(v.Caught, "bad_state: native:github:github_list_issues") || v.MapperFailed != "invalid_input" || !v.Frozen ||
		v.Repo["repo"] != "app" || v.Mirror["owner"] != "acme" || v.Run != "run-7" {
		t.Fatalf("%s", got)
	}
	// Calls run through catalog tools: the trajectory shows them as nested calls by catalog id.
	nested := 0
	for _, ev := range rec.Events("") {
		if ev.Kind == api.EventNested && strings.HasPrefix(ev.Tool, "native:github:") {
			nested++
		}
	}
	if nested != 6 { // list ×3, update, close, and the refused update whose mapper failed (recorded, never run)
		t.Fatalf("%d nested namespace calls in the trajectory", nested)
	}
	// API files: one declaration per visible namespace, typed from the backing tools.
	files := mustComplete(t, execCode(t, s, `return [(await API.list("namespaces")).map(f => f.path), await API.read("namespaces/Issues.d.ts")]`))
	if !strings.Contains(files, `["namespaces/Issues.d.ts"]`) || !strings.Contains(files, "function list(input?: { state?: string") ||
		!strings.Contains(files, "(calls native:github:github_list_issues)") || !strings.Contains(files, "namespace admin") {
		t.Fatalf("%s", files)
	}
}

func TestNamespaceVisibility(t *testing.T) { // N2, Q4: only with every backing tool, owned by the plugin
	var calls atomic.Int64
	deny := testConfig(t, func(c *config.Config) { c.Tools.Deny = []string{"github_update_issue"} })
	rt := newRuntime(t, deny)
	if err := rt.AddPlugin(context.Background(), issuesPlugin(&calls, nil)); err != nil {
		t.Fatal(err)
	}
	s := rt.Activate(api.RunContext{}, nil)
	if strings.Contains(s.Tools()[0].Description, "Issues") {
		t.Fatal("a namespace whose tool is denied is described")
	}
	if got := mustComplete(t, execCode(t, s, `return [typeof Issues, Object.keys(namespaces)]`)); got != `["undefined",[]]` {
		t.Fatalf("%s", got)
	}
	// Same-named tools of another owner do not expose it.
	rt2 := newRuntime(t, testConfig(t))
	if err := rt2.RegisterNamespace("github", issuesPlugin(&calls, nil).Namespaces[0]); err != nil {
		t.Fatal(err)
	}
	impostor := []*api.Tool{{Name: "github_list_issues", Owner: "evil"}, {Name: "github_update_issue", Owner: "evil"}}
	if got := mustComplete(t, execCode(t, rt2.Activate(api.RunContext{}, impostor), `return typeof Issues`)); got != `"undefined"` {
		t.Fatalf("visible through another plugin's tools: %s", got)
	}
}

func TestNamespaceScopeErrors(t *testing.T) { // N4: raw functions, undeclared tools, reserved names
	rt := newRuntime(t, testConfig(t))
	var calls atomic.Int64
	p := issuesPlugin(&calls, nil)
	p.Namespaces[0].CreateScope = func(context.Context, api.NamespaceContext) (any, error) {
		return map[string]any{"list": func() {}}, nil
	}
	if err := rt.AddPlugin(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	// The raw function is refused before guest code runs: this exec has no Issues.
	if got := mustComplete(t, execCode(t, rt.Activate(api.RunContext{}, nil), `return typeof Issues`)); got != `"undefined"` {
		t.Fatalf("%s", got)
	}
	bad := issuesPlugin(&calls, nil)
	bad.ID = "other"
	bad.Namespaces[0].ID, bad.Namespaces[0].GlobalName = "x", "tools"
	if err := rt.AddPlugin(context.Background(), bad); err == nil || !strings.Contains(err.Error(), `globalName "tools" is reserved`) {
		t.Fatalf("%v", err)
	}
	// Rollback: a plugin whose Start fails leaves no namespace behind (N6).
	failing := issuesPlugin(&calls, nil)
	failing.ID = "failing"
	failing.Namespaces[0].ID, failing.Namespaces[0].GlobalName = "f", "Failing"
	failing.Start = func(context.Context) error { return errors.New("no token") }
	if err := rt.AddPlugin(context.Background(), failing); err == nil {
		t.Fatal("a failing Start was accepted")
	}
	if err := rt.RegisterNamespace("again", api.Namespace{ID: "f", GlobalName: "Failing", RequiredToolNames: []string{"t"},
		CreateScope: func(context.Context, api.NamespaceContext) (any, error) { return nil, nil }}); err != nil {
		t.Fatalf("the failed plugin's namespace was left registered: %v", err)
	}
}

func TestNamespaceSuspendAndRemoval(t *testing.T) { // N5, N6, issue 12.6: wait resumes; a removed plugin fails cleanly
	var calls atomic.Int64
	slow := make(chan struct{})
	rt := newRuntime(t, testConfig(t, func(c *config.Config) { c.Tools.CodeMode.TimeoutMs = 200 }))
	if err := rt.AddPlugin(context.Background(), issuesPlugin(&calls, slow)); err != nil {
		t.Fatal(err)
	}
	s := rt.Activate(api.RunContext{SessionKey: "s"}, nil)
	r := execCode(t, s, `const r = await Issues.list({state: "slow"}); text("resumed"); return r.input.state`)
	if r.Status != api.StatusWaiting || len(r.PendingToolCalls) != 1 || r.PendingToolCalls[0].Tool != "native:github:github_list_issues" {
		t.Fatalf("%+v", r)
	}
	close(slow)
	w := waitRaw(s, "w", mustJSON(map[string]string{"runId": r.RunID}))
	if got := mustComplete(t, w); got != `"slow"` || len(w.Output) != 1 {
		t.Fatalf("%s %+v", got, w.Output)
	}
	// A run suspended before the plugin is removed gets a catchable error for its next call.
	r = execCode(t, s, `await yield_control(); try { await Issues.list({}) } catch (e) { return e.code }`)
	if r.Status != api.StatusWaiting {
		t.Fatalf("%+v", r)
	}
	if err := rt.RemovePlugin(context.Background(), "github"); err != nil {
		t.Fatal(err)
	}
	if got := mustComplete(t, waitRaw(s, "w2", mustJSON(map[string]string{"runId": r.RunID}))); got != `"plugin_removed"` {
		t.Fatalf("%s", got)
	}
	// New runs no longer see the plugin or its namespace.
	if got := mustComplete(t, execCode(t, rt.Activate(api.RunContext{}, nil), `return [typeof Issues, ALL_TOOLS.filter(t => t.sourceName === "github").length]`)); got != `["undefined",0]` {
		t.Fatalf("%s", got)
	}
	if rt.ClearNamespaces("github") != 0 || len(rt.Plugins()) != 0 {
		t.Fatal("state left after RemovePlugin")
	}
}

func TestNamespaceCallsNeedApproval(t *testing.T) { // N5: the same gate as tools.call
	var calls atomic.Int64
	rt := newRuntime(t, testConfig(t), func(o *Options) {
		o.Approvals = api.Approvals{Rules: []api.ApprovalRule{{Match: "native:github:github_update_issue"}}}
	})
	if err := rt.AddPlugin(context.Background(), issuesPlugin(&calls, nil)); err != nil {
		t.Fatal(err)
	}
	s := rt.Activate(api.RunContext{SessionKey: "s"}, nil)
	r := execCode(t, s, `return (await Issues.update(3, {})).input.number`)
	if r.Reason != api.ReasonApproval || r.PendingApprovals[0].Tool != "native:github:github_update_issue" || calls.Load() != 0 {
		t.Fatalf("%+v", r)
	}
	if err := s.Decide(context.Background(), r.RunID, r.PendingApprovals[0].CallID, api.Decision{Approve: true}); err != nil {
		t.Fatal(err)
	}
	if got := mustComplete(t, waitRaw(s, "w", mustJSON(map[string]string{"runId": r.RunID}))); got != "3" || calls.Load() != 1 {
		t.Fatalf("%s, %d calls", got, calls.Load())
	}
}
