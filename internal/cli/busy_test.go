package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/gateway"
	"github.com/codemode-go/codemode/internal/runstore"
)

// issue 20 item 3: `codemode wait` on a run another wait holds (here a wait of another client of
// the same shared store, renewing its lease) is told `busy` with retryAfterMs; it says so on
// stderr, retries, and returns the run's real result once the holder lets go.
func TestWaitRetriesBusy(t *testing.T) {
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
	cfg := config.Default()
	cfg.Tools.CodeMode.Enabled = true
	cfg.Tools.CodeMode.TimeoutMs = 800 // how long the holding wait keeps the run
	cfg.Workspace = t.TempDir()
	store := runstore.NewMemDurable(runstore.Limits{})
	store.SetTakeover(300 * time.Millisecond) // the lease, renewed while the holder runs: the busy hint
	// As `codemode wait` opens it (runWait), with the shared store given directly.
	g, err := gateway.Open(context.Background(), cfg, gateway.Options{RunStore: store, Tools: []*api.Tool{block}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.RT.Err() != nil {
		t.Skipf("code mode runtime unavailable (run `make wasm`): %v", g.RT.Err())
	}
	s := g.Surface(cliRun, nil)
	ctx := context.Background()
	r := s.Exec(ctx, "exec_1", codemode.ExecInput{Code: `await yield_control(); const v = await tools.block({}); return v.released ? "done" : "?"`})
	if r.Status != api.StatusWaiting {
		t.Fatalf("%+v", r)
	}
	holder := make(chan api.ExecResult, 1)
	go func() { holder <- s.Wait(ctx, "other", codemode.WaitInput{RunID: r.RunID}) }()
	<-started // the holder drives the run into the blocked call and keeps it until its timeout
	var stderr bytes.Buffer
	got := make(chan api.ExecResult, 1)
	go func() { got <- waitRetryingBusy(ctx, s, "wait_1", r.RunID, &stderr) }()
	if h := <-holder; h.Status != api.StatusWaiting {
		t.Fatalf("the holding wait: %+v", h)
	}
	close(release)
	res := <-got
	if res.Status != api.StatusCompleted || string(res.Value) != `"done"` {
		t.Fatalf("%+v", res)
	}
	if msg := stderr.String(); !strings.Contains(msg, "run "+r.RunID+" is busy (another wait holds it); retrying in ") || strings.Count(msg, "\n") != 1 {
		t.Fatalf("stderr: %q (want the busy notice once)", msg)
	}
}
