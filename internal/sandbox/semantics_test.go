package sandbox

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/source"
)

// TestPendingWorkDrains is issue 14 item 1 (X7): `completed` only when nothing is pending. Work a
// cell starts without awaiting it (timers, nested calls, promise jobs) still runs inside the same
// exec; the value is the body's value as it returned.
func TestPendingWorkDrains(t *testing.T) {
	cases := []struct {
		name   string
		code   string
		host   *fakeHost
		value  string
		output string // texts, joined by "|"
		calls  int    // async host calls made (-1: do not check)
	}{
		{name: "timer after return", code: `setTimeout(() => text("late"), 100); return 1`,
			value: `1`, output: "late", calls: -1},
		{name: "un-awaited nested call", code: `tools.callValue("write", {path: "marker"}).then(v => text(v.id)); return 1`,
			value: `1`, output: "write", calls: 1},
		{name: "un-awaited call without a handler", code: `tools.callValue("write", {path: "marker"}); return 1`,
			value: `1`, calls: 1},
		{name: "un-awaited failing call does not fail the cell", code: `tools.callValue("write"); return 1`,
			host: &fakeHost{fail: true}, value: `1`, calls: 1,
			output: "Unhandled promise rejection (a promise failed and nothing awaited or caught it): Error: tool exploded [tool_error]"},
		{name: "value is the body's value", code: `const o = {n: 0}; setTimeout(() => { o.n = 1; text("mutated") }, 10); return o`,
			value: `{"n":0}`, output: "mutated", calls: -1},
		{name: "nested timers", code: `setTimeout(() => setTimeout(() => text("inner"), 10), 10); text("body"); return 2`,
			value: `2`, output: "body|inner", calls: -1},
		{name: "promise job after return", code: `Promise.resolve().then(() => text("micro")); return 3`,
			value: `3`, output: "micro", calls: -1},
		{name: "call started by a timer", code: `setTimeout(() => tools.callValue("t").then(() => text("called")), 5); return 4`,
			value: `4`, output: "called", calls: 1},
		{name: "cleared after return", code: `const t = setTimeout(() => text("never"), 1000); setTimeout(() => clearTimeout(t), 5); return 5`,
			value: `5`, calls: -1},
		{name: "no return value", code: `setTimeout(() => text("t"), 1)`,
			value: `null`, output: "t", calls: -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host := tc.host
			if host == nil {
				host = &fakeHost{}
			}
			r, o := runCell(t, host, tc.code, defaultLimits())
			r.Close()
			if o.Status != StatusCompleted || string(o.Value) != tc.value {
				t.Fatalf("got %s %s %q, want completed %s", o.Status, o.Value, o.Error, tc.value)
			}
			if got := texts(o); got != tc.output {
				t.Errorf("output %q, want %q", got, tc.output)
			}
			if tc.calls >= 0 && len(host.calls) != tc.calls {
				t.Errorf("%d host calls, want %d", len(host.calls), tc.calls)
			}
		})
	}
}

func texts(o Outcome) string {
	var parts []string
	for _, e := range o.Output {
		if e.Type == "text" {
			parts = append(parts, e.Text)
		} else {
			parts = append(parts, string(e.Value))
		}
	}
	return strings.Join(parts, "|")
}

