package codemode

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
)

func TestTelemetryIsPerRun(t *testing.T) { // Y1: counters cover the run across its execs and waits
	rt := newRuntime(t, testConfig(t))
	rc := api.RunContext{AgentID: "a", SessionKey: "s", RunID: "r1"}
	s := rt.Activate(rc, fixtureTools())
	cell := `await tools.search("file"); await tools.describe("native:core:read"); await tools.read({path: "x"}); return 1`
	for i, want := range []int{1, 2, 3} {
		r := execCode(t, s, cell)
		tel := r.Telemetry
		if tel.SearchCount != want || tel.DescribeCount != want || tel.CallCount != want {
			t.Fatalf("exec %d: %+v, want %d of each", i+1, tel, want)
		}
	}
	// ForRun with the same run context continues the same counters (a gateway's per-request surface).
	if tel := execCode(t, s.ForRun(rc), cell).Telemetry; tel.CallCount != 4 {
		t.Fatalf("ForRun(same run): %+v", tel)
	}
	// Another run starts from zero.
	if tel := execCode(t, s.ForRun(api.RunContext{AgentID: "a", SessionKey: "s", RunID: "r2"}), cell).Telemetry; tel.CallCount != 1 {
		t.Fatalf("another run: %+v", tel)
	}
	// Ending the session forgets its counters.
	rt.EndSession("s")
	if tel := execCode(t, s, cell).Telemetry; tel.CallCount != 1 {
		t.Fatalf("after EndSession: %+v", tel)
	}
}

func TestExecHookRewrite(t *testing.T) { // X1, X5: the hook sees code and command as sent; its rewrite runs
	var seen []string
	rt := newRuntime(t, testConfig(t), func(o *Options) {
		o.Hooks = []api.BeforeToolCallHook{func(ctx context.Context, ev *api.ToolCallEvent) (api.HookDecision, error) {
			if ev.ToolKind != api.ToolKindCodeModeExec {
				return api.HookDecision{}, nil
			}
			seen = append(seen, string(ev.Input))
			return api.HookDecision{Input: json.RawMessage(`{"code":"return 'rewritten'","language":"javascript"}`)}, nil
		}}
	})
	s := rt.Activate(api.RunContext{}, fixtureTools())
	r := s.Handle(context.Background(), "c1", "exec", json.RawMessage(`{"command":"return 'original'","code":"return 'original'"}`))
	if got := mustComplete(t, *r.Exec); got != `"rewritten"` {
		t.Fatalf("ran %s, want the hook's rewrite", got)
	}
	if len(seen) != 1 || seen[0] != `{"command":"return 'original'","code":"return 'original'"}` {
		t.Fatalf("hook saw %q, want the input as the model sent it", seen)
	}
	// A rewrite that is not a valid exec input fails the exec with a message naming the hook.
	rt2 := newRuntime(t, testConfig(t), func(o *Options) {
		o.Hooks = []api.BeforeToolCallHook{func(ctx context.Context, ev *api.ToolCallEvent) (api.HookDecision, error) {
			return api.HookDecision{Input: json.RawMessage(`{"cod":"x"}`)}, nil
		}}
	})
	r2 := execCode(t, rt2.Activate(api.RunContext{}, nil), "return 1")
	if r2.Status != api.StatusFailed || r2.Code != api.CodeInvalidInput || !strings.Contains(r2.Error, "rewritten by a before_tool_call hook") {
		t.Fatalf("%+v", r2)
	}
}

