package codemode

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/testtools/trajtest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testConfig is the default configuration with code mode on and short limits.
func testConfig(t testing.TB, mutate ...func(*config.Config)) *config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Tools.CodeMode.Enabled = true
	cfg.Tools.CodeMode.TimeoutMs = 3000
	for _, m := range mutate {
		m(cfg)
	}
	return cfg
}

func newRuntime(t testing.TB, cfg *config.Config, opts ...func(*Options)) *Runtime {
	t.Helper()
	o := ConfigOptions(cfg)
	if coldMode {
		o.HotRuns = -1
	}
	if durableMode {
		o.RunStore = NewMemoryRunStore(o.Suspended)
	}
	for _, f := range opts {
		f(&o)
	}
	rt, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rt.Err() != nil {
		t.Fatalf("runtime unavailable (run `make wasm`): %v", rt.Err())
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }

// fixtureTools is a catalog with every kind of tool. Its unowned natives stand for the
// gateway's built-in tools (native:app:*).
func fixtureTools() []*api.Tool {
	echo := func(ctx context.Context, c *api.Call) (*api.Result, error) {
		return &api.Result{Content: []api.ContentBlock{{Type: "text", Text: string(c.Input)}}, Details: c.Input}, nil
	}
	return []*api.Tool{
		{Name: "read", Owner: api.CoreOwner, Description: "Read a file.", ReadOnly: true,
			InputSchema:  schema(`{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`),
			OutputSchema: schema(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`),
			Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
				var in struct{ Path string }
				_ = json.Unmarshal(c.Input, &in)
				return api.TextResult("contents of "+in.Path, map[string]any{"path": in.Path, "content": "hello from " + in.Path})
			}},
		{Name: "exec", Owner: api.CoreOwner, Description: "Run a shell command.",
			InputSchema: schema(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`),
			Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
				return api.TextResult("ran", map[string]any{"exitCode": 0, "input": c.Input})
			}},
		{Name: "wait", Owner: api.CoreOwner, Description: "A tool that collides with code mode's wait.", Execute: echo},
		{Name: "tool_search", Owner: api.CoreOwner, Description: "Tool search control tool.", Execute: echo},
		{Name: "image", Owner: api.CoreOwner, Description: "Look at an image.", DirectOnly: true, Execute: echo},
		{Name: "echo", Owner: api.CoreOwner, Description: "Echo the input back.", Execute: echo},
		{Name: "secret_admin", Owner: api.CoreOwner, Description: "Denied by policy.", Execute: echo},
		{Name: "shipping_list", Owner: "shipping", Description: "List shipments.", ReadOnly: true,
			InputSchema:  schema(`{"type":"object","properties":{}}`),
			OutputSchema: schema(`{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"paid":{"type":"boolean"},"tons":{"type":"number"}},"required":["id","paid","tons"],"additionalProperties":false}}`),
			Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
				return api.TextResult("3 shipments", []map[string]any{
					{"id": "a", "paid": false, "tons": 12}, {"id": "b", "paid": true, "tons": 40}, {"id": "c", "paid": false, "tons": 3}})
			}},
		{Name: "liar", Owner: "shipping", Description: "Declares one shape, returns another.",
			OutputSchema: schema(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`),
			Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
				return api.TextResult("", map[string]any{"secret": "sk-DO-NOT-PRINT"})
			}},
		{Name: "broken_contract", Owner: "shipping", Description: "Invalid output schema.",
			OutputSchema: schema(`{"type":"object","properties":{"x":{"type":42}}}`), Execute: echo},
		{Name: "create_issue", Source: api.SourceMCP, Owner: "github", Description: "Create a GitHub issue.",
			InputSchema: schema(`{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string"}},"required":["title"]}`),
			Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
				res := map[string]any{"content": []map[string]any{{"type": "text", "text": "created"}}, "structuredContent": map[string]any{"number": 7, "input": c.Input}}
				b, _ := json.Marshal(res)
				return &api.Result{Content: []api.ContentBlock{{Type: "text", Text: "created"}}, Details: b}, nil
			}},
		{Name: "select_file", Source: api.SourceClient, Owner: "app", Description: "Ask the user to pick a file.", Execute: echo},
	}
}

func denyConfig(t testing.TB) *config.Config {
	return testConfig(t, func(c *config.Config) { c.Tools.Deny = []string{"secret_admin"} })
}

func execCode(t testing.TB, s *Surface, code string) api.ExecResult {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"code": code})
	return execRaw(s, "call_1", in)
}

// execRaw runs exec with the JSON arguments a model would send.
func execRaw(s *Surface, callID string, args json.RawMessage) api.ExecResult {
	return *s.Handle(context.Background(), callID, "exec", args).Exec
}

// waitRaw runs wait with the JSON arguments a model would send.
func waitRaw(s *Surface, callID string, args json.RawMessage) api.ExecResult {
	return *s.Handle(context.Background(), callID, "wait", args).Exec
}

func withEngine(o Options, e Engine) Options {
	o.Engine = e
	return o
}

