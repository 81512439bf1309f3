package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
)

// outputBytes is what a result's output costs as the JSON a client receives.
func outputBytes(o Outcome) int {
	b, _ := json.Marshal(o.Output)
	return len(b)
}

// issue 18 item 3: every entry costs, so an empty text(”) flood fails fast with a bounded
// response, and a cell that catches the error still fails.
func TestOutputEntriesCost(t *testing.T) {
	lim := defaultLimits()
	for _, code := range []string{
		`for (;;) text('')`,
		`for (;;) { try { text('') } catch {} }`,
		`for (;;) json(null)`,
	} {
		start := time.Now()
		r, o := runCell(t, nil, code, lim)
		r.Close()
		if o.Status != StatusFailed || o.Code != api.CodeOutputLimit {
			t.Fatalf("%s: %s %s %q", code, o.Status, o.Code, o.Error)
		}
		if n := outputBytes(o); n > lim.MaxOutputBytes || len(o.Output) > MaxOutputEntries {
			t.Fatalf("%s: %d entries, %d bytes of JSON (limit %d)", code, len(o.Output), n, lim.MaxOutputBytes)
		}
		// The code above says it was the output limit, not the deadline, that ended it; this
		// generous bound proves the flood was not left to run on.
		if took := time.Since(start); took > 4*lim.Timeout {
			t.Fatalf("%s took %v", code, took)
		}
	}
	// The entry bound holds with a large byte budget too.
	big := lim
	big.MaxOutputBytes = 10 << 20
	r, o := runCell(t, nil, `for (;;) text('')`, big)
	r.Close()
	if o.Code != api.CodeOutputLimit || len(o.Output) != MaxOutputEntries {
		t.Fatalf("%s %d entries", o.Code, len(o.Output))
	}
}

// issue 22 item 3: the console never fails a cell; past its cap one marker says what was dropped.
func TestConsoleNeverFails(t *testing.T) {
	lim := defaultLimits()
	r, o := runCell(t, nil, `for (let i = 0; i < 5000; i++) console.log("line " + i); text("after"); return "done"`, lim)
	r.Close()
	if o.Status != StatusCompleted || string(o.Value) != `"done"` {
		t.Fatalf("%s %s %q", o.Status, o.Value, o.Error)
	}
	if n := outputBytes(o); n > lim.MaxOutputBytes {
		t.Fatalf("%d bytes of output (limit %d)", n, lim.MaxOutputBytes)
	}
	markers, kept := 0, 0
	var marker string
	for _, e := range o.Output {
		switch {
		case strings.HasPrefix(e.Text, "[console output truncated"):
			markers++
			marker = e.Text
		case strings.HasPrefix(e.Text, "line "):
			kept++
		}
	}
	if markers != 1 || kept == 0 || !strings.Contains(marker, fmt.Sprintf(" %d more console lines", 5000-kept)) {
		t.Fatalf("%d markers, %d lines kept, marker %q", markers, kept, marker)
	}
	if last := o.Output[len(o.Output)-1]; last.Text != "after" {
		t.Fatalf("text after the cap is lost: %+v", last)
	}
	// An endless console flood ends at the deadline with a bounded response.
	short := lim
	short.Timeout = 300 * time.Millisecond
	r, o = runCell(t, nil, `for (;;) console.log('')`, short)
	r.Close()
	if o.Code != api.CodeTimeout || outputBytes(o) > lim.MaxOutputBytes {
		t.Fatalf("%s %d bytes", o.Code, outputBytes(o))
	}
}

