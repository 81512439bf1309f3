package codemode

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
)

// Issue 14: cells behave exactly as written. These are end-to-end cells through Surface.Exec;
// the sandbox, source, catalog and contract packages test each mechanism in depth.

// semanticsTools is the fixture catalog plus tools that count their executions.
func semanticsTools(marks, strictRuns *atomic.Int64) []*api.Tool {
	tools := fixtureTools()
	return append(tools,
		&api.Tool{Name: "mark", Description: "Leave a marker (a side effect).",
			InputSchema: schema(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path"]}`),
			Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
				time.Sleep(20 * time.Millisecond) // slower than the body: it must still run
				marks.Add(1)
				return api.TextResult("marked", map[string]any{"ok": true})
			}},
		&api.Tool{Name: "strict", Description: "Checks its input.",
			InputSchema: schema(`{"type":"object","properties":{"count":{"type":"integer","minimum":1},"tags":{"type":"array","items":{"type":"string"}}},"required":["count"],"additionalProperties":false}`),
			Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
				strictRuns.Add(1)
				return api.TextResult("ok", map[string]any{"ok": true})
			}},
		&api.Tool{Name: "lax", Source: api.SourceClient, Owner: "app", Description: "An untrusted schema that does not compile.",
			InputSchema: schema(`{"type":"object","properties":{"x":{"type":42}},"$ref":"https://example.com/never-fetched.json"}`),
			Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
				return api.TextResult("ran", map[string]any{"ran": true})
			}},
	)
}

func execLang(t testing.TB, s *Surface, code, lang string) api.ExecResult {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"code": code, "language": lang})
	return execRaw(s, "call_1", in)
}

// TestUnawaitedWorkRuns is item 1 (X7): a cell that forgets `await` does not lose its side
// effects; the result is completed only when nothing is pending.
func TestUnawaitedWorkRuns(t *testing.T) {
	var marks, strictRuns atomic.Int64
	rt := newRuntime(t, testConfig(t))
	s := rt.Activate(api.RunContext{}, semanticsTools(&marks, &strictRuns))
	cases := []struct {
		name, code, value, output string
		calls                     int
		marks                     int64
	}{
		{"un-awaited tool call", `tools.mark({path: "marker", content: "x"}); return 1`, `1`, ``, 1, 1},
		{"un-awaited calls in a loop", `for (const p of ["a", "b", "c"]) tools.mark({path: p}); return "started"`, `"started"`, ``, 3, 3},
		{"un-awaited MCP call", `MCP.github.createIssue({title: "t"}).then(r => text("issue " + r.structuredContent.number)); return 2`, `2`, `issue 7`, 1, 0},
		{"timer after return", `setTimeout(() => text("late"), 100); return 3`, `3`, `late`, 0, 0},
		{"value is the body's value", `const o = {n: 0}; tools.mark({path: "p"}).then(() => { o.n = 1 }); return o`, `{"n":0}`, ``, 1, 1},
		{"an un-awaited failure is reported", `tools.strict({count: 0}); return 4`, `4`,
			"Unhandled promise rejection (a promise failed and nothing awaited or caught it): TypeError: native:app:strict was not called: the input does not match its input schema: input.count: minimum: got 0, want 1 [invalid_input]", 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := marks.Load()
			// Each case is its own run: telemetry counts the run's calls (Y1).
			r := execCode(t, s.ForRun(api.RunContext{RunID: tc.name}), tc.code)
			if got := mustComplete(t, r); got != tc.value {
				t.Fatalf("value %s, want %s", got, tc.value)
			}
			var out []string
			for _, o := range r.Output {
				out = append(out, o.Text)
			}
			if got := strings.Join(out, "|"); got != tc.output {
				t.Errorf("output %q, want %q", got, tc.output)
			}
			if r.Telemetry.CallCount != tc.calls {
				t.Errorf("callCount %d, want %d", r.Telemetry.CallCount, tc.calls)
			}
			if got := marks.Load() - before; got != tc.marks {
				t.Errorf("%d markers left, want %d", got, tc.marks)
			}
		})
	}
	// Pending at the deadline: waiting, and wait finishes it with the body's value.
	rt2 := newRuntime(t, testConfig(t, func(c *config.Config) { c.Tools.CodeMode.TimeoutMs = 150 }))
	s2 := rt2.Activate(api.RunContext{SessionKey: "s"}, semanticsTools(&marks, &strictRuns))
	r := execCode(t, s2, `setTimeout(() => text("after the deadline"), 400); return "body"`)
	if r.Status != api.StatusWaiting || len(r.PendingToolCalls) != 1 || r.PendingToolCalls[0].Tool != "setTimeout" {
		t.Fatalf("%+v", r)
	}
	for i := 0; r.Status == api.StatusWaiting && i < 10; i++ {
		in, _ := json.Marshal(map[string]string{"runId": r.RunID})
		r = waitRaw(s2, "w", in)
	}
	if got := mustComplete(t, r); got != `"body"` || len(r.Output) != 1 || r.Output[0].Text != "after the deadline" {
		t.Fatalf("%s %+v", got, r.Output)
	}
}

