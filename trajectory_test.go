package codemode

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/progress"
)

func TestTrajectory(t *testing.T) { // E2, §19: control calls and nested calls, with their parent
	var rec recorder
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
		for _, ev := range rec.events() {
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

	evs := rec.events()
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
	sink := progress.Sink(func(p, total float64, msg string) {
		mu.Lock()
		got = append(got, msg)
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
	if strings.Join(got, "|") != "native:app:chatty: one|native:app:chatty: two" {
		t.Fatalf("progress %q", got)
	}
}