func mustComplete(t testing.TB, r api.ExecResult) string {
	t.Helper()
	if r.Status != api.StatusCompleted {
		t.Fatalf("status %s: %s (%s)", r.Status, r.Error, r.Code)
	}
	return string(r.Value)
}

func TestDisabledLeavesToolsUnchanged(t *testing.T) { // A4, C1, §19
	for _, cm := range []string{`{}`, `{tools: {codeMode: false}}`, `{tools: {codeMode: {timeoutMs: 5000}}}`, `{tools: {codeMode: {enabled: false}}}`} {
		cfg, err := config.Parse([]byte(cm), "t.json5")
		if err != nil {
			t.Fatal(err)
		}
		rt, err := New(context.Background(), ConfigOptions(cfg))
		if err != nil {
			t.Fatal(err)
		}
		tools := fixtureTools()
		s := rt.Activate(api.RunContext{}, tools)
		if s.Active() {
			t.Fatalf("%s: code mode active", cm)
		}
		var names []string
		for _, mt := range s.Tools() {
			names = append(names, mt.Name)
		}
		var want []string
		for _, tl := range tools {
			want = append(want, tl.Name)
		}
		if !slices.Equal(names, want) {
			t.Fatalf("%s: tools %v, want %v", cm, names, want)
		}
		code := "return 1"
		r := s.Exec(context.Background(), "c", ExecInput{Code: code})
		if r.Status != api.StatusFailed || r.Code != api.CodeInvalidInput {
			t.Fatalf("exec on an inactive surface: %+v", r)
		}
		// The model's "exec" is the shell tool here (A4): Handle routes it there, not to a cell.
		if h := s.Handle(context.Background(), "c", "exec", json.RawMessage(`{"command":"true"}`)); h.Exec != nil || h.Tool == nil {
			t.Fatalf("exec with code mode off: %+v", h)
		}
		rt.Close()
	}
}

func TestEnabledSurface(t *testing.T) { // A5, A6, A8, A11, §19
	rt := newRuntime(t, denyConfig(t))
	s := rt.Activate(api.RunContext{SessionKey: "s"}, fixtureTools())
	if !s.Active() {
		t.Fatal("not active")
	}
	names := s.ToolNames()
	if !slices.Equal(names, []string{"exec", "wait", "image"}) {
		t.Fatalf("model sees %v", names)
	}
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	_ = json.Unmarshal(s.Tools()[0].InputSchema, &schema)
	lang := schema.Properties["language"]
	if lang["type"] != "string" || lang["enum"] == nil || lang["oneOf"] != nil || lang["anyOf"] != nil {
		t.Fatalf("language must be a flat string enum (X2): %v", lang)
	}
}

func TestNoToolRunsStayInactive(t *testing.T) { // A7
	cases := map[string]struct {
		cfg *config.Config
		rc  api.RunContext
	}{
		"disableTools config": {testConfig(t, func(c *config.Config) { c.Tools.DisableTools = true }), api.RunContext{}},
		"empty allow list":    {testConfig(t, func(c *config.Config) { c.Tools.Allow = []string{} }), api.RunContext{}},
		"run disables tools":  {testConfig(t), api.RunContext{DisableTools: true}},
		"raw model call":      {testConfig(t), api.RunContext{Raw: true}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			rt := newRuntime(t, c.cfg)
			s := rt.Activate(c.rc, fixtureTools())
			if s.Active() || len(s.Tools()) != 0 {
				t.Fatalf("active=%v tools=%v", s.Active(), s.ToolNames())
			}
		})
	}
}

func TestAllTools(t *testing.T) { // G1, G2, K1–K4, §19
	rt := newRuntime(t, denyConfig(t))
	s := rt.Activate(api.RunContext{}, fixtureTools())
	r := execCode(t, s, `return ALL_TOOLS.map(e => [e.id, e.source, e.sourceName ?? null, e.input, e.output ?? null])`)
	var got [][]any
	_ = json.Unmarshal([]byte(mustComplete(t, r)), &got)
	var ids []string
	for _, e := range got {
		ids = append(ids, e[0].(string))
	}
	want := []string{"native:core:read", "native:core:exec", "native:core:echo", "native:shipping:shipping_list",
		"native:shipping:liar", "native:shipping:broken_contract", "client:app:select_file"}
	if !slices.Equal(ids, want) {
		t.Fatalf("ALL_TOOLS ids %v\nwant %v", ids, want)
	}
	byID := map[string][]any{}
	for _, e := range got {
		byID[e[0].(string)] = e
	}
	if e := byID["native:shipping:shipping_list"]; e[1] != "native" || e[2] != "shipping" || e[4] != "Array<{ id: string; paid: boolean; tons: number }>" {
		t.Fatalf("plugin entry %v", e)
	}
	if e := byID["client:app:select_file"]; e[1] != "client" || e[3] != "unknown" || e[4] != nil {
		t.Fatalf("client entry %v", e)
	}
	if e := byID["native:core:echo"]; e[4] != nil {
		t.Fatalf("no declared output must mean no output hint: %v", e)
	}
}