// TestPendingWorkSuspends: work still pending at the deadline makes the result waiting like an
// awaited call (X7, X8); wait continues it and completes with the body's value.
func TestPendingWorkSuspends(t *testing.T) {
	short := defaultLimits()
	short.Timeout = 150 * time.Millisecond
	noDrain := defaultLimits()
	noDrain.RestartSafe = true
	cases := []struct {
		name   string
		code   string
		host   *fakeHost
		lim    Limits
		reason string
		value  string
		output string // of the final result
	}{
		{name: "slow timer after return", code: `setTimeout(() => text("later"), 400); return 7`,
			lim: short, reason: ReasonPendingTools, value: `7`, output: "later"},
		{name: "slow un-awaited call", code: `tools.callValue("slow").then(() => text("done")); return {v: 8}`,
			host: &fakeHost{delay: 400 * time.Millisecond}, lim: short, reason: ReasonPendingTools, value: `{"v":8}`, output: "done"},
		{name: "restart-safe run does not drain after return", code: `tools.callValue("a").then(() => text("ran")); return 9`,
			lim: noDrain, reason: ReasonPendingTools, value: `9`, output: "ran"},
		{name: "un-awaited yield", code: `yield_control("later"); return 10`,
			lim: defaultLimits(), reason: ReasonYield, value: `10`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host := tc.host
			if host == nil {
				host = &fakeHost{}
			}
			r, o := runCell(t, host, tc.code, tc.lim)
			defer r.Close()
			if o.Status != StatusWaiting || o.Reason != tc.reason || len(o.PendingToolCalls) == 0 {
				t.Fatalf("got %s %q %q pending %v, want waiting (%s)", o.Status, o.Reason, o.Error, o.PendingToolCalls, tc.reason)
			}
			lim := tc.lim
			lim.Timeout = 5 * time.Second
			var out []string
			for i := 0; o.Status == StatusWaiting; i++ {
				if i > 3 {
					t.Fatalf("still waiting after %d waits: %+v", i, o)
				}
				o = r.Resume(context.Background(), lim)
				if s := texts(o); s != "" {
					out = append(out, s)
				}
			}
			if o.Status != StatusCompleted || string(o.Value) != tc.value {
				t.Fatalf("after wait: %s %s %q, want completed %s", o.Status, o.Value, o.Error, tc.value)
			}
			if got := strings.Join(out, "|"); got != tc.output {
				t.Errorf("output %q, want %q", got, tc.output)
			}
		})
	}
}

// TestEndlessTimerChain: a cell that keeps re-arming a timer forever ends each exec and wait at
// its deadline as waiting; it neither spins past the deadline nor completes (X7).
func TestEndlessTimerChain(t *testing.T) {
	lim := defaultLimits()
	lim.Timeout = 150 * time.Millisecond
	for _, code := range []string{
		`function tick() { setTimeout(tick, 5) } tick(); return 1`,
		`function tick() { setTimeout(tick, 0) } tick(); return 1`,
		`function tick() { tools.callValue("t").then(tick) } tick(); return 1`,
	} {
		t.Run(code, func(t *testing.T) {
			start := time.Now()
			r, o := runCell(t, &fakeHost{}, code, lim)
			defer r.Close()
			for i := 0; i < 2; i++ {
				if o.Status != StatusWaiting || o.Reason != ReasonPendingTools {
					t.Fatalf("step %d: %s %q, want waiting", i, o.Status, o.Error)
				}
				o = r.Resume(context.Background(), lim)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Fatalf("three steps of 150ms took %v", took)
			}
		})
	}
}

// TestFailureCancelsPendingWork: a body that throws ends the run at once (it does not wait for
// its timers), and the error names the pending work it cancels.
func TestFailureCancelsPendingWork(t *testing.T) {
	start := time.Now()
	host := &fakeHost{release: make(chan struct{})}
	r, o := runCell(t, host, `setTimeout(() => {}, 5000); tools.callValue("native:core:write"); throw new Error("boom")`, defaultLimits())
	r.Close()
	r.WaitIdle()
	if o.Status != StatusFailed || !strings.HasPrefix(o.Error, "Error: boom (line 1:") {
		t.Fatalf("%+v", o)
	}
	if !strings.Contains(o.Error, "2 pending calls were cancelled") || !strings.Contains(o.Error, "setTimeout") || !strings.Contains(o.Error, "native:core:write") {
		t.Fatalf("error does not name the cancelled work: %q", o.Error)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatal("the failure waited for the timer")
	}
}

// TestValueCountsAgainstOutputLimit: the body's value and the output of work after it share
// maxOutputBytes.
func TestValueCountsAgainstOutputLimit(t *testing.T) {
	lim := defaultLimits()
	lim.MaxOutputBytes = 1024
	r, o := runCell(t, nil, `setTimeout(() => text("y".repeat(600)), 1); return "x".repeat(600)`, lim)
	r.Close()
	if o.Status != StatusFailed || o.Code != api.CodeOutputLimit {
		t.Fatalf("%+v", o)
	}
}

// swallow makes every Error construction spin until the soft interrupt fires; QuickJS-NG lets
// Error.prepareStackTrace swallow it, so the guest goes on after its deadline unless the host
// decides by the clock.
const swallow = `Error.prepareStackTrace = () => { for (;;) {} };
`