func TestConsoleLevelsAndInspection(t *testing.T) { // issue 22 item 3
	cases := []struct{ code, want string }{
		{`console.info("i"); console.warn("w", 1); console.error(new Error("boom")); console.debug("d")`,
			`[info] i|[warn] w 1|[error] Error: boom|[debug] d`},
		// Getters and toJSON never run; accessors are named.
		{`let ran = 0; const o = {get g() { ran++; return 1 }, toJSON() { ran++; return 2 }, v: 3}; console.log(o); console.log(ran)`,
			`{"g":[Getter],"toJSON":[Function toJSON],"v":3}|0`},
		{`const a = {x: 1}; a.self = a; console.log(a)`, `{"x":1,"self":[Circular]}`},
		{`console.log({a: {b: {c: {d: {e: 1}}}}})`, `{"a":{"b":{"c":{"d":[Object]}}}}`},
		{`console.log([1, "s", null, undefined, 2n, -0, NaN, [,1]])`, `[1,"s",null,undefined,2n,-0,NaN,[<empty>,1]]`},
		{`console.log(new Map([["k", 1]]), new Set([1]), Promise.resolve(1), new Uint8Array(2))`,
			`Map(1) {"k" => 1} Set(1) {1} [Promise: not awaited] [Uint8Array length 2]`},
		{`console.log(Object.fromEntries(Array.from({length: 60}, (_, i) => ["k" + i, i])))`, `… 10 more}`},
		{`console.log("x".repeat(5000))`, `…[message truncated]`},
		{`console.log(["y".repeat(600)])`, `"…]`},
		{`console.log("%s stays", 1)`, `%s stays 1`},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			o := exec(t, c.code+"; return 1")
			if o.Status != StatusCompleted {
				t.Fatalf("%+v", o)
			}
			var lines []string
			for _, e := range o.Output {
				lines = append(lines, e.Text)
			}
			got := strings.Join(lines, "|")
			if !strings.Contains(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestTextCodec(t *testing.T) { // issue 22 item 9
	cases := []struct{ code, want string }{
		{`return Array.from(new TextEncoder().encode("aé€😀"))`, `[97,195,169,226,130,172,240,159,152,128]`},
		{`return new TextDecoder().decode(new TextEncoder().encode("aé€😀\u0000z"))`, `"aé€😀\u0000z"`},
		{`return new TextDecoder().decode(new Uint8Array([0xff, 0x61, 0xe2, 0x82]))`, `"�a�"`},
		{`try { new TextDecoder("utf-8", {fatal: true}).decode(new Uint8Array([0xc3])) } catch (e) { return e instanceof TypeError }`, `true`},
		{`const d = new TextDecoder(); return d.decode(new Uint8Array([0xe2, 0x82]), {stream: true}) + d.decode(new Uint8Array([0xac]))`, `"€"`},
		{`return new TextDecoder().decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x61]))`, `"a"`},
		{`return new TextDecoder().decode(new TextEncoder().encode("x").buffer)`, `"x"`},
		{`const u = new Uint8Array(4); const r = new TextEncoder().encodeInto("é€", u); return [r.read, r.written, Array.from(u)]`, `[1,2,[195,169,0,0]]`},
		{`return new TextEncoder().encode("\ud800").length`, `3`}, // a lone surrogate is U+FFFD
		{`try { new TextDecoder("latin1") } catch (e) { return e instanceof RangeError }`, `true`},
		{`String.prototype.charCodeAt = () => 0; return new TextDecoder().decode(new TextEncoder().encode("ok"))`, `"ok"`},
		{`return [new TextEncoder().encoding, new TextDecoder().encoding]`, `["utf-8","utf-8"]`},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			o := exec(t, c.code)
			if o.Status != StatusCompleted || string(o.Value) != c.want {
				t.Fatalf("got %s %s %q, want %s", o.Status, o.Value, o.Error, c.want)
			}
		})
	}
}

// TextEncoder and TextDecoder instances survive wait (run again hot by TestHotMode).
func TestTextCodecSurvivesWait(t *testing.T) {
	r, o := runCell(t, nil, `const e = new TextEncoder(), d = new TextDecoder();
		const half = d.decode(new Uint8Array([0xe2, 0x82]), {stream: true});
		await yield_control();
		return half + d.decode(new Uint8Array([0xac])) + d.decode(e.encode("é"))`, defaultLimits())
	defer r.Close()
	if o.Status != StatusWaiting {
		t.Fatalf("%+v", o)
	}
	o = r.Resume(context.Background(), defaultLimits())
	if o.Status != StatusCompleted || string(o.Value) != `"€é"` {
		t.Fatalf("%+v", o)
	}
}

// seqHost's calls named "seq…" are one sequential group; it records how many run at once.
type seqHost struct {
	fakeHost
	mu       sync.Mutex
	now, max map[bool]int
	order    []string
}

func (h *seqHost) Precheck(c *Call) (any, error) {
	var p struct{ ID string }
	_ = json.Unmarshal(c.Payload, &p)
	if strings.HasPrefix(p.ID, "seq") {
		c.Sequential = "mcp:browser"
	}
	return nil, nil
}

func (h *seqHost) Async(ctx context.Context, c *Call) ([]byte, error) {
	var p struct{ ID string }
	_ = json.Unmarshal(c.Payload, &p)
	seq := strings.HasPrefix(p.ID, "seq")
	h.mu.Lock()
	h.now[seq]++
	h.max[seq] = max(h.max[seq], h.now[seq])
	if seq {
		h.order = append(h.order, p.ID)
	}
	h.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	h.mu.Lock()
	h.now[seq]--
	h.mu.Unlock()
	return json.Marshal(p.ID)
}

func TestSequentialCalls(t *testing.T) { // issue 22 item 8
	h := &seqHost{now: map[bool]int{}, max: map[bool]int{}}
	lim := defaultLimits()
	lim.MaxPending = 8
	r, o := runCell(t, h, `
		const ids = [];
		for (let i = 0; i < 6; i++) ids.push("seq" + i, "par" + i);
		return await Promise.all(ids.map(id => tools.callValue(id, {})))`, lim)
	r.Close()
	if o.Status != StatusCompleted {
		t.Fatalf("%+v", o)
	}
	if h.max[true] != 1 || h.max[false] < 2 {
		t.Fatalf("sequential ran %d at once, the others %d", h.max[true], h.max[false])
	}
	if !slices.Equal(h.order, []string{"seq0", "seq1", "seq2", "seq3", "seq4", "seq5"}) {
		t.Fatalf("order %v", h.order)
	}
}

// untrustedHost marks the results of ids starting with "web" as untrusted.
type untrustedHost struct{ fakeHost }

func (h *untrustedHost) Async(ctx context.Context, c *Call) ([]byte, error) {
	var p struct{ ID string }
	_ = json.Unmarshal(c.Payload, &p)
	if strings.HasPrefix(p.ID, "web") {
		c.Untrusted("native:core:" + p.ID)
	}
	return h.fakeHost.Async(ctx, c)
}

func TestProvenance(t *testing.T) { // issue 22 item 6: results name what untrusted content the cell saw
	h := &untrustedHost{}
	r, o := runCell(t, h, `await tools.callValue("plain", {}); return 1`, defaultLimits())
	r.Close()
	if o.Status != StatusCompleted || o.Untrusted != nil {
		t.Fatalf("%+v", o)
	}
	r, o = runCell(t, h, `await tools.callValue("web_fetch", {}); await tools.callValue("web_x", {}); await yield_control(); return 1`, defaultLimits())
	defer r.Close()
	if o.Status != StatusWaiting || !slices.Equal(o.Untrusted, []string{"native:core:web_fetch", "native:core:web_x"}) {
		t.Fatalf("%+v", o)
	}
	st, err := r.Export()
	if err != nil {
		t.Fatal(err)
	}
	eng, tmpl := testEngine(t)
	r2, err := eng.Import(tmpl, st, h, defaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if o := r2.Resume(context.Background(), defaultLimits()); o.Status != StatusCompleted || len(o.Untrusted) != 2 {
		t.Fatalf("provenance lost across export: %+v", o)
	}
}

// spillHost keeps oversized values like a result store would.
type spillHost struct {
	fakeHost
	got []Oversized
}

func (h *spillHost) SpillLimit() int { return 1 << 20 }
func (h *spillHost) Spill(v Oversized) []byte {
	h.got = append(h.got, v)
	b, _ := json.Marshal(map[string]any{"truncated": true, "bytes": v.Total, "complete": v.Complete})
	return b
}

func TestOversizedValueSpills(t *testing.T) { // issue 22 item 2
	h := &spillHost{}
	lim := defaultLimits()
	lim.Timeout = 20 * time.Second // building the value, not the deadline, is what this tests
	r, o := runCell(t, h, `text("x".repeat(60000)); return Array.from({length: 20000}, (_, i) => ({i, s: "v" + i}))`, lim)
	r.Close()
	if o.Status != StatusCompleted || len(h.got) != 1 {
		t.Fatalf("%s %q %d spills", o.Status, o.Error, len(h.got))
	}
	v := h.got[0]
	if !v.Complete || v.Total != len(v.JSON) || !json.Valid(v.JSON) || v.Budget > lim.MaxOutputBytes-60000-OutputEntryOverhead || v.Budget < ValueReserve {
		t.Fatalf("complete %v total %d budget %d", v.Complete, v.Total, v.Budget)
	}
	if string(o.Value) != fmt.Sprintf(`{"bytes":%d,"complete":true,"truncated":true}`, v.Total) {
		t.Fatalf("value %s", o.Value)
	}
	// Beyond what the host can keep, it gets the start of the value only.
	h.got = nil
	r, o = runCell(t, h, `return "y".repeat(2 << 20)`, lim)
	r.Close()
	if o.Status != StatusCompleted || len(h.got) != 1 || h.got[0].Complete || h.got[0].Total != 2<<20+2 || len(h.got[0].JSON) > 1<<20 {
		t.Fatalf("%+v", o)
	}
}

// slotRecorder is an admission slot that records the run's idle and busy transitions.
type slotRecorder struct {
	idle, busy, released atomic.Int32
}

func (s *slotRecorder) Idle() { s.idle.Add(1) }
func (s *slotRecorder) Busy(ctx context.Context, deadline time.Time) error {
	s.busy.Add(1)
	return nil
}
func (s *slotRecorder) Release() { s.released.Add(1) }

func TestIdleVMGivesItsSlotBack(t *testing.T) { // issue 18 item 4
	s := &slotRecorder{}
	lim := defaultLimits()
	lim.Admit = func(ctx context.Context) (Slot, error) { return s, nil }
	r, o := runCell(t, nil, `await new Promise(r => setTimeout(r, 30)); await new Promise(r => setTimeout(r, 30)); return 1`, lim)
	r.Close()
	if o.Status != StatusCompleted || s.idle.Load() < 2 || s.busy.Load() != s.idle.Load() || s.released.Load() != 1 {
		t.Fatalf("%s idle %d busy %d released %d", o.Status, s.idle.Load(), s.busy.Load(), s.released.Load())
	}
	// A VM that cannot get its CPU back before the deadline suspends instead of running late.
	deny := &denySlot{}
	lim.Admit = func(ctx context.Context) (Slot, error) { return deny, nil }
	lim.Timeout = 500 * time.Millisecond
	r, o = runCell(t, nil, `await new Promise(r => setTimeout(r, 10)); return 1`, lim)
	defer r.Close()
	if o.Status != StatusWaiting {
		t.Fatalf("%+v", o)
	}
}

type denySlot struct{ slotRecorder }

func (s *denySlot) Busy(ctx context.Context, deadline time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(deadline)):
		return context.DeadlineExceeded
	}
}

// issue 22 item 5: maxSnapshotBytes holds for hot suspensions as for cold ones (TestHotMode runs
// this again with hot VMs), whatever the guest holds.
func TestSnapshotLimitLargeState(t *testing.T) {
	lim := defaultLimits()
	lim.MaxSnapshotBytes = 1 << 20
	lim.MemoryLimit = 64 << 20
	lim.Timeout = 20 * time.Second // a loaded machine builds the state slowly
	r, o := runCell(t, nil, `const big = []; for (let i = 0; i < 1 << 17; i++) big.push(Math.random().toString(36));
		await yield_control(); return big.length`, lim)
	defer r.Close()
	if o.Status != StatusFailed || o.Code != api.CodeSnapshotLimit {
		t.Fatalf("8 MiB of guest state under a 1 MiB limit: %s %s %q", o.Status, o.Code, o.Error)
	}
}