func TestCatalogHelpers(t *testing.T) { // G1, G3, K5, §19: search, describe, callValue, call
	rt := newRuntime(t, denyConfig(t))
	s := rt.Activate(api.RunContext{}, fixtureTools())
	r := execCode(t, s, `
		const [ship] = await tools.search("list shipments");
		const d = await tools.describe(ship.id);
		const shipments = await tools.callValue(ship.id, {});
		const raw = await tools.call("native:core:read", {path: "a.txt"});
		const short = await tools.read({path: "b.txt"});
		return {
			first: ship.id, described: Object.keys(d.parameters), hasOutputSchema: !!d.outputSchema,
			unpaidHeavy: shipments.filter(s => !s.paid && s.tons > 10).map(s => s.id),
			raw: raw.tool + " " + raw.result.details.content, short: short.content,
			none: (await tools.search("")).length, capped: (await tools.search("tool", {limit: 500})).length <= 50,
			server: ship.server, why: ship.why, // issue 23 item 5
			onlyCore: (await tools.search("list shipments", {server: "core"})).every(h => h.server === "core"),
		}`)
	want := `{"first":"native:shipping:shipping_list","described":["type","properties"],"hasOutputSchema":true,"unpaidHeavy":["a"],"raw":"native:core:read hello from a.txt","short":"hello from b.txt","none":0,"capped":true,"server":"shipping","why":"matched list, shipments","onlyCore":true}`
	if got := mustComplete(t, r); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if r.Telemetry.SearchCount != 4 || r.Telemetry.DescribeCount != 1 || r.Telemetry.CallCount != 3 {
		t.Fatalf("telemetry %+v", r.Telemetry)
	}
}

func TestUncallable(t *testing.T) { // K3, K4, S9, A11, §19
	rt := newRuntime(t, denyConfig(t))
	s := rt.Activate(api.RunContext{}, fixtureTools())
	cases := map[string]string{
		`tools.callValue("native:core:secret_admin", {})`: "unknown tool id",        // denied: not callable by a guessed id
		`tools.callValue("secret_admin", {})`:             "unknown tool id",        // nor by name
		`tools.callValue("exec", {code: "1"})`:            "control tool",           // code mode's own exec
		`tools.callValue("wait", {runId: "x"})`:           "control tool",           // code mode's own wait
		`tools.callValue("native:core:wait", {})`:         "unknown tool id",        // a tool named wait is never catalogued
		`tools.callValue("native:core:tool_search", {})`:  "unknown tool id",        // tool-search control tools are hidden
		`tools.callValue("native:core:image", {})`:        "unknown tool id",        // direct-only
		`tools.callValue("mcp:github:create_issue", {})`:  "MCP.github.createIssue", // K4: MCP only via the namespace
		`tools.describe("mcp:github:create_issue")`:       "MCP.github.createIssue",
	}
	for call, want := range cases {
		t.Run(call, func(t *testing.T) {
			r := execCode(t, s, `try { await `+call+`; return "called" } catch (e) { return e.code + ": " + e.message }`)
			if got := mustComplete(t, r); !strings.Contains(got, want) {
				t.Fatalf("got %s, want it to mention %q", got, want)
			}
		})
	}
	// The shell tool is hidden from the model but callable by its catalog id when allowed (A11).
	r := execCode(t, s, `return (await tools.callValue("native:core:exec", {command: "true"})).exitCode`)
	if got := mustComplete(t, r); got != "0" {
		t.Fatalf("shell exec by id: %s", got)
	}
	if names := s.ToolNames(); slices.Contains(names, "tool_search") {
		t.Fatalf("tool_search visible: %v", names)
	}
}

func TestSafeNames(t *testing.T) { // G3, S10
	echo := func(ctx context.Context, c *api.Call) (*api.Result, error) {
		return api.TextResult("", map[string]any{"ok": true})
	}
	tools := []*api.Tool{
		{Name: "a-b", Execute: echo}, {Name: "a_b", Execute: echo}, // collide: neither gets tools.a_b
		{Name: "search", Owner: "p", Execute: echo}, {Name: "callValue", Owner: "p", Execute: echo}, // never shadow helpers
		{Name: "web.fetch", Execute: echo}, {Name: "2fa", Execute: echo}, {Name: "class", Execute: echo},
		// Object members are never convenience names: String(tools) must not call a tool (issue 18 item 7).
		{Name: "toString", Execute: echo}, {Name: "valueOf", Execute: echo}, {Name: "toJSON", Execute: echo},
	}
	rt := newRuntime(t, testConfig(t))
	s := rt.Activate(api.RunContext{}, tools)
	r := execCode(t, s, `let conv; try { conv = 'x' + tools } catch (e) { conv = e.name }
		return {keys: Object.keys(tools).sort(), searchIsHelper: typeof (await tools.search("x")), ok: (await tools.web_fetch({})).ok,
			conv, json: JSON.stringify(tools)}`)
	want := `{"keys":["_2fa","web_fetch"],"searchIsHelper":"object","ok":true,"conv":"TypeError","json":"{}"}`
	if got := mustComplete(t, r); got != want {
		t.Fatalf("got %s want %s", got, want)
	}
}