// TestDeadlineHoles is issue 14 item 3 (R1–R3): for every place where the engine runs guest code
// on the guest's behalf, a cell that swallows the interrupt there and then finishes after its
// deadline has still timed out; a cell that keeps swallowing it is ended by the hard kill. Each
// case asserts `timeout` within a generous bound of the hard kill.
func TestDeadlineHoles(t *testing.T) {
	type tc struct {
		name string
		code string
		host *fakeHost
	}
	cases := []tc{
		{"prepareStackTrace of a guest error", swallow + `try { null.x } catch {} return 1`, nil},
		{"prepareStackTrace of a host-built error (async)", swallow + `try { await tools.callValue("x") } catch {} return 1`, &fakeHost{fail: true}},
		{"prepareStackTrace of a host-built error (sync)", swallow + `try { text(1n ** -1n) } catch {} return 1`, nil},
		{"prepareStackTrace of a host-thrown error", swallow + `try { setTimeout(1) } catch {} return 1`, nil},
		{"getter during error description", `const e = new Error("m");` + swallow + `Object.defineProperty(e, "message", {get() { new Error(); return "m" }}); throw e`, nil},
		{"thrown value described by the JSON adapter", swallow + `throw {toJSON() { new Error(); return 1 }}`, nil},
		{"toJSON of the return value", swallow + `return {toJSON() { new Error(); return 1 }}`, nil},
		{"getter on the return value", swallow + `return {get a() { new Error(); return 1 }}`, nil},
		{"Proxy trap on the return value", swallow + `return new Proxy({a: 1}, {get(t, k) { new Error(); return t[k] }})`, nil},
		{"Proxy trap in guest code", swallow + `const p = new Proxy({}, {get() { new Error(); return 1 }}); return p.x`, nil},
		{"valueOf in a host conversion", swallow + `setTimeout(() => {}, {valueOf() { new Error(); return 1 }}); return 1`, nil},
		{"toString in a host conversion", swallow + `await tools.describe({toString() { new Error(); return "x" }}); return 1`, nil},
		{"Symbol.toPrimitive in a host conversion", swallow + `await tools.search({[Symbol.toPrimitive]() { new Error(); return "q" }}); return 1`, nil},
		{"toJSON in a bridge payload", swallow + `await tools.callValue("a", {toJSON() { new Error(); return {} }}); return 1`, nil},
		{"toJSON in text()", swallow + `text({toJSON() { new Error(); return 1 }}); return 1`, nil},
		{"iterator", swallow + `const a = [...{[Symbol.iterator]() { return {next() { new Error(); return {done: true} }} }}]; return 1`, nil},
		{"thenable (await)", swallow + `await {then(r) { new Error(); r(1) }}; return 1`, nil},
		{"then getter when a host result is delivered", swallow + `Object.defineProperty(Object.prototype, "then", {configurable: true, get() { delete Object.prototype.then; new Error(); return undefined }}); await tools.callValue("a"); return 1`, nil},
		{"sort comparator", swallow + `[3, 1, 2].sort((a, b) => { new Error(); return a - b }); return 1`, nil},
		{"timer callback", swallow + `await new Promise(r => setTimeout(() => { new Error(); r() }, 1)); return 1`, nil},
		{"timer callback after return", swallow + `setTimeout(() => { new Error() }, 1); return 1`, nil},
		{"describing an unhandled rejection", `const e = new Error("m");` + swallow + `Object.defineProperty(e, "message", {get() { new Error(); return "m" }}); Promise.reject(e); return 1`, nil},
		{"swallowed and then suspended", swallow + `new Error(); await tools.callValue("slow"); return 1`, &fakeHost{delay: 10 * time.Second}},
		// The hard kill: the interrupt is swallowed forever.
		{"hard kill: endless prepareStackTrace", swallow + `for (;;) { new Error() }`, nil},
		{"hard kill: endless toJSON", swallow + `return {toJSON() { for (;;) new Error() }}`, nil},
		{"hard kill: endless getter during description", swallow + `throw {get name() { for (;;) new Error() }, message: "m", __proto__: Error.prototype}`, nil},
	}
	lim := defaultLimits()
	lim.Timeout = 200 * time.Millisecond
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			host := c.host
			if host == nil {
				host = &fakeHost{}
			}
			start := time.Now()
			r, o := runCell(t, host, c.code, lim)
			r.Close()
			took := time.Since(start)
			if o.Status != StatusFailed || o.Code != api.CodeTimeout {
				t.Fatalf("got %s %s %q (%s) after %v, want a timeout", o.Status, o.Value, o.Error, o.Code, took)
			}
			// Generous: the hard kill lands at timeout + grace; this only proves it lands at all.
			if took > lim.Timeout+5*time.Second {
				t.Fatalf("took %v with a %v timeout", took, lim.Timeout)
			}
		})
	}
}

