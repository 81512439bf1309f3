package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/quickjs"
	"github.com/codemode-go/codemode/internal/source"
)

var (
	engOnce sync.Once
	engine  *Engine
	engErr  error
	empty   *Template
)

// testEngine loads the module once per test binary.
func testEngine(tb testing.TB) (*Engine, *Template) {
	tb.Helper()
	engOnce.Do(func() {
		ctx := context.Background()
		mod, err := quickjs.Load(ctx, quickjs.ModuleOptions{})
		if err != nil {
			engErr = err
			return
		}
		engine, engErr = NewEngine(ctx, mod)
		if engErr == nil {
			empty, engErr = engine.NewTemplate(ctx, []byte(`{"tools":[],"safeNames":[],"mcp":[]}`))
		}
	})
	if engErr != nil {
		tb.Fatalf("QuickJS module unavailable (run `make wasm` first): %v", engErr)
	}
	return engine, empty
}

func defaultLimits() Limits {
	return Limits{Timeout: 2 * time.Second, MemoryLimit: 32 << 20, MaxOutputBytes: 64 << 10, MaxPending: 4, MaxSnapshotBytes: 10 << 20}
}

// fakeHost answers every request; async ops can be slowed down or made to fail.
type fakeHost struct {
	mu      sync.Mutex
	calls   []string
	delay   time.Duration
	release chan struct{} // when non-nil, async calls block until it is closed
	fail    bool
}

func (h *fakeHost) Sync(op string, p []byte) ([]byte, error) {
	if op == "fail" {
		return nil, &api.ToolError{Name: "Error", Message: "sync failure", Code: "nope"}
	}
	if op == "unknown" {
		return nil, &api.ToolError{Name: "TypeError", Message: "unknown " + string(p), Code: "unknown_tool"}
	}
	return json.Marshal(map[string]any{"op": op, "payload": json.RawMessage(p)})
}