func TestBlockedExecKeepsItsCode(t *testing.T) { // Z: a blocked exec or wait says "blocked"
	rt := newRuntime(t, testConfig(t), func(o *Options) {
		o.Hooks = []api.BeforeToolCallHook{func(ctx context.Context, ev *api.ToolCallEvent) (api.HookDecision, error) {
			return api.HookDecision{Block: ev.ToolID == "exec" || ev.ToolID == "wait", Reason: "maintenance"}, nil
		}}
	})
	s := rt.Activate(api.RunContext{}, nil)
	for _, tool := range []string{"exec", "wait"} {
		args := `{"code":"return 1"}`
		if tool == "wait" {
			args = `{"runId":"run_x"}`
		}
		r := s.Handle(context.Background(), "c", tool, json.RawMessage(args)).Exec
		if r.Status != api.StatusFailed || r.Code != "blocked" || !strings.Contains(r.Error, "maintenance") {
			t.Fatalf("%s: %+v", tool, r)
		}
	}
}

func TestDirectOnlyEntries(t *testing.T) { // issue 14: names and catalog ids; unmatched entries are reported
	rt := newRuntime(t, testConfig(t, func(c *config.Config) {
		c.Tools.DirectOnly = []string{"echo", "native:shipping:shipping_list", "mcp:github:create_issue", "no_such_tool", "mcp:github:nope"}
	}))
	s := rt.Activate(api.RunContext{}, fixtureTools())
	names := s.ToolNames()
	for _, want := range []string{"exec", "wait", "image", "echo", "shipping_list", "create_issue"} {
		if !slices.Contains(names, want) {
			t.Fatalf("%s is not model-visible: %v", want, names)
		}
	}
	if slices.Contains(s.Catalog().IDs, "mcp:github:create_issue") || slices.Contains(s.Catalog().IDs, "native:core:echo") {
		t.Fatalf("direct-only tools are catalogued: %v", s.Catalog().IDs)
	}
	w := strings.Join(s.Warnings(), "\n")
	for _, want := range []string{`"no_such_tool" matches no tool`, `"mcp:github:nope" matches no tool`} {
		if !strings.Contains(w, want) {
			t.Fatalf("warnings %q lack %q", w, want)
		}
	}
	// A direct-only MCP tool is callable by the model through Handle.
	h := s.Handle(context.Background(), "d1", "create_issue", json.RawMessage(`{"title":"x"}`))
	if h.Err != nil || h.Tool == nil || h.IsError() {
		t.Fatalf("%+v", h)
	}
}

func TestDuplicateToolIDsWarn(t *testing.T) { // issue 13: duplicates are not dropped silently
	tools := append(fixtureTools(), &api.Tool{Name: "echo", Owner: api.CoreOwner, Description: "a second echo"})
	s := newRuntime(t, testConfig(t)).Activate(api.RunContext{}, tools)
	if w := strings.Join(s.Warnings(), "\n"); !strings.Contains(w, "duplicate tool id native:core:echo") {
		t.Fatalf("warnings: %q", w)
	}
}

func TestSurfaceIsImmutable(t *testing.T) { // A10, issue 13: callers get copies; the payload check keeps its own state
	s := newRuntime(t, testConfig(t)).Activate(api.RunContext{}, fixtureTools())
	tools := s.Tools()
	tools[0].Name = "read"
	tools[0].InputSchema[0] = 'X'
	if s.Tools()[0].Name != "exec" || s.Tools()[0].InputSchema[0] != '{' {
		t.Fatal("Tools() exposed the surface's own state")
	}
	if err := s.CheckPayload([]string{"exec", "wait", "read"}); err == nil {
		t.Fatal("a catalogued tool passed the payload check")
	}
}

func TestOptionsValidation(t *testing.T) { // C2: library options get the file's rules
	cm := config.DefaultCodeMode()
	cm.Enabled = true
	cm.TimeoutMs = 5
	cm.Languages = []string{"python"}
	_, err := New(context.Background(), Options{CodeMode: &cm})
	if err == nil || !strings.Contains(err.Error(), "tools.codeMode.timeoutMs: 5 is out of range (100–60000)") ||
		!strings.Contains(err.Error(), `"python" is not a language`) {
		t.Fatalf("%v", err)
	}
	rt, err := New(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if got := rt.CodeMode(); !got.Enabled || got.TimeoutMs != 10000 {
		t.Fatalf("zero Options: %+v", got)
	}
}