// TestDeadlineHolesInWait: the same rule holds in a resumed VM (wait).
func TestDeadlineHolesInWait(t *testing.T) {
	lim := defaultLimits()
	lim.Timeout = 200 * time.Millisecond
	r, o := runCell(t, nil, swallow+`await yield_control(); new Error(); return 1`, lim)
	defer r.Close()
	if o.Status != StatusWaiting {
		t.Fatalf("%+v", o)
	}
	o = r.Resume(context.Background(), lim)
	if o.Status != StatusFailed || o.Code != api.CodeTimeout {
		t.Fatalf("%+v", o)
	}
}

// TestCompletesJustInTime: a cell that finishes well before its deadline is unaffected by the
// clock checks, including one that uses Error.prepareStackTrace harmlessly.
func TestCompletesJustInTime(t *testing.T) {
	o := exec(t, `Error.prepareStackTrace = (e, frames) => "custom"; const s = new Error("x").stack; return s`)
	if o.Status != StatusCompleted {
		t.Fatalf("%+v", o)
	}
	var v any
	_ = json.Unmarshal(o.Value, &v)
}

// TestSyntaxErrorsPointAtTheCell is issue 14 item 4: a syntax error points at the model's code,
// never at the wrapper's `}` or `)`.
func TestSyntaxErrorsPointAtTheCell(t *testing.T) {
	cases := []struct{ code, want string }{
		{"return (1 +", `SyntaxError: unexpected end of the code: the "(" at line 1:8 is never closed (line 1:12)`},
		{"const x = {", `SyntaxError: unexpected end of the code: the "{" at line 1:11 is never closed (line 1:12)`},
		{"foo(1, 2", `SyntaxError: unexpected end of the code: the "(" at line 1:4 is never closed (line 1:9)`},
		{"if (x) {\n  return 1", `SyntaxError: unexpected end of the code: the "{" at line 1:8 is never closed (line 2:11)`},
		{"return 1 +", `SyntaxError: unexpected end of the code: something is missing after "+" (line 1:11)`},
		{"const f = () =>", `SyntaxError: unexpected end of the code: something is missing after "=>" (line 1:16)`},
		{"class A {", `SyntaxError: unexpected end of the code: the "{" at line 1:9 is never closed (line 1:10)`},
		{"return 1 }", `SyntaxError: unexpected "}": it closes nothing the cell opened (a cell is the body of an async function: do not close it) (line 1:10)`},
		// Errors inside the code keep the engine's own message and position.
		{"let x = ;", `SyntaxError: unexpected token in expression: ';' (line 1:9)`},
		{"\nreturn 'abc", `SyntaxError: unexpected end of string (line 2:8)`},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			o := exec(t, c.code)
			if o.Status != StatusFailed || o.Code != api.CodeInvalidInput || o.Error != c.want {
				t.Fatalf("got %s %s %q, want invalid_input %q", o.Status, o.Code, o.Error, c.want)
			}
		})
	}
}

