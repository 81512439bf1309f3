package provider

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// TestHammer: one Client per variant shared by many goroutines, with debug logging and the A10
// check on. Every reply must match its own request (no state shared between calls), and no
// goroutine may outlive the test.
func TestHammer(t *testing.T) {
	const workers, calls = 8, 15
	if testing.Short() {
		t.Skip("hammer")
	}
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) {
			checkGoroutines(t)
			echo := func(r *scripted.Request) scripted.Reply {
				text := r.Last().Text
				return scripted.Reply{Text: "echo:" + text, ToolCalls: []scripted.ToolCall{{Name: "exec", Arguments: fmt.Sprintf(`{"code":%q}`, text)}}}
			}
			srv := scripted.Start(t, scripted.Options{Repeat: echo, APIKey: testKey})
			var logs logBuffer
			var checks atomic.Int64
			c := newClient(t, srv, v, func(o *Options) {
				o.Logger = logs.logger()
				o.Debug = DebugOptions{Payload: DebugPayloadTools, SSE: DebugSSEPeek, Transport: true}
				check := a10()
				o.CheckPayload = func(n []string) error { checks.Add(1); return check(n) }
			})
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := range calls {
						text := fmt.Sprintf("worker %d call %d", w, i)
						req := Request{Model: "m", Tools: surface, Messages: []Message{{Role: RoleUser, Text: text}}}
						res, err := c.Complete(context.Background(), req)
						if err != nil {
							t.Error(err)
							return
						}
						if res.Text != "echo:"+text || len(res.ToolCalls) != 1 || !jsonEqual(res.ToolCalls[0].Arguments, fmt.Sprintf(`{"code":%q}`, text)) {
							t.Errorf("%s got %+v", text, res)
							return
						}
					}
				})
			}
			wg.Wait()
			if n := srv.Count(); n != workers*calls || checks.Load() != int64(n) {
				t.Errorf("server saw %d requests, CheckPayload ran %d times, want %d", n, checks.Load(), workers*calls)
			}
			if n := len(logs.records(t, "model payload tools")); n != workers*calls {
				t.Errorf("%d payload log records", n)
			}
		})
	}
}
