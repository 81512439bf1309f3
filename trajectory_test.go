package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/progress"
	"github.com/codemode-go/codemode/internal/testtools/trajtest"
	"github.com/codemode-go/codemode/internal/trajectory"
)

func TestTrajectory(t *testing.T) { // E2, §19: control calls and nested calls, with their parent
	var rec trajtest.Recorder
	rt := newRuntime(t, testConfig(t, func(c *config.Config) { c.Tools.CodeMode.TimeoutMs = 300 }), func(o *Options) {
		o.Trajectory = &rec
		o.Hooks = []api.BeforeToolCallHook{func(ctx context.Context, ev *api.ToolCallEvent) (api.HookDecision, error) {
			if ev.ToolID == "native:core:echo" {
				return api.HookDecision{Input: json.RawMessage(`{"rewritten":true}`)}, nil
			}
			return api.HookDecision{}, nil
		}}
	})
	rc := api.RunContext{AgentID: "a", SessionKey: "s", RunID: "r", SenderID: "u1", Channel: "cli"}
	slow := &api.Tool{Name: "slow", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		if c.Update != nil {
			c.Update(api.ContentBlock{Type: "text", Text: "halfway"})
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	s := rt.Activate(rc, append(fixtureTools(), slow))
	r := s.Handle(context.Background(), "call_1", "exec", json.RawMessage(`{"code":"await tools.echo({a: 1}); await tools.read({path: 'x'}); return 1"}`))
	mustComplete(t, *r.Exec)
	s.Handle(context.Background(), "call_2", "image", json.RawMessage(`{}`))
	w := s.Handle(context.Background(), "call_3", "exec", json.RawMessage(`{"code":"tools.slow({}); await yield_control(); return 2"}`))
	if w.Exec.Status != api.StatusWaiting {
		t.Fatalf("%+v", w.Exec)
	}
	hasUpdate := func() bool {
		for _, ev := range rec.Events("") {
			if ev.Kind == api.EventUpdate && ev.ParentCallID == "call_3" && ev.Update.Text == "halfway" {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(5 * time.Second); !hasUpdate() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	rt.CancelRun(w.Exec.RunID)

	evs := rec.Events("")
	byCall := map[string]api.TrajectoryEvent{}
	for _, ev := range evs {
		if ev.Kind != api.EventUpdate {
			byCall[ev.CallID] = ev
		}
		if ev.Run != rc {
			t.Fatalf("event without the run context: %+v", ev)
		}
	}
	exec := byCall["call_1"]
	if exec.Kind != api.EventControl || exec.Tool != "exec" || exec.Status != api.StatusCompleted || !strings.Contains(string(exec.Result), `"value":1`) {
		t.Fatalf("exec: %+v", exec)
	}
	echo, read := byCall["call_1/1"], byCall["call_1/2"]
	if echo.Kind != api.EventNested || echo.ParentCallID != "call_1" || echo.Tool != "native:core:echo" ||
		string(echo.Input) != `{"rewritten":true}` || string(echo.OriginalInput) != `{"a":1}` || echo.Status != "ok" {
		t.Fatalf("echo: %+v", echo)
	}
	if read.Tool != "native:core:read" || !strings.Contains(string(read.Result), "hello from x") {
		t.Fatalf("read: %+v", read)
	}
	if d := byCall["call_2"]; d.Kind != api.EventDirect || d.Tool != "image" || d.Status != "ok" {
		t.Fatalf("direct: %+v", d)
	}
	if e := byCall["call_3"]; e.Status != api.StatusWaiting || e.CodeModeRunID == "" {
		t.Fatalf("waiting exec: %+v", e)
	}
	if !hasUpdate() {
		t.Fatalf("the slow tool's progress update is not in the trajectory: %+v", evs)
	}
}

func TestProgressReachesTheCaller(t *testing.T) { // E1: a nested call's updates reach the exec's progress sink
	var mu sync.Mutex
	var got []string
	var last, lastTotal float64
	sink := progress.Sink(func(p, total float64, msg string) {
		mu.Lock()
		got = append(got, msg)
		last, lastTotal = p, total
		mu.Unlock()
	})
	chatty := &api.Tool{Name: "chatty", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		c.Update(api.ContentBlock{Type: "text", Text: "one"})
		c.Update(api.ContentBlock{Type: "text", Text: "two"})
		return api.TextResult("done", nil)
	}}
	s := newRuntime(t, testConfig(t)).Activate(api.RunContext{}, []*api.Tool{chatty})
	ctx := progress.With(context.Background(), sink)
	r := s.Handle(ctx, "c1", "exec", json.RawMessage(`{"code":"return await tools.chatty({})"}`))
	mustComplete(t, *r.Exec)
	mu.Lock()
	defer mu.Unlock()
	// The call's part of the stream is full when it returns (issue 21 item 1: parts of 100).
	if strings.Join(got, "|") != "native:app:chatty: one|native:app:chatty: two|native:app:chatty: done" || last != 100 || lastTotal != 100 {
		t.Fatalf("progress %q, last %g of %g", got, last, lastTotal)
	}
}

// A trajectory flood stays within its cap (issue 18 item 6): a cell looping over failing nested
// calls, and a tool streaming progress as fast as it can, against a file log of 256 KiB (one
// rotated file kept). What the limits left out is counted in the log.
func TestTrajectoryFloodStaysWithinItsCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	const maxBytes = 256 << 10
	w, err := trajectory.CreateLimited(path, trajectory.Limits{MaxBytes: maxBytes, MaxFiles: 1, MaxEventsPerCall: 500})
	if err != nil {
		t.Fatal(err)
	}
	fail := &api.Tool{Name: "fail", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		return nil, errors.New("no such file: " + strings.Repeat("x", 200))
	}}
	chatty := &api.Tool{Name: "chatty", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		for i := range 20000 {
			c.Update(api.ContentBlock{Type: "text", Text: fmt.Sprintf("progress %d %s", i, strings.Repeat("y", 100))})
		}
		return api.TextResult("done", nil)
	}}
	rt := newRuntime(t, testConfig(t), func(o *Options) { o.Trajectory = w })
	s := rt.Activate(api.RunContext{SessionKey: "flood"}, []*api.Tool{fail, chatty})
	if got := mustComplete(t, execCode(t, s, `return (await tools.chatty({})) === "done"`)); got != "true" {
		t.Fatalf("got %s", got)
	}
	r := execCode(t, s, `let n = 0
		for (let i = 0; i < 5000; i++) { try { await tools.fail({}) } catch (e) { n++ } }
		return n`)
	if got := mustComplete(t, r); got != "5000" {
		t.Fatalf("got %s", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var events []api.TrajectoryEvent
	total := int64(0)
	for _, name := range []string{path + ".1", path} {
		st, err := os.Stat(name)
		if err != nil {
			continue // one file may be all it took
		}
		total += st.Size()
		f, _ := os.Open(name)
		evs, bad, err := trajectory.Read(f)
		f.Close()
		if err != nil || len(bad) > 0 {
			t.Fatal(err, bad)
		}
		events = append(events, evs...)
	}
	if _, err := os.Stat(path + ".2"); err == nil || total > 2*maxBytes {
		t.Fatalf("the log holds %d bytes (cap %d)", total, 2*maxBytes)
	}
	counts := map[string]int{}
	for _, ev := range events {
		counts[ev.Kind]++
		if ev.Kind == api.EventDropped {
			var d struct{ Count int }
			_ = json.Unmarshal(ev.Result, &d)
			counts["dropped count"] += d.Count
		}
	}
	// 20,000 updates coalesced to a few (one per second per call), 4,500 nested calls counted.
	if counts[api.EventControl] != 2 || counts[api.EventDropped] != 2 || counts["dropped count"] < 20000-100+4500 ||
		counts[api.EventUpdate] == 0 || counts[api.EventUpdate] > 100 || counts[api.EventNested] != 501 {
		t.Fatalf("events by kind %v", counts)
	}
	t.Logf("%d bytes of log for 5,000 failing calls and 20,000 updates; by kind %v", total, counts)
}