func (h *fakeHost) Async(ctx context.Context, c *Call) ([]byte, error) {
	op, p := c.Op, c.Payload
	h.mu.Lock()
	h.calls = append(h.calls, op)
	h.mu.Unlock()
	if h.release != nil {
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if h.delay > 0 {
		select {
		case <-time.After(h.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if h.fail {
		return nil, &api.ToolError{Name: "Error", Message: "tool exploded", Code: "tool_error"}
	}
	var in struct {
		ID    string          `json:"id"`
		Input json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(p, &in)
	return json.Marshal(map[string]any{"id": in.ID, "input": in.Input})
}

func (h *fakeHost) PendingLabel(op string, p []byte) string {
	var in struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(p, &in)
	return in.ID
}

// hotMode makes runCell use an engine whose suspended runs keep their VMs alive (set only by
// TestHotMode, which runs the suspend/resume tests again that way).
var hotMode bool

var (
	hotOnce   sync.Once
	hotEngine *Engine
)

func testHotEngine(tb testing.TB) *Engine {
	eng, _ := testEngine(tb)
	hotOnce.Do(func() {
		var err error
		if hotEngine, err = NewEngine(context.Background(), eng.mod); err != nil {
			tb.Fatal(err)
		}
		hotEngine.SetHotCache(NewHotCache(64, 1<<30))
	})
	return hotEngine
}

func runCell(tb testing.TB, host Host, code string, lim Limits) (*Run, Outcome) {
	tb.Helper()
	eng, tmpl := testEngine(tb)
	if hotMode {
		eng = testHotEngine(tb)
	}
	prog, err := source.Prepare(code, source.JavaScript)
	if err != nil {
		tb.Fatalf("prepare %q: %v", code, err)
	}
	if host == nil {
		host = &fakeHost{}
	}
	return eng.Start(context.Background(), host, tmpl, lim, Cell{Program: prog, CallID: "call"})
}

func exec(tb testing.TB, code string) Outcome {
	tb.Helper()
	r, o := runCell(tb, nil, code, defaultLimits())
	r.Close()
	return o
}

func TestValues(t *testing.T) { // X6, X7, P2
	cases := []struct{ code, want string }{
		{"return 1+1", `2`},
		{"return 'héllo'", `"héllo"`},
		{"return {a: [1, null, true], b: {c: 'd'}}", `{"a":[1,null,true],"b":{"c":"d"}}`},
		{"return undefined", `null`},
		{"", `null`},
		{"1 + 1", `null`}, // no return: the cell's value is undefined
		{"return 12345678901234567890n", `"12345678901234567890"`},
		{"return {f: function foo() {}, g: () => 1}", `{"f":"[Function foo]","g":"[Function g]"}`},
		{"return Symbol('s')", `"Symbol(s)"`},
		{"return new Map([['a', 1], ['b', new Set([1, 2])]])", `{"a":1,"b":[1,2]}`},
		{"return new Map([[1, 'x']])", `[[1,"x"]]`},
		{"return new Date(0)", `"1970-01-01T00:00:00.000Z"`},
		{"return [undefined, NaN, Infinity]", `[null,null,null]`},
		{"return new TypeError('bad')", `"TypeError: bad"`},
		{"return new Uint8Array(3)", `"[Uint8Array length 3]"`},
		{"return new ArrayBuffer(8)", `"[ArrayBuffer 8 bytes]"`},
		{"return {toJSON() { return 'custom' }}", `"custom"`},
		{"const x = await Promise.resolve(41); return x + 1", `42`},
		{"return await Promise.all([1, Promise.resolve(2), new Promise(r => setTimeout(() => r(3), 5))])", `[1,2,3]`},
		{"return new Date(0).getTimezoneOffset()", `0`}, // the guest's zone is UTC
		{"return typeof performance.now()", `"number"`},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			o := exec(t, c.code)
			if o.Status != StatusCompleted {
				t.Fatalf("status %s: %s", o.Status, o.Error)
			}
			if string(o.Value) != c.want {
				t.Fatalf("value %s, want %s", o.Value, c.want)
			}
		})
	}
}

func TestUnserializableResult(t *testing.T) { // P2: cycles are an error, never a crash
	o := exec(t, "const a = {}; a.self = a; return a")
	if o.Status != StatusFailed || !strings.Contains(o.Error, "circular") {
		t.Fatalf("got %+v", o)
	}
}

func TestOutput(t *testing.T) { // P1, P2
	o := exec(t, `console.log("a", 1, {b: 2}); text("plain"); text({x: 1}); json({y: [1, 2n]}); json(undefined); console.error("e"); return "done"`)
	if o.Status != StatusCompleted {
		t.Fatalf("%+v", o)
	}
	got, _ := json.Marshal(o.Output)
	want := `[{"type":"text","text":"a 1 {\"b\":2}"},{"type":"text","text":"plain"},{"type":"text","text":"{\"x\":1}"},{"type":"json","value":{"y":[1,"2"]}},{"type":"json","value":null},{"type":"text","text":"[error] e"}]`
	if string(got) != want {
		t.Fatalf("output\n got %s\nwant %s", got, want)
	}
}

func TestOutputLimit(t *testing.T) { // P2, S5
	lim := defaultLimits()
	lim.MaxOutputBytes = 1024
	cases := []string{
		`for (let i = 0; i < 1000; i++) text("0123456789")`,
		`text("x".repeat(2000))`,
		`return "x".repeat(5000)`,
		`text("x".repeat(900)); return "y".repeat(200)`,
		// A cell that catches the limit error still fails: the limit is not advisory.
		`try { text("x".repeat(5000)) } catch (e) {} return 1`,
	}
	for _, code := range cases {
		t.Run(code, func(t *testing.T) {
			r, o := runCell(t, nil, code, lim)
			r.Close()
			if o.Status != StatusFailed || o.Code != api.CodeOutputLimit {
				t.Fatalf("got %s %s %q", o.Status, o.Code, o.Error)
			}
			n := 0
			for _, e := range o.Output {
				n += len(e.Text) + len(e.Value)
			}
			if n > lim.MaxOutputBytes {
				t.Fatalf("returned %d bytes of output, limit %d", n, lim.MaxOutputBytes)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		code, want string
		codeWant   api.ErrorCode
	}{
		// issue 22 item 5: every terminal failure has a code; the cell's own are cell_error.
		{"throw new TypeError('boom')", "TypeError: boom (line 1:", api.CodeCellError},
		{"\n\nnull.x", "TypeError: cannot read property 'x' of null (line 3:", api.CodeCellError},
		{"function f() {\n  throw new RangeError('deep')\n}\nf()", "RangeError: deep (line 2:", api.CodeCellError},
		{"throw 'plain'", "Uncaught plain", api.CodeCellError},
		{"throw {a: 1}", `Uncaught {"a":1}`, api.CodeCellError},
		{"throw null", "Uncaught null", api.CodeCellError},
		{"const e = new Error('m'); e.code = 'E_X'; throw e", "Error: m [E_X]", api.CodeCellError},
		{"return 1 +", "SyntaxError", api.CodeInvalidInput},
		{"let x = ;", "SyntaxError", api.CodeInvalidInput},
		{"await new Promise(() => {})", "nothing will settle", api.CodeCellError},
		{"Promise.reject(new Error('late')); return 1", "", ""}, // unhandled rejections do not fail a completed cell
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			o := exec(t, c.code)
			if c.want == "" {
				if o.Status != StatusCompleted {
					t.Fatalf("got %+v", o)
				}
				return
			}
			if o.Status != StatusFailed || !strings.Contains(o.Error, c.want) || o.Code != c.codeWant {
				t.Fatalf("got %s %q code %q; want error containing %q code %q", o.Status, o.Error, o.Code, c.want, c.codeWant)
			}
		})
	}
}

func TestCatchableFailures(t *testing.T) { // G5, DESIGN: deep recursion is a catchable RangeError
	o := exec(t, `
		function f(n) { return f(n + 1) + 1 }
		let caught = null
		try { f(0) } catch (e) { caught = e instanceof RangeError }
		let toolErr = null
		try { await tools.callValue("x", {}) } catch (e) { toolErr = e }
		return {caught, survived: 1 + 1}`)
	if o.Status != StatusCompleted || string(o.Value) != `{"caught":true,"survived":2}` {
		t.Fatalf("%+v", o)
	}
}

func TestTimeouts(t *testing.T) { // R2, S4: the deadline holds whatever the guest does
	lim := defaultLimits()
	lim.Timeout = 300 * time.Millisecond
	cases := []string{
		`while (true) {}`,
		`for (;;) { Math.sqrt(2) }`,
		`let s = 0; while (true) { try { s++ } catch (e) {} }`,
		`while (true) { try { while (true) {} } catch (e) {} }`,
		`while (true) { await null }`,
		`function f() { Promise.resolve().then(f) } f(); await new Promise(() => {})`,
		`/(a+)+$/.test("a".repeat(40) + "!")`,
		`"a".repeat(1 << 24).replaceAll("a", "bb")`,
		`Error.prepareStackTrace = () => { while (true) {} }; throw new Error("x")`,
		`throw { get message() { while (true) {} } }`,
		`return { toJSON() { while (true) {} } }`,
		`const big = []; for (let i = 0; i < 1e9; i++) big.concat([i])`,
		`await new Promise(r => setTimeout(r, 60000))`,
	}
	for _, code := range cases {
		t.Run(code, func(t *testing.T) {
			start := time.Now()
			r, o := runCell(t, nil, code, lim)
			r.Close()
			took := time.Since(start)
			if o.Status == StatusCompleted {
				t.Fatalf("completed: %s", o.Value)
			}
			if o.Status == StatusFailed && o.Code != api.CodeTimeout && !strings.Contains(o.Error, "memory") {
				t.Fatalf("failed with %q (%s), want a timeout", o.Error, o.Code)
			}
			// A generous bound: the point is that it ends near timeoutMs, not after a minute.
			if took > lim.Timeout+3*time.Second {
				t.Fatalf("took %v with a %v timeout", took, lim.Timeout)
			}
		})
	}
	// The process is still responsive.
	if o := exec(t, "return 'alive'"); string(o.Value) != `"alive"` {
		t.Fatalf("%+v", o)
	}
}

func TestMemoryLimit(t *testing.T) { // R3: the VM fails, the host does not
	lim := defaultLimits()
	lim.MemoryLimit = 8 << 20
	lim.Timeout = 15 * time.Second // the limit, not the deadline, must end these (even on a busy machine)
	cases := []string{
		`const a = []; while (true) a.push("x".repeat(1000) + a.length)`,
		`return new ArrayBuffer(64 << 20).byteLength`,
		`let a = ["x"]; while (true) a = a.concat(a)`,
	}
	for _, code := range cases {
		t.Run(code, func(t *testing.T) {
			r, o := runCell(t, nil, code, lim)
			r.Close()
			if o.Status != StatusFailed {
				t.Fatalf("got %s %s", o.Status, o.Value)
			}
			if !strings.Contains(o.Error, "memory") && !strings.Contains(o.Error, "RangeError") {
				t.Fatalf("error %q", o.Error)
			}
			// issue 22 item 5: the memory limit has its own code, so an embedder can branch on it.
			if strings.HasPrefix(o.Error, "memory limit exceeded") != (o.Code == api.CodeMemoryLimit) {
				t.Fatalf("code %q for %q", o.Code, o.Error)
			}
		})
	}
	// Many small objects make QuickJS collect garbage harder as the heap fills: whether the
	// memory limit or the deadline ends it, the VM ends and the host carries on.
	lim.Timeout = 500 * time.Millisecond
	// QuickJS-NG's out-of-memory error is catchable, and when even the error object cannot be
	// allocated the engine throws null: a cell that catches it goes on within its limit.
	r, o := runCell(t, nil, `try { const a = []; while (true) a.push({a: [1, 2, 3]}) } catch (e) { return "caught " + e }`, lim)
	r.Close()
	caughtNull := o.Status == StatusCompleted && string(o.Value) == `"caught null"`
	if !caughtNull && (o.Status != StatusFailed || !(o.Code == api.CodeTimeout || o.Code == api.CodeMemoryLimit)) {
		t.Fatalf("%+v", o)
	}
	if o := exec(t, "return 'alive'"); string(o.Value) != `"alive"` {
		t.Fatalf("%+v", o)
	}
}

func TestNoHostAccess(t *testing.T) { // S3
	o := exec(t, `
		const names = ["require", "process", "module", "exports", "fetch", "XMLHttpRequest", "WebSocket",
			"Deno", "Bun", "std", "os", "print", "scriptArgs", "setInterval", "Worker", "__filename", "global"];
		const present = names.filter(n => typeof globalThis[n] !== "undefined");
		let dyn = null;
		try { await eval("import('fs')") } catch (e) { dyn = String(e) }
		let fn = null;
		try { await new Function("return import('os')")() } catch (e) { fn = String(e) }
		return {present, dyn: dyn !== null, fn: fn !== null}`)
	if o.Status != StatusCompleted || string(o.Value) != `{"present":[],"dyn":true,"fn":true}` {
		t.Fatalf("%+v", o)
	}
}

func TestTamperedGlobals(t *testing.T) { // DESIGN security lessons: the host never relies on guest globals
	o := exec(t, `
		const m = new Map([["k", 1]]);
		JSON.stringify = () => '"forged"';
		JSON.parse = () => ({forged: true});
		Array.prototype[Symbol.iterator] = function* () { yield "forged" };
		Object.defineProperty = () => { throw new Error("no") };
		Promise.prototype.then = function () { throw new Error("hijacked") };
		Map.prototype.forEach = () => {};
		Error = function () { return {forged: true} };
		delete globalThis.tools; delete globalThis.text;
		globalThis.json = null;
		console.log("still logging");
		return {m, n: [1, 2]}`)
	if o.Status != StatusCompleted || string(o.Value) != `{"m":{"k":1},"n":[1,2]}` {
		t.Fatalf("%+v", o)
	}
	if len(o.Output) != 1 || o.Output[0].Text != "still logging" {
		t.Fatalf("output %+v", o.Output)
	}
}

func TestBridge(t *testing.T) { // X9: nested calls drain inside the same exec
	host := &fakeHost{delay: 5 * time.Millisecond}
	r, o := runCell(t, host, `
		const one = await tools.callValue("a", {n: 1});
		const many = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(n => tools.callValue("b", {n})));
		const found = await tools.search("files", {limit: 3});
		let err = null;
		try { await tools.describe(42) } catch (e) { err = e.message }
		return {one, n: many.length, last: many[9], found: found.op}`, defaultLimits())
	r.Close()
	if o.Status != StatusCompleted {
		t.Fatalf("%+v", o)
	}
	want := `{"one":{"id":"a","input":{"n":1}},"n":10,"last":{"id":"b","input":{"n":10}},"found":"search"}`
	if string(o.Value) != want {
		t.Fatalf("got %s", o.Value)
	}
	if len(host.calls) != 11 {
		t.Fatalf("%d calls", len(host.calls))
	}
}

func TestBridgeErrorsAreCatchable(t *testing.T) { // G4, G5, Z3
	host := &fakeHost{fail: true}
	r, o := runCell(t, host, `
		try { await tools.callValue("a", {}) } catch (e) {
			return {isError: e instanceof Error, name: e.name, message: e.message, code: e.code, hasStack: typeof e.stack}
		}`, defaultLimits())
	r.Close()
	if o.Status != StatusCompleted || string(o.Value) != `{"isError":true,"name":"Error","message":"tool exploded","code":"tool_error","hasStack":"string"}` {
		t.Fatalf("%+v %s", o, o.Value)
	}
}

func TestConcurrencyLimit(t *testing.T) { // E3: at most MaxPending run at once; more are queued
	host := &maxHost{}
	lim := defaultLimits()
	lim.MaxPending = 3
	r, o := runCell(t, host, `return (await Promise.all(Array.from({length: 20}, (_, i) => tools.callValue("t", {i})))).length`, lim)
	r.Close()
	if o.Status != StatusCompleted || string(o.Value) != "20" {
		t.Fatalf("%+v", o)
	}
	if host.max.Load() > 3 {
		t.Fatalf("%d calls ran at once, limit 3", host.max.Load())
	}
}

type maxHost struct {
	fakeHost
	cur, max atomic.Int64
}

func (h *maxHost) Async(ctx context.Context, c *Call) ([]byte, error) {
	n := h.cur.Add(1)
	for {
		m := h.max.Load()
		if n <= m || h.max.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(2 * time.Millisecond)
	h.cur.Add(-1)
	return []byte("1"), nil
}

func TestTimers(t *testing.T) {
	o := exec(t, `
		const order = [];
		setTimeout(() => order.push("b"), 20);
		setTimeout(() => order.push("a"), 1);
		const t = setTimeout(() => order.push("never"), 5);
		clearTimeout(t);
		await new Promise(r => setTimeout(r, 40));
		return order`)
	if o.Status != StatusCompleted || string(o.Value) != `["a","b"]` {
		t.Fatalf("%+v %s", o, o.Value)
	}
	// A cleared timer does not keep the run alive.
	start := time.Now()
	o = exec(t, `const t = setTimeout(() => {}, 1500); clearTimeout(t); return 1`)
	if o.Status != StatusCompleted || time.Since(start) > time.Second {
		t.Fatalf("%+v after %v", o, time.Since(start))
	}
}

func TestRandomAndClock(t *testing.T) { // Math.random is re-seeded per VM; Date is the real clock
	a := exec(t, "return [Math.random(), Math.random()]")
	b := exec(t, "return [Math.random(), Math.random()]")
	if string(a.Value) == string(b.Value) {
		t.Fatalf("two VMs produced the same random sequence %s", a.Value)
	}
	o := exec(t, "return Date.now()")
	var ms float64
	_ = json.Unmarshal(o.Value, &ms)
	if d := time.Since(time.UnixMilli(int64(ms))); d < -5*time.Second || d > 5*time.Second {
		t.Fatalf("guest clock off by %v", d)
	}
}

func TestYieldAndResume(t *testing.T) { // X8, W1: lexical state and output survive several cycles
	r, o := runCell(t, nil, `
		let count = 0;
		const before = "kept";
		text("before");
		for (let i = 0; i < 3; i++) { await yield_control("step " + i); count++; text("after " + i) }
		return {count, before}`, defaultLimits())
	defer r.Close()
	var outputs []string
	for i := 0; o.Status == StatusWaiting; i++ {
		if o.Reason != ReasonYield {
			t.Fatalf("reason %q", o.Reason)
		}
		// The cell's reason names the pending yield, so the model sees why it paused.
		if want := fmt.Sprintf(`yield_control("step %d")`, i); len(o.PendingToolCalls) != 1 || o.PendingToolCalls[0].Tool != want {
			t.Fatalf("pending %+v, want one %s", o.PendingToolCalls, want)
		}
		for _, e := range o.Output {
			outputs = append(outputs, e.Text)
		}
		if i > 5 {
			t.Fatal("too many cycles")
		}
		o = r.Resume(context.Background(), defaultLimits())
	}
	for _, e := range o.Output {
		outputs = append(outputs, e.Text)
	}
	if o.Status != StatusCompleted || string(o.Value) != `{"count":3,"before":"kept"}` {
		t.Fatalf("%+v", o)
	}
	if got := strings.Join(outputs, ","); got != "before,after 0,after 1,after 2" {
		t.Fatalf("output delivered as %q", got)
	}
}

func TestSuspendOnSlowCall(t *testing.T) { // X8, W1: pending calls keep running while suspended
	host := &fakeHost{release: make(chan struct{})}
	lim := defaultLimits()
	lim.Timeout = 200 * time.Millisecond
	r, o := runCell(t, host, `text("started"); const v = await tools.callValue("slow", {x: 1}); text("got it"); return v`, lim)
	defer r.Close()
	if o.Status != StatusWaiting || o.Reason != ReasonPendingTools || len(o.PendingToolCalls) != 1 || o.PendingToolCalls[0].Tool != "slow" {
		t.Fatalf("%+v", o)
	}
	if hotMode {
		// A hot run counts the most its snapshot can take, within maxSnapshotBytes (W5).
		if !r.Hot() || r.SnapshotBytes() == 0 || r.SnapshotBytes() > int(lim.MaxSnapshotBytes) {
			t.Fatalf("hot: %v, counted %d bytes", r.Hot(), r.SnapshotBytes())
		}
	} else if r.SnapshotBytes() == 0 || r.SnapshotBytes() > 300<<10 {
		t.Fatalf("snapshot is %d bytes", r.SnapshotBytes())
	}
	// Nothing settled: a wait returns waiting again after its timeout, without restoring.
	o = r.Resume(context.Background(), lim)
	if o.Status != StatusWaiting {
		t.Fatalf("%+v", o)
	}
	close(host.release)
	o = r.Resume(context.Background(), lim)
	if o.Status != StatusCompleted || string(o.Value) != `{"id":"slow","input":{"x":1}}` {
		t.Fatalf("%+v", o)
	}
	if len(o.Output) != 1 || o.Output[0].Text != "got it" {
		t.Fatalf("output %+v", o.Output)
	}
}

func TestSnapshotLimit(t *testing.T) { // W3, S5
	lim := defaultLimits()
	lim.MaxSnapshotBytes = 2048
	r, o := runCell(t, nil, `await yield_control(); return 1`, lim)
	r.Close()
	if o.Status != StatusFailed || o.Code != api.CodeSnapshotLimit {
		t.Fatalf("%+v", o)
	}
}

func TestConcurrentRuns(t *testing.T) { // 50 execs at once, each in its own VM
	testEngine(t)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			lim := defaultLimits()
			lim.Timeout = 30 * time.Second // 50 VMs share two cores; this is about isolation, not speed
			r, o := runCell(t, nil, fmt.Sprintf(`globalThis.mine = %d; await new Promise(r => setTimeout(r, 10)); let s = 0; for (let j = 0; j < 10000; j++) s += j; return [globalThis.mine, s]`, i), lim)
			r.Close()
			if want := fmt.Sprintf("[%d,49995000]", i); o.Status != StatusCompleted || string(o.Value) != want {
				errs <- fmt.Errorf("run %d: %s %s %s", i, o.Status, o.Value, o.Error)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	testEngine(t)
	before := runtime.NumGoroutine()
	host := &fakeHost{release: make(chan struct{})}
	lim := defaultLimits()
	lim.Timeout = 100 * time.Millisecond
	var runs []*Run
	for i := 0; i < 10; i++ {
		r, o := runCell(t, host, `await Promise.all([tools.callValue("a"), tools.callValue("b"), new Promise(r => setTimeout(r, 60000))]); return 1`, lim)
		if o.Status != StatusWaiting {
			t.Fatalf("%+v", o)
		}
		runs = append(runs, r)
	}
	for _, r := range runs {
		r.Close()
		r.WaitIdle()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

func TestCancelledContext(t *testing.T) {
	eng, tmpl := testEngine(t)
	prog, _ := source.Prepare(`await tools.callValue("slow"); return 1`, source.JavaScript)
	ctx, cancel := context.WithCancel(context.Background())
	host := &fakeHost{release: make(chan struct{})}
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	r, o := eng.Start(ctx, host, tmpl, defaultLimits(), Cell{Program: prog, CallID: "call"})
	r.Close()
	if o.Status != StatusFailed || !strings.Contains(o.Error, "cancel") {
		t.Fatalf("%+v", o)
	}
}

func TestCorruptSnapshots(t *testing.T) {
	eng, _ := testEngine(t)
	r, o := runCell(t, nil, `await yield_control(); return 1`, defaultLimits())
	defer r.Close()
	if o.Status != StatusWaiting {
		t.Fatal(o)
	}
	good := append([]byte(nil), r.snapshot...)
	for _, mutate := range []func([]byte) []byte{
		func(b []byte) []byte { return b[:10] },
		func(b []byte) []byte { b[5] ^= 1; return b },
		func(b []byte) []byte { b[60] ^= 0xff; return b },
		func(b []byte) []byte { b[len(b)-3] ^= 0xff; return b },
		func(b []byte) []byte { b[88] = 0xff; return b },
		func(b []byte) []byte { return b[:len(b)/2] },
		func(b []byte) []byte { b[85] = 1; return b },
	} {
		if _, err := DecodeSnapshot(eng.snapKey, empty, mutate(append([]byte(nil), good...))); err == nil {
			t.Error("corrupt snapshot decoded")
		}
	}
	img, err := DecodeSnapshot(eng.snapKey, empty, good)
	if err != nil {
		t.Fatal(err)
	}
	if len(img.Memory) == 0 {
		t.Fatal("empty image")
	}
}

func FuzzSnapshot(f *testing.F) {
	eng, _ := testEngine(f)
	r, o := runCell(f, nil, `await yield_control(); return 1`, defaultLimits())
	if o.Status != StatusWaiting {
		f.Fatal(o)
	}
	f.Add(append([]byte(nil), r.snapshot...))
	r.Close()
	f.Add([]byte("CMS1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		img, err := DecodeSnapshot(eng.snapKey, empty, data)
		if err != nil {
			return
		}
		// A decodable image with garbage inside must fail cleanly, never crash the process.
		vm, err := eng.newVM(context.Background(), img, 8<<20)
		if err != nil {
			return
		}
		defer vm.Close()
		_, _ = vm.Eval("1+1", "x.js", 0)
	})
}