// TestNoFalseRefusals is item 2 (X4): module loading is refused, the mention of the word is not.
func TestNoFalseRefusals(t *testing.T) {
	rt := newRuntime(t, testConfig(t))
	s := rt.Activate(api.RunContext{}, fixtureTools())
	allowed := []struct{ name, lang, code, value string }{
		{"typeof require", "javascript", `return typeof require`, `"undefined"`},
		{"the README's first CLI example", "javascript", `console.log("hi"); return [1 + 1, typeof require]`, `[2,"undefined"]`},
		{"a local require", "javascript", `const require = (m) => "local " + m; return require("fs")`, `"local fs"`},
		{"a property named require", "javascript", `const o = {require: 1}; return o.require`, `1`},
		{"import type", "typescript", "import type { Readable } from \"stream\"\nconst r: Readable | null = null\nreturn r", `null`},
		{"import type namespace", "typescript", "import type * as FS from \"fs\"\nconst f: typeof FS | null = null\nreturn f === null", `true`},
		{"an import used only as a type", "typescript", "import { Stats } from \"fs\"\nconst s: Stats[] = []\nreturn s.length", `0`},
	}
	for _, tc := range allowed {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustComplete(t, execLang(t, s, tc.code, tc.lang)); got != tc.value {
				t.Fatalf("value %s, want %s", got, tc.value)
			}
		})
	}
	refused := []struct{ name, lang, code, want string }{
		{"require call", "javascript", `const fs = require("fs")`, "require() is not available (line 1:12)"},
		{"dynamic import", "javascript", `await import("fs")`, "import is not available (line 1:7)"},
		{"an import that survives the transform", "typescript", "import * as FS from \"fs\"\nreturn FS.readFileSync", "import is not available (line 1:1)"},
		{"a side-effect import", "typescript", "const a = 1\nimport \"polyfill\"", "import is not available (line 2:1)"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			r := execLang(t, s, tc.code, tc.lang)
			if r.Status != api.StatusFailed || r.Code != api.CodeInvalidInput || !strings.Contains(r.Error, strings.Split(tc.want, " (")[0]) || !strings.Contains(r.Error, "("+strings.Split(tc.want, " (")[1]) {
				t.Fatalf("%+v, want invalid_input %q", r, tc.want)
			}
		})
	}
}

// TestDeadlineIsTheClock is item 3 (R1–R3) end to end; the sandbox tests one cell per engine
// callback kind.
func TestDeadlineIsTheClock(t *testing.T) {
	rt := newRuntime(t, testConfig(t, func(c *config.Config) { c.Tools.CodeMode.TimeoutMs = 200 }))
	s := rt.Activate(api.RunContext{}, fixtureTools())
	for _, code := range []string{
		`Error.prepareStackTrace = () => { for (;;) {} }; try { null.x } catch {} return "finished after the deadline"`,
		`Error.prepareStackTrace = () => { for (;;) {} }; return {toJSON() { new Error(); return 1 }}`,
		`Error.prepareStackTrace = () => { for (;;) {} }; for (;;) { new Error() }`,
	} {
		start := time.Now()
		r := execCode(t, s, code)
		if r.Status != api.StatusFailed || r.Code != api.CodeTimeout {
			t.Fatalf("%q: %+v, want a timeout", code, r)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("%q took %v", code, took)
		}
	}
}