func TestHooksAndApprovals(t *testing.T) { // E1, X5, §19: nested calls keep hooks and approvals
	var mu sync.Mutex
	var events []api.ToolCallEvent
	hook := func(ctx context.Context, ev *api.ToolCallEvent) (api.HookDecision, error) {
		mu.Lock()
		events = append(events, *ev)
		mu.Unlock()
		switch ev.ToolID {
		case "native:core:echo":
			return api.HookDecision{Input: json.RawMessage(`{"rewritten":true}`)}, nil
		case "native:core:read":
			var in struct{ Path string }
			_ = json.Unmarshal(ev.Input, &in)
			if strings.Contains(in.Path, "secret") {
				return api.HookDecision{Block: true, Reason: "no secrets"}, nil
			}
		}
		return api.HookDecision{}, nil
	}
	appr := api.ApproverFunc(func(ctx context.Context, req api.ApprovalRequest) (api.Decision, error) {
		return api.Decision{Reason: "shell needs a human"}, nil
	})
	var rec trajtest.Recorder
	rt := newRuntime(t, testConfig(t), func(o *Options) {
		o.Hooks = []api.BeforeToolCallHook{hook}
		o.Approvals = api.Approvals{Rules: []api.ApprovalRule{{Match: "native:core:exec"}}}
		o.Approver = appr
		o.Trajectory = &rec
	})
	rc := api.RunContext{AgentID: "agent", SessionKey: "sess", SessionID: "sid", RunID: "run1"}
	s := rt.Activate(rc, fixtureTools())
	in, _ := json.Marshal(map[string]string{"code": `
		const echoed = await tools.callValue("native:core:echo", {original: true});
		let blocked, denied;
		try { await tools.read({path: "secret.txt"}) } catch (e) { blocked = e.code + " " + e.message }
		try { await tools.callValue("native:core:exec", {command: "rm -rf /"}) } catch (e) { denied = e.code + " " + e.message }
		return {echoed, blocked, denied}`, "language": "javascript"})
	r := execRaw(s, "parent_7", in)
	want := `{"echoed":{"rewritten":true},"blocked":"blocked native:core:read was blocked: no secrets","denied":"not_approved native:core:exec was not approved: shell needs a human"}`
	if got := mustComplete(t, r); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if len(events) != 4 || events[0].ToolKind != api.ToolKindCodeModeExec || events[0].ToolInputKind != "javascript" {
		t.Fatalf("exec event %+v", events)
	}
	for _, ev := range events[1:] {
		if !ev.Nested || ev.ParentCallID != "parent_7" || ev.Run != rc || ev.ToolKind != api.ToolKindTool {
			t.Fatalf("nested event lacks run context: %+v", ev)
		}
	}
	if n := rec.Count(api.EventNested); n != 3 {
		t.Fatalf("trajectory saw %d nested calls", n)
	}
	// A hook may block the exec itself.
	rt2 := newRuntime(t, testConfig(t), func(o *Options) {
		o.Hooks = []api.BeforeToolCallHook{func(ctx context.Context, ev *api.ToolCallEvent) (api.HookDecision, error) {
			return api.HookDecision{Block: ev.ToolKind == api.ToolKindCodeModeExec, Reason: "no cells today"}, nil
		}}
	})
	r = execCode(t, rt2.Activate(rc, fixtureTools()), "return 1")
	if r.Status != api.StatusFailed || !strings.Contains(r.Error, "no cells today") {
		t.Fatalf("%+v", r)
	}
}

func TestOutputContracts(t *testing.T) { // O4
	rt := newRuntime(t, testConfig(t))
	s := rt.Activate(api.RunContext{}, fixtureTools())
	r := execCode(t, s, `
		const out = {};
		try { await tools.liar({}) } catch (e) { out.liar = e.code + ": " + e.message }
		try { await tools.broken_contract({}) } catch (e) { out.broken = e.code }
		return out`)
	got := mustComplete(t, r)
	if !strings.Contains(got, "output_contract_violation") || !strings.Contains(got, "invalid_output_schema") {
		t.Fatalf("got %s", got)
	}
	if strings.Contains(got, "sk-DO-NOT-PRINT") {
		t.Fatalf("a contract violation printed the value: %s", got)
	}
}

func TestMCPNamespace(t *testing.T) { // K4, M2, M3, §19
	rt := newRuntime(t, testConfig(t))
	s := rt.Activate(api.RunContext{}, fixtureTools())
	r := execCode(t, s, `
		const res = await MCP.github.createIssue({title: "t"});
		const files = await API.list("mcp");
		const dts = await API.read("mcp/github.d.ts");
		const hdr = await MCP.github.$api("create_issue");
		const found = await MCP.$search("open an issue");
		let bad; try { await API.read("../etc/passwd") } catch (e) { bad = e.message }
		let noArg; try { await MCP.github.createIssue("t") } catch (e) { noArg = e.name }
		return {
			number: res.structuredContent.number, files: files.map(f => f.path),
			declares: dts.includes("function createIssue(input: {"), header: hdr.declarations.includes("createIssue"),
			found: found[0].call, why: found[0].why.startsWith("matched "), inAll: ALL_TOOLS.some(e => e.source === "mcp"), inTools: "createIssue" in tools,
			bad: bad.includes("invalid API path"), noArg,
		}`)
	want := `{"number":7,"files":["mcp/index.d.ts","mcp/github.d.ts"],"declares":true,"header":true,"found":"MCP.github.createIssue","why":true,"inAll":false,"inTools":false,"bad":true,"noArg":"TypeError"}`
	if got := mustComplete(t, r); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if r.Telemetry.Sources.MCP != 1 || r.Telemetry.CatalogSize != 9 {
		t.Fatalf("telemetry %+v", r.Telemetry)
	}
}

