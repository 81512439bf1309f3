package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/provider"
)

// issue 20 item 3: a wait the model makes on a run another wait holds gets `busy`; the loop
// retries it after retryAfterMs instead of showing the model a failure, and the model reads the
// run's real result.
func TestHandleRetriesBusy(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	block := &api.Tool{Name: "block", Description: "Blocks until released.", ReadOnly: true,
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return api.TextResult("", map[string]any{"released": true})
		}}
	rec := &recorder{}
	rt := newRuntime(t, func(o *codemode.Options) {
		o.CodeMode.TimeoutMs = 800 // how long the holding wait keeps the run, and the busy hint
		o.Trajectory = rec
	})
	s := rt.Activate(api.RunContext{SessionKey: "busy"}, []*api.Tool{block})
	ctx := context.Background()
	r := s.Exec(ctx, "e1", codemode.ExecInput{Code: `await yield_control(); const v = await tools.block({}); return v.released ? "done" : "?"`})
	if r.Status != api.StatusWaiting {
		t.Fatalf("%+v", r)
	}
	// Another wait holds the run: it drives the VM into the blocked call, until its timeout.
	holder := make(chan api.ExecResult, 1)
	go func() { holder <- s.Wait(ctx, "w1", codemode.WaitInput{RunID: r.RunID}) }()
	<-started
	args, _ := json.Marshal(map[string]string{"runId": r.RunID})
	got := make(chan provider.ToolResult, 1)
	go func() {
		got <- handle(ctx, s, provider.ToolCall{ID: "call_1", Name: "wait", Arguments: args}, &Options{})
	}()
	if h := <-holder; h.Status != api.StatusWaiting {
		t.Fatalf("the holding wait: %+v", h)
	}
	close(release)
	out := <-got
	if out.IsError || !strings.Contains(out.Content, `"status":"completed"`) || !strings.Contains(out.Content, `"done"`) {
		t.Fatalf("the model read %q (error %v)", out.Content, out.IsError)
	}
	var busy, retried bool
	for _, ev := range rec.events(api.EventControl) {
		busy = busy || ev.CallID == "call_1" && strings.Contains(ev.Error, "already in progress")
		retried = retried || strings.HasPrefix(ev.CallID, "call_1#busy-") && ev.Status == api.StatusCompleted
	}
	if !busy || !retried {
		t.Fatalf("want a busy wait then a completed retry in the trajectory: busy %v, retried %v: %+v", busy, retried, rec.events(api.EventControl))
	}
}