// TestErrorsAModelCanActOn is item 4: syntax errors point at the model's code, unknown names
// suggest the nearest ones, and an input that fails the tool's schema says which field and why
// before the tool runs.
func TestErrorsAModelCanActOn(t *testing.T) {
	var marks, strictRuns atomic.Int64
	var hooked atomic.Int64
	rt := newRuntime(t, testConfig(t), func(o *Options) {
		o.Hooks = []api.BeforeToolCallHook{func(ctx context.Context, ev *api.ToolCallEvent) (api.HookDecision, error) {
			if ev.ToolID == "native:app:strict" {
				hooked.Add(1)
			}
			return api.HookDecision{}, nil
		}}
	})
	s := rt.Activate(api.RunContext{}, semanticsTools(&marks, &strictRuns))
	cases := []struct {
		name, lang, code string
		rcode            api.ErrorCode // result code
		want             []string      // substrings of the error
		not              []string
	}{
		{"syntax: unclosed paren", "javascript", `return (1 +`, api.CodeInvalidInput,
			[]string{`SyntaxError: unexpected end of the code: the "(" at line 1:8 is never closed (line 1:12)`}, []string{`'}'`}},
		{"syntax: TypeScript", "typescript", "const n: number = (1 +", api.CodeInvalidInput,
			[]string{`the "(" at line 1:19 is never closed (line 1:23)`}, []string{`"}"`}},
		{"syntax: runtime error position through TypeScript", "typescript", "type T = { a: number }\nconst t: T | null = null\nreturn t!.a", api.CodeCellError,
			[]string{"TypeError: cannot read property 'a' of null (line 3:"}, nil},
		{"MCP tool by its real name", "javascript", `return await MCP.github.create_issue({title: "x"})`, api.CodeCellError,
			[]string{"MCP.github.create_issue is not a function", "did you mean MCP.github.createIssue?", "[unknown_tool] (line 1:"}, []string{"not a function (line"}},
		{"unknown MCP server", "javascript", `return await MCP.githb.createIssue({title: "x"})`, api.CodeCellError,
			[]string{"MCP.githb is undefined", "did you mean MCP.github?", "[unknown_server]"}, nil},
		{"unknown convenience name", "javascript", `return await tools.ech({})`, api.CodeCellError,
			[]string{"tools.ech is not a function", "did you mean tools.echo?"}, nil},
		{"MCP tool on tools", "javascript", `return await tools.create_issue({title: "x"})`, api.CodeCellError,
			[]string{"call MCP.github.createIssue({...})"}, nil},
		{"unknown catalog id", "javascript", `return await tools.callValue("echo", {})`, api.CodeCellError,
			[]string{`unknown tool id "echo"; did you mean "native:core:echo"?`}, nil},
		{"unknown id to describe", "javascript", `return await tools.describe("native:app:reed")`, api.CodeCellError,
			[]string{`did you mean "native:core:read"?`}, nil},
		{"input fails the schema", "javascript", `return await tools.strict({count: 0, tags: [1], extra: true})`, api.CodeCellError,
			[]string{"native:app:strict was not called: the input does not match its input schema",
				"input: additional properties 'extra' not allowed", "input.count: minimum: got 0, want 1", "input.tags[0]: got number, want string", "[invalid_input]"}, nil},
		{"MCP input fails the schema", "javascript", `return await MCP.github.createIssue({body: "no title"})`, api.CodeCellError,
			[]string{"mcp:github:create_issue was not called", "input: missing property 'title'"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := execLang(t, s, tc.code, tc.lang)
			if r.Status != api.StatusFailed || r.Code != tc.rcode {
				t.Fatalf("%+v, want failed (%q)", r, tc.rcode)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Error, w) {
					t.Errorf("error lacks %q:\n%s", w, r.Error)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(r.Error, w) {
					t.Errorf("error contains %q:\n%s", w, r.Error)
				}
			}
		})
	}
	if strictRuns.Load() != 0 || hooked.Load() != 0 {
		t.Fatalf("an invalid input reached the tool (%d) or its hooks (%d)", strictRuns.Load(), hooked.Load())
	}
	// The same errors are catchable data, and valid inputs (or unusable schemas) go through.
	got := mustComplete(t, execCode(t, s, `
		let e1, e2;
		try { await tools.strict({count: "3"}) } catch (e) { e1 = [e.name, e.code, e.details.failures] }
		e2 = [typeof MCP.github.nope, "nope" in MCP.github] // issue 22 item 4: feature detection
		const ok = await tools.strict({count: 3, tags: ["a"]});
		const lax = await tools.lax({anything: [1, 2]});
		return {e1, e2, ok, lax}`))
	want := `{"e1":["TypeError","invalid_input",["input.count: got string, want integer"]],"e2":["undefined",false],"ok":{"ok":true},"lax":{"ran":true}}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if strictRuns.Load() != 1 {
		t.Fatalf("strict ran %d times", strictRuns.Load())
	}
}