func TestExecInputRules(t *testing.T) { // X1, X2, X4
	rt := newRuntime(t, testConfig(t, func(c *config.Config) { c.Tools.CodeMode.Languages = []string{"javascript"} }))
	s := rt.Activate(api.RunContext{}, fixtureTools())
	cases := []struct{ in, wantErr string }{
		{`{"code":"return 1"}`, ""},
		{`{"command":"return 1"}`, ""},
		{`{"code":"return 1","command":"return 1"}`, ""},
		{`{"code":"return 1","command":"return 2"}`, "differ"},
		{`{}`, "`code` is required"},
		{`{"code":"   "}`, "`code` is required"},
		{`{"code":"return 1","language":"typescript"}`, "disabled"},
		{`{"code":"return 1","language":"python"}`, "unknown language"},
		{`{"code":1}`, "invalid input"},
		{`{"code":"return 1","extra":true}`, "unknown field"},
		{`[1]`, "invalid input"},
		{`{"code":"return 1"} {}`, "trailing"},
		{`{"code":"const fs = require('fs')"}`, "require"},
		{`{"code":"return await import('fs')"}`, "import"},
		{`{"code":"return 'require(\"fs\") and import(\"x\") are just text'"}`, ""},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			r := execRaw(s, "c", json.RawMessage(c.in))
			if c.wantErr == "" {
				mustComplete(t, r)
				return
			}
			if r.Status != api.StatusFailed || r.Code != api.CodeInvalidInput || !strings.Contains(r.Error, c.wantErr) {
				t.Fatalf("got %s %s %q, want invalid_input mentioning %q", r.Status, r.Code, r.Error, c.wantErr)
			}
		})
	}
}

func TestTypeScript(t *testing.T) { // T1
	rt := newRuntime(t, testConfig(t))
	s := rt.Activate(api.RunContext{}, fixtureTools())
	in := `{"code":"interface S { id: string; paid: boolean; tons: number }\nconst all: S[] = await tools.callValue(\"native:shipping:shipping_list\", {});\nreturn all.filter((s: S) => s.tons > 10).map(s => s.id as string);","language":"typescript"}`
	r := execRaw(s, "c", json.RawMessage(in))
	if got := mustComplete(t, r); got != `["a","b"]` {
		t.Fatalf("got %s", got)
	}
	r = execRaw(s, "c", json.RawMessage(`{"code":"const x: number = ;","language":"typescript"}`))
	if r.Status != api.StatusFailed || r.Code != api.CodeInvalidInput || !strings.Contains(r.Error, "line 1:") {
		t.Fatalf("%+v", r)
	}
}