// TestStrictNamespaces is issue 14 item 4 on the guest side: reading a name that is not on
// tools, MCP or MCP.<server> throws the host's explanation (a TypeError with a code) at the
// access, while everything a plain object answers keeps working: await, JSON, `in`, keys,
// conversions, Symbol keys, and the helpers that can never be shadowed.
func TestStrictNamespaces(t *testing.T) {
	eng, _ := testEngine(t)
	tmpl, err := eng.NewTemplate(context.Background(), []byte(`{"tools":[{"id":"native:core:read","name":"read"}],
		"safeNames":[["read","native:core:read"]],
		"mcp":[{"server":"every-thing","js":"everyThing","tools":[["getSum","get-sum"]]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ code, want string }{
		// issue 22 item 4: feature detection works as on plain objects; missing names are undefined.
		{`return [typeof tools.reed, tools.reed ? 1 : 2, "reed" in tools, tools.reed === undefined]`, `["undefined",2,false,true]`},
		{`return [typeof MCP.github, MCP.github ? 1 : 2, "github" in MCP, typeof MCP.everyThing.get_sum, "get_sum" in MCP.everyThing]`,
			`["undefined",2,false,"undefined",false]`},
		{`return typeof tools["not an ident"]`, `"undefined"`},
		{`const t = Object.create(tools); return t.nope === undefined`, `true`},
		{`const f = tools.reed ?? tools.read; return typeof f`, `"function"`},
		// A call of a missing name still fails, and an uncaught one says what exists (below).
		{`try { await tools.reed({}) } catch (e) { return [e instanceof TypeError, e.message] }`, `[true,"not a function"]`},
		// What a plain object answers still works.
		{`return [await tools === tools, await MCP === MCP, await MCP.everyThing === MCP.everyThing]`, `[true,true,true]`},
		{`return [tools.then, tools.toJSON, MCP.then, MCP.everyThing.then, tools.constructor, tools.__proto__]`, `[null,null,null,null,null,null]`},
		{`return [typeof tools.search, typeof tools.describe, typeof tools.call, typeof tools.callValue, typeof tools.read]`, `["function","function","function","function","function"]`},
		{`return ["read" in tools, "reed" in tools, "everyThing" in MCP, "nope" in MCP.everyThing]`, `[true,false,true,false]`},
		{`return [Object.keys(tools), Object.keys(MCP), Object.keys(MCP.everyThing)]`, `[["read"],["everyThing"],["getSum"]]`},
		{`return JSON.stringify(tools)`, `"{}"`},
		{`text(MCP); return 1`, `1`},
		{`return [tools[Symbol.iterator], tools[Symbol.toPrimitive], Object.prototype.toString.call(tools)]`, `[null,null,"[object Object]"]`},
		{`try { String(tools) } catch (e) { return e instanceof TypeError }`, `true`},
		{`return [Object.isFrozen(tools), Object.isFrozen(MCP), Object.isFrozen(MCP.everyThing)]`, `[true,true,true]`},
		// The helpers cannot be replaced or shadowed.
		{`try { tools.search = 1 } catch {} try { Object.defineProperty(tools, "search", {value: 1}) } catch {} return typeof tools.search`, `"function"`},
		{`return typeof MCP.everyThing.$api === "function" && typeof MCP.everyThing.resources.read === "function"`, `true`},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			prog, err := source.Prepare(c.code, source.JavaScript)
			if err != nil {
				t.Fatal(err)
			}
			r, o := eng.Start(context.Background(), &fakeHost{}, tmpl, defaultLimits(), Cell{Program: prog, CallID: "call"})
			r.Close()
			if o.Status != StatusCompleted || string(o.Value) != c.want {
				t.Fatalf("got %s %s %q, want %s", o.Status, o.Value, o.Error, c.want)
			}
		})
	}
	// An uncaught call of a missing name fails the cell with the catalog's explanation (the
	// fake host answers "unknown <what>") at the call, for each of the three objects.
	for _, c := range []struct{ code, want string }{
		{"\nreturn tools.reed({path: 'x'})", `TypeError: unknown {"kind":"tools","server":"","name":"reed"} [unknown_tool] (line 2:`},
		{"\n\nawait MCP.github.createIssue({})", `TypeError: unknown {"kind":"server","server":"","name":"github"} [unknown_tool] (line 3:`},
		{"const x = 1;\nawait MCP.everyThing.get_sum({a: 1})", `TypeError: unknown {"kind":"mcp","server":"every-thing","name":"get_sum"} [unknown_tool] (line 2:`},
		// A missing read on another line is not this failure: the engine's message stays.
		{"const probe = typeof tools.reed;\nlet f; f()", `TypeError: not a function (line 2:`},
	} {
		prog, _ := source.Prepare(c.code, source.JavaScript)
		r, o := eng.Start(context.Background(), &fakeHost{}, tmpl, defaultLimits(), Cell{Program: prog, CallID: "call"})
		r.Close()
		if o.Status != StatusFailed || !strings.HasPrefix(o.Error, c.want) || o.Code != api.CodeCellError {
			t.Fatalf("%q: %+v", c.code, o)
		}
	}
}

// TestUnhandledRejections: a failure nobody awaited or caught is reported in the output of the
// completed cell (like Node.js's warning); a rejection handled later, or caught, is not.
func TestUnhandledRejections(t *testing.T) {
	const note = "Unhandled promise rejection (a promise failed and nothing awaited or caught it): "
	cases := []struct {
		name, code string
		host       *fakeHost
		output     string
	}{
		{"un-awaited failing call", `tools.callValue("w"); return 1`, &fakeHost{fail: true}, note + "Error: tool exploded [tool_error]"},
		{"rejected promise", "\nPromise.reject(new Error('late')); return 1", nil, note + "Error: late (line 2:20)"},
		{"async function that throws", `async function f() { throw new TypeError("t") } f(); return 1`, nil, note + "TypeError: t (line 1:32)"},
		{"a plain value", `Promise.reject("plain"); return 1`, nil, note + "plain"},
		{"handled later", `const p = Promise.reject(new Error("x")); await null; p.catch(() => {}); return 1`, nil, ""},
		{"awaited and caught", `try { await tools.callValue("w") } catch {} return 1`, &fakeHost{fail: true}, ""},
		{"Promise.all failure caught", `try { await Promise.all([tools.callValue("a"), tools.callValue("b")]) } catch {} return 1`, &fakeHost{fail: true}, ""},
		{"bounded", `for (let i = 0; i < 40; i++) Promise.reject(i); return 1`, nil,
			note + "0|" + note + "1|" + note + "2|" + note + "3|" + note + "4|… and 35 more unhandled promise rejections"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host := tc.host
			if host == nil {
				host = &fakeHost{}
			}
			r, o := runCell(t, host, tc.code, defaultLimits())
			r.Close()
			if o.Status != StatusCompleted || string(o.Value) != "1" {
				t.Fatalf("got %s %s %q", o.Status, o.Value, o.Error)
			}
			if got := texts(o); got != tc.output {
				t.Fatalf("output %q, want %q", got, tc.output)
			}
		})
	}
	// Reported when the run completes, after a wait too; never past maxOutputBytes.
	lim := defaultLimits()
	lim.MaxOutputBytes = 1024
	r, o := runCell(t, nil, `Promise.reject(new Error("x".repeat(2000))); await yield_control(); return 1`, lim)
	defer r.Close()
	if o.Status != StatusWaiting {
		t.Fatalf("%+v", o)
	}
	o = r.Resume(context.Background(), lim)
	if o.Status != StatusCompleted || len(o.Output) != 0 {
		t.Fatalf("%+v", o)
	}
	r2, o := runCell(t, nil, `Promise.reject(new Error("kept")); await yield_control(); return 1`, defaultLimits())
	defer r2.Close()
	o = r2.Resume(context.Background(), defaultLimits())
	if got := texts(o); got != note+"Error: kept (line 1:20)" {
		t.Fatalf("after a wait: %q", got)
	}
}

// precheckHost refuses calls to the id "refused" on the VM goroutine and hands a token to Async
// for the others.
type precheckHost struct {
	fakeHost
	sawToken atomic.Int64
}

func (h *precheckHost) Precheck(c *Call) (any, error) {
	if strings.Contains(string(c.Payload), `"refused"`) {
		return nil, &api.ToolError{Name: "TypeError", Code: "invalid_input", Message: "refused before it started"}
	}
	return "token", nil
}

func (h *precheckHost) Async(ctx context.Context, c *Call) ([]byte, error) {
	if c.Prechecked == "token" {
		h.sawToken.Add(1)
	}
	return h.fakeHost.Async(ctx, c)
}

// TestPrecheck: a request the host refuses on the VM goroutine never starts (no Async call) and
// rejects like any failed call; an accepted one gets the host's token back in Async.
func TestPrecheck(t *testing.T) {
	host := &precheckHost{}
	r, o := runCell(t, host, `
		let refused;
		try { await tools.callValue("refused") } catch (e) { refused = [e instanceof TypeError, e.code, e.message] }
		const p = tools.callValue("refused"); // un-awaited: reported, not fatal
		const ok = await tools.callValue("fine", {n: 1});
		return {refused, ok}`, defaultLimits())
	r.Close()
	want := `{"refused":[true,"invalid_input","refused before it started"],"ok":{"id":"fine","input":{"n":1}}}`
	if o.Status != StatusCompleted || string(o.Value) != want {
		t.Fatalf("got %s %s %q", o.Status, o.Value, o.Error)
	}
	if len(host.calls) != 1 || host.sawToken.Load() != 1 {
		t.Fatalf("Async ran %d times (%d with the token), want once", len(host.calls), host.sawToken.Load())
	}
	if !strings.Contains(texts(o), "refused before it started") {
		t.Fatalf("the un-awaited refusal is not reported: %q", texts(o))
	}
}