func TestWaitLifecycle(t *testing.T) { // W1, W3, W4, W7, §19
	release := make(chan struct{})
	slow := &api.Tool{Name: "slow", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		select {
		case <-release:
			return api.TextResult("done", map[string]any{"ok": true})
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	rt := newRuntime(t, testConfig(t, func(c *config.Config) { c.Tools.CodeMode.TimeoutMs = 200 }))
	rc := api.RunContext{AgentID: "a", SessionKey: "s1", RunID: "r1"}
	s := rt.Activate(rc, []*api.Tool{slow})
	r := execCode(t, s, `text("before"); const v = await tools.slow({}); text("after"); return v`)
	if r.Status != api.StatusWaiting || r.RunID == "" || len(r.PendingToolCalls) != 1 || r.PendingToolCalls[0].Tool != "native:app:slow" {
		t.Fatalf("%+v", r)
	}
	if len(r.Output) != 1 || r.Output[0].Text != "before" {
		t.Fatalf("output %+v", r.Output)
	}
	wait := func(s *Surface, id string) api.ExecResult {
		in, _ := json.Marshal(map[string]string{"runId": id})
		return waitRaw(s, "w", in)
	}
	// Wrong session, unknown, malformed.
	other := rt.Activate(api.RunContext{AgentID: "a", SessionKey: "s2", RunID: "r1"}, []*api.Tool{slow})
	for _, c := range []struct {
		s        *Surface
		id, want string
	}{
		{other, r.RunID, "different session"},
		{s, "run_UNKNOWN", "unavailable or expired"},
		{s, "", "`runId` is required"},
	} {
		got := wait(c.s, c.id)
		if got.Status != api.StatusFailed || got.Code != api.CodeInvalidInput || !strings.Contains(got.Error, c.want) {
			t.Fatalf("wait(%q): %+v", c.id, got)
		}
	}
	// Nothing settled: waiting again, with updated pending info; then the call settles.
	got := wait(s, r.RunID)
	if got.Status != api.StatusWaiting || got.RunID != r.RunID {
		t.Fatalf("%+v", got)
	}
	close(release)
	got = wait(s, r.RunID)
	if got.Status != api.StatusCompleted || string(got.Value) != `{"ok":true}` || len(got.Output) != 1 || got.Output[0].Text != "after" {
		t.Fatalf("%+v", got)
	}
	// W4: the snapshot is gone once the run completed.
	if got := wait(s, r.RunID); got.Status != api.StatusFailed || !strings.Contains(got.Error, "unavailable") {
		t.Fatalf("%+v", got)
	}
	if rt.Stats().SuspendedRuns != 0 {
		t.Fatalf("%d suspended runs left", rt.Stats().SuspendedRuns)
	}
	// Cancelled runs report cancellation (W7).
	r = execCode(t, s, `await yield_control("pause"); return 1`)
	if r.Status != api.StatusWaiting || r.Reason != api.ReasonYield {
		t.Fatalf("%+v", r)
	}
	rt.CancelRun(r.RunID)
	if got := wait(s, r.RunID); got.Status != api.StatusFailed || !strings.Contains(got.Error, "cancelled") {
		t.Fatalf("%+v", got)
	}
}

func TestConcurrentWait(t *testing.T) { // W3: one wait at a time per run
	release := make(chan struct{})
	slow := &api.Tool{Name: "slow", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		<-release
		return api.TextResult("", map[string]any{"ok": true})
	}}
	rt := newRuntime(t, testConfig(t, func(c *config.Config) { c.Tools.CodeMode.TimeoutMs = 300 }))
	s := rt.Activate(api.RunContext{SessionKey: "s"}, []*api.Tool{slow})
	r := execCode(t, s, `return await tools.slow({})`)
	in, _ := json.Marshal(map[string]string{"runId": r.RunID})
	first := make(chan api.ExecResult)
	go func() { first <- waitRaw(s, "w1", in) }()
	time.Sleep(50 * time.Millisecond)
	second := waitRaw(s, "w2", in)
	if second.Status != api.StatusFailed || second.Code != api.CodeBusy || second.RunID != r.RunID || second.RetryAfterMs <= 0 || !strings.Contains(second.Error, "already in progress") {
		t.Fatalf("%+v", second)
	}
	close(release)
	if got := <-first; got.Status != api.StatusCompleted {
		t.Fatalf("%+v", got)
	}
}

func TestSuspendedRunCap(t *testing.T) { // W5
	// One session may hold every run here; runtime.suspended's per-session cap has its own tests.
	rt := newRuntime(t, testConfig(t, func(c *config.Config) { c.Runtime.Suspended.MaxRuns, c.Runtime.Suspended.MaxRunsPerSession = 64, 64 }))
	s := rt.Activate(api.RunContext{SessionKey: "s"}, nil)
	for i := 0; i < 64; i++ {
		if r := execCode(t, s, `await yield_control(); return 1`); r.Status != api.StatusWaiting {
			t.Fatalf("run %d: %+v", i, r)
		}
	}
	r := execCode(t, s, `await yield_control(); return 1`)
	if r.Status != api.StatusFailed || r.Code != api.CodeInvalidInput || r.Error != "too many suspended code mode runs." {
		t.Fatalf("%+v", r)
	}
	if n := rt.EndSession("s"); n != 64 || rt.Stats().SuspendedRuns != 0 {
		t.Fatalf("ended %d, left %d", n, rt.Stats().SuspendedRuns)
	}
}

func TestSnapshotExpiry(t *testing.T) { // W3, W7: TTL
	rt := newRuntime(t, testConfig(t, func(c *config.Config) { c.Tools.CodeMode.SnapshotTTLSeconds = 1 }))
	s := rt.Activate(api.RunContext{SessionKey: "s"}, nil)
	r := execCode(t, s, `await yield_control(); return 1`)
	time.Sleep(1300 * time.Millisecond)
	in, _ := json.Marshal(map[string]string{"runId": r.RunID})
	got := waitRaw(s, "w", in)
	if got.Status != api.StatusFailed || got.Error != "code mode run is unavailable or expired." {
		t.Fatalf("%+v", got)
	}
}

func TestRestartSafe(t *testing.T) { // W6, X9: refused side effects, no auto-drain, replay-safe results
	rt := newRuntime(t, testConfig(t))
	s := rt.Activate(api.RunContext{}, fixtureTools())
	r := execRaw(s, "c", json.RawMessage(`{"code":"const a = await tools.read({path: \"x\"}); let e; try { await tools.echo({}) } catch (err) { e = err.code } return [a.path, e]","restartSafe":true}`))
	waits := 0
	for r.Status == api.StatusWaiting {
		if !r.RestartSafe {
			t.Fatalf("%+v", r)
		}
		waits++
		in, _ := json.Marshal(map[string]string{"runId": r.RunID})
		r = waitRaw(s, "w", in)
	}
	if string(r.Value) != `["x","not_replay_safe"]` {
		t.Fatalf("%+v", r)
	}
	// Each nested call became a model-visible step instead of being drained inside the exec.
	if waits < 2 {
		t.Fatalf("%d waits: a restart-safe run was drained automatically", waits)
	}
}

func TestFailClosed(t *testing.T) { // §0, Z2: no sandbox → every exec fails, tools stay hidden
	bad := Engine{Wasm: []byte("\x00asm\x01\x00\x00\x00garbage")}
	// issue 24: New says the engine is missing, unless told to start anyway.
	if _, err := New(context.Background(), withEngine(ConfigOptions(testConfig(t)), bad)); err == nil ||
		!strings.Contains(err.Error(), "code mode engine unavailable") || !strings.Contains(err.Error(), "AllowMissing") {
		t.Fatalf("New without an engine: %v", err)
	}
	bad.AllowMissing = true
	rt, err := New(context.Background(), withEngine(ConfigOptions(testConfig(t)), bad))
	if err != nil {
		t.Fatal(err)
	}
	if rt.Err() == nil {
		t.Fatal("Err() is nil without an engine")
	}
	defer rt.Close()
	s := rt.Activate(api.RunContext{}, fixtureTools())
	if !s.Active() || !slices.Equal(s.ToolNames(), []string{"exec", "wait", "image"}) {
		t.Fatalf("tools were exposed directly: %v", s.ToolNames())
	}
	r := execCode(t, s, "return 1")
	if r.Status != api.StatusFailed || r.Code != api.CodeRuntimeUnavailable {
		t.Fatalf("%+v", r)
	}
}

func TestQuickIndexGolden(t *testing.T) { // Q1–Q3: bounded, deterministic, no descriptions, no MCP
	rt := newRuntime(t, denyConfig(t))
	s := rt.Activate(api.RunContext{}, fixtureTools())
	desc := s.Tools()[0].Description
	golden := filepath.Join("testdata", "exec-description.golden")
	if *update {
		_ = os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(golden, []byte(desc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if desc != string(want) {
		t.Fatalf("exec description changed (run with -update to accept):\n%s", desc)
	}
	for _, banned := range []string{"Read a file.", "Create a GitHub issue", "mcp:github", "secret_admin", "select_file"} {
		if strings.Contains(desc, banned) {
			t.Fatalf("exec description contains %q", banned)
		}
	}
	// A big catalog stays bounded and points to tools.search.
	var many []*api.Tool
	for i := 0; i < 1000; i++ {
		many = append(many, &api.Tool{Name: fmt.Sprintf("tool_%04d", i), InputSchema: schema(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)})
	}
	d := rt.Activate(api.RunContext{}, many).Tools()[0].Description
	if len(d) > 12000 || !strings.Contains(d, "tools.search") || !strings.Contains(d, "more") {
		t.Fatalf("quick index of 1000 tools is %d bytes", len(d))
	}
}

func TestCatalogIsolation(t *testing.T) { // A9: a shared catalog never runs another run's implementation
	mk := func(tag string) []*api.Tool {
		return []*api.Tool{{Name: "whoami", Source: api.SourceClient, Owner: "app", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			return api.TextResult(tag, map[string]any{"me": tag, "session": c.Run.SessionKey})
		}}}
	}
	rt := newRuntime(t, testConfig(t))
	a := rt.Activate(api.RunContext{SessionKey: "A"}, mk("A"))
	b := rt.Activate(api.RunContext{SessionKey: "B"}, mk("B"))
	ra := mustComplete(t, execCode(t, a, `return await tools.whoami({})`))
	rb := mustComplete(t, execCode(t, b, `return await tools.whoami({})`))
	if ra != `{"me":"A","session":"A"}` || rb != `{"me":"B","session":"B"}` {
		t.Fatalf("%s %s", ra, rb)
	}
}

func TestConcurrentExecs(t *testing.T) { // 50 execs at once
	var calls atomic.Int64
	tool := &api.Tool{Name: "count", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		calls.Add(1)
		return api.TextResult("", map[string]any{"n": 1})
	}}
	rt := newRuntime(t, testConfig(t, func(c *config.Config) { c.Tools.CodeMode.TimeoutMs = 30000 }))
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := rt.Activate(api.RunContext{SessionKey: fmt.Sprint(i)}, []*api.Tool{tool})
			r := execCode(t, s, fmt.Sprintf(`const r = await Promise.all([tools.count({}), tools.count({})]); return %d + r.length`, i))
			if r.Status != api.StatusCompleted || string(r.Value) != fmt.Sprint(i+2) {
				errs <- fmt.Errorf("exec %d: %+v", i, r)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if calls.Load() != 100 {
		t.Fatalf("%d calls", calls.Load())
	}
}

func FuzzExecInput(f *testing.F) {
	rt := newRuntime(f, testConfig(f, func(c *config.Config) { c.Tools.CodeMode.TimeoutMs = 500 }))
	s := rt.Activate(api.RunContext{}, fixtureTools())
	for _, seed := range []string{`{"code":"return 1"}`, `{"command":"x"}`, `{"code":"return 1","language":"typescript"}`, `{}`, `null`, `"x"`, `{"code":"\u0000"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := execRaw(s, "fuzz", in)
		switch r.Status {
		case api.StatusCompleted, api.StatusFailed, api.StatusWaiting:
		default:
			t.Fatalf("status %q", r.Status)
		}
		if r.Status == api.StatusWaiting {
			rt.CancelRun(r.RunID)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}

func TestSandboxedAgentsNeedBundleMCP(t *testing.T) { // C4
	rt := newRuntime(t, testConfig(t))
	s := rt.Activate(api.RunContext{Sandboxed: true}, fixtureTools())
	if s.Catalog().Sources.MCP != 0 {
		t.Fatal("sandboxed agent got MCP tools without bundle-mcp")
	}
	rt2 := newRuntime(t, testConfig(t, func(c *config.Config) { c.Tools.Sandbox.Tools.AlsoAllow = []string{config.BundleMCP} }))
	if rt2.Activate(api.RunContext{Sandboxed: true}, fixtureTools()).Catalog().Sources.MCP != 1 {
		t.Fatal("bundle-mcp did not allow MCP tools")
	}
}

func TestSuspendedLimits(t *testing.T) { // §19: output and snapshot limits apply to suspended calls too
	rt := newRuntime(t, testConfig(t, func(c *config.Config) { c.Tools.CodeMode.MaxSnapshotBytes = 1024 }))
	r := execCode(t, rt.Activate(api.RunContext{}, nil), `await yield_control(); return 1`)
	if r.Status != api.StatusFailed || r.Code != api.CodeSnapshotLimit {
		t.Fatalf("%+v", r)
	}
	rt = newRuntime(t, testConfig(t, func(c *config.Config) { c.Tools.CodeMode.MaxOutputBytes = 1024 }))
	s := rt.Activate(api.RunContext{}, nil)
	r = execCode(t, s, `text("x".repeat(500)); await yield_control(); text("y".repeat(2000)); return 1`)
	if r.Status != api.StatusWaiting {
		t.Fatalf("%+v", r)
	}
	in, _ := json.Marshal(map[string]string{"runId": r.RunID})
	w := waitRaw(s, "w", in)
	if w.Status != api.StatusFailed || w.Code != api.CodeOutputLimit {
		t.Fatalf("%+v", w)
	}
}

func TestNoLeaksAfterCancelAndExpiry(t *testing.T) { // W7, issue 4: nothing left behind
	release := make(chan struct{})
	defer close(release)
	slow := &api.Tool{Name: "slow", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, ctx.Err()
	}}
	rt := newRuntime(t, testConfig(t, func(c *config.Config) {
		c.Tools.CodeMode.TimeoutMs = 100
		c.Tools.CodeMode.SnapshotTTLSeconds = 1
	}))
	s := rt.Activate(api.RunContext{SessionKey: "leak"}, []*api.Tool{slow})
	execCode(t, s, "return 1") // warm up: template built, pools filled
	if durableMode {
		// and the snapshot encoder's buffers, which every suspension under a shared store uses
		rt.CancelRun(execCode(t, s, "await yield_control(); return 1").RunID)
	}
	runtimeGC()
	var before runtimeStats
	before.read()
	for i := 0; i < 20; i++ {
		// The cell suspends at once (yield) with two calls and a timer pending: no deadline to
		// reach, whatever the machine's load.
		r := execCode(t, s, `const p = Promise.all([tools.slow({}), tools.slow({}), new Promise(r => setTimeout(r, 600000))]); await yield_control(); await p; return 1`)
		if r.Status != api.StatusWaiting {
			t.Fatalf("%+v", r)
		}
		if i%2 == 0 {
			rt.CancelRun(r.RunID) // the other half expire (TTL 1 s)
		}
	}
	// The heap is judged like the rest: within the deadline, so that what the package's earlier
	// tests still have in flight (a store's reconnecting client, a closing server) settles first;
	// a leak stays and fails.
	deadline := time.Now().Add(10 * time.Second)
	var after runtimeStats
	for {
		runtimeGC()
		after.read()
		grown := int64(after.heap) - int64(before.heap)
		if rt.Stats().SuspendedRuns == 0 && after.goroutines <= before.goroutines+2 && grown <= 16<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %d suspended runs, goroutines %d → %d, heap grew by %d bytes after every run was dropped (%+v)",
				rt.Stats().SuspendedRuns, before.goroutines, after.goroutines, grown, rt.Stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCheckPayload(t *testing.T) { // A10: fail closed at the payload
	rt := newRuntime(t, testConfig(t))
	s := rt.Activate(api.RunContext{}, fixtureTools())
	if err := s.CheckPayload(s.ToolNames()); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{
		{"exec", "wait", "image", "read"},
		{"exec", "image"},
		{"exec", "exec", "wait"},
		{"exec", "wait", "image", "image"},
		{},
	} {
		if err := s.CheckPayload(bad); err == nil {
			t.Errorf("payload %v passed", bad)
		}
	}
}
