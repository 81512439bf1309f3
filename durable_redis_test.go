package codemode

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/runstore/redisstore"
	"github.com/codemode-go/codemode/internal/testtools/redistest"
	"github.com/redis/go-redis/v9"
)

// fleet is two runtimes ("processes") sharing one Redis, each with its own client.
type fleet struct {
	srv    *redistest.Server
	prefix string
	key    [32]byte
	tools  *fleetTools
}

// fleetTools are the tools of every process of a fleet: lookup is read-only (replay-safe),
// charge has side effects; both block until released, and count where they ran.
type fleetTools struct {
	mu      sync.Mutex
	release chan struct{}
	ran     map[string]int // "<process>/<tool>" → runs that finished
	started atomic.Int64
}

func (f *fleetTools) forProcess(name string) []*api.Tool {
	block := func(tool string) func(ctx context.Context, c *api.Call) (*api.Result, error) {
		return func(ctx context.Context, c *api.Call) (*api.Result, error) {
			f.started.Add(1)
			select {
			case <-f.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			f.mu.Lock()
			f.ran[name+"/"+tool]++
			f.mu.Unlock()
			return api.TextResult("", map[string]any{"tool": tool, "by": name})
		}
	}
	return []*api.Tool{
		{Name: "lookup", Description: "Read something slowly.", ReadOnly: true, Execute: block("lookup")},
		{Name: "charge", Description: "Charge a card slowly.", Execute: block("charge")},
	}
}

func (f *fleetTools) runs(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ran[key]
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	f := &fleet{srv: redistest.Start(t), prefix: "test:" + runstore.NewID() + ":",
		tools: &fleetTools{release: make(chan struct{}), ran: map[string]int{}}}
	for i := range f.key {
		f.key[i] = byte(i + 1)
	}
	return f
}

func (f *fleet) store(t *testing.T, key [32]byte) *redisstore.Store {
	t.Helper()
	st, err := redisstore.New(redisstore.Options{URL: f.srv.URL(), Key: key, Prefix: f.prefix, Timeout: time.Second,
		Lease: 400 * time.Millisecond}) // heartbeats every 80 ms, a silent replica's calls are lost after 400 ms
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// process starts a runtime on the fleet's store (or store) and activates its surface for scope.
func (f *fleet) process(t *testing.T, name string, scope api.RunContext, mutate func(*config.Config), store runstore.Durable) (*Runtime, *Surface) {
	t.Helper()
	cfg := testConfig(t, func(c *config.Config) {
		c.Tools.CodeMode.TimeoutMs = 300
		if mutate != nil {
			mutate(c)
		}
	})
	if store == nil {
		store = f.store(t, f.key)
	}
	rt := newRuntime(t, cfg, func(o *Options) { o.RunStore = &RunStore{d: store} })
	return rt, rt.Activate(scope, f.tools.forProcess(name))
}

var fleetScope = api.RunContext{AgentID: "cli", SessionKey: "cli", RunID: "cli"}

// waitUntilDone waits on s until the run ends or the bound passes.
func waitUntilDone(t *testing.T, s *Surface, runID string) api.ExecResult {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; ; i++ {
		res := s.Wait(context.Background(), "w", WaitInput{RunID: runID})
		if res.Status != api.StatusWaiting {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("still waiting: %+v", res)
		}
	}
}

func TestDurableFleet(t *testing.T) { // issue 15 items 2–3: exec on A, A dies, wait on B
	t.Run("ReplaySafeCallRunsAgain", func(t *testing.T) {
		f := newFleet(t)
		a, sa := f.process(t, "A", fleetScope, nil, nil)
		res := execCode(t, sa, `text("before"); const v = await tools.lookup({q: 1}); text("after"); return v`)
		if res.Status != api.StatusWaiting || res.RunID == "" || len(res.PendingToolCalls) != 1 {
			t.Fatalf("%+v", res)
		}
		a.Close() // A dies: its call is cancelled, its heartbeats stop
		_, sb := f.process(t, "B", fleetScope, nil, nil)
		close(f.tools.release)
		got := waitUntilDone(t, sb, res.RunID)
		if got.Status != api.StatusCompleted || string(got.Value) != `{"by":"B","tool":"lookup"}` {
			t.Fatalf("%+v %s %v", got, got.Value, f.tools.ran)
		}
		if len(got.Output) != 1 || got.Output[0].Text != "after" {
			t.Fatalf("output %+v", got.Output)
		}
		if f.tools.runs("A/lookup") != 0 || f.tools.runs("B/lookup") != 1 {
			t.Fatalf("%v", f.tools.ran)
		}
		// W4: the record is gone.
		if r := sb.Wait(context.Background(), "w", WaitInput{RunID: res.RunID}); r.Code != api.CodeInvalidInput || !strings.Contains(r.Error, "unavailable or expired") {
			t.Fatalf("%+v", r)
		}
	})

	t.Run("SideEffectIsNeverRerun", func(t *testing.T) {
		f := newFleet(t)
		a, sa := f.process(t, "A", fleetScope, nil, nil)
		res := execCode(t, sa, `try { await tools.charge({cents: 100}) } catch (e) { return [e.code, e.message] }`)
		if res.Status != api.StatusWaiting {
			t.Fatalf("%+v", res)
		}
		a.Close()
		_, sb := f.process(t, "B", fleetScope, nil, nil)
		close(f.tools.release)
		got := waitUntilDone(t, sb, res.RunID)
		var v []string
		_ = json.Unmarshal(got.Value, &v)
		if got.Status != api.StatusCompleted || len(v) != 2 || v[0] != "lost_on_replica" || !strings.Contains(v[1], "may or may not have run") {
			t.Fatalf("%+v", got)
		}
		if f.tools.runs("B/charge") != 0 {
			t.Fatal("the side effect ran again on B")
		}
	})

	t.Run("LiveOwnerDeliversItsResult", func(t *testing.T) {
		f := newFleet(t)
		_, sa := f.process(t, "A", fleetScope, nil, nil)
		res := execCode(t, sa, `return await tools.charge({cents: 5})`)
		if res.Status != api.StatusWaiting {
			t.Fatalf("%+v", res)
		}
		_, sb := f.process(t, "B", fleetScope, nil, nil)
		// A is alive and its call still runs: B waits for it, and says waiting at its deadline.
		if r := sb.Wait(context.Background(), "w1", WaitInput{RunID: res.RunID}); r.Status != api.StatusWaiting || r.RunID != res.RunID {
			t.Fatalf("%+v", r)
		}
		close(f.tools.release)
		got := waitUntilDone(t, sb, res.RunID)
		if got.Status != api.StatusCompleted || string(got.Value) != `{"by":"A","tool":"charge"}` {
			t.Fatalf("%+v", got)
		}
		if f.tools.runs("A/charge") != 1 || f.tools.runs("B/charge") != 0 {
			t.Fatalf("%v", f.tools.ran)
		}
	})

	// issue 20 item 3 (the double reissue of TestFleet/Kill9): a wait on the process whose calls
	// are in flight lasts longer than a heartbeat is believed; the process must keep
	// heartbeating for those calls meanwhile, or the next wait elsewhere finds the owner "dead"
	// right after it and reissues (replay-safe) or loses (the rest) a call that is running.
	t.Run("OwnerHeartbeatsDuringItsOwnWait", func(t *testing.T) {
		f := newFleet(t)
		long := func(c *config.Config) { c.Tools.CodeMode.TimeoutMs = 900 } // > the 400 ms heartbeat
		_, sa := f.process(t, "A", fleetScope, long, nil)
		_, sb := f.process(t, "B", fleetScope, long, nil)
		res := execCode(t, sa, `try { return await tools.charge({cents: 7}) } catch (e) { return e.code }`)
		if res.Status != api.StatusWaiting {
			t.Fatalf("%+v", res)
		}
		// A's own wait: hot, holds the run for its whole 900 ms, nothing settles.
		if r := sa.Wait(context.Background(), "wa", WaitInput{RunID: res.RunID}); r.Status != api.StatusWaiting {
			t.Fatalf("%+v", r)
		}
		// B right after: A is alive, its charge still runs; B must wait for it, not settle it.
		if r := sb.Wait(context.Background(), "wb", WaitInput{RunID: res.RunID}); r.Status != api.StatusWaiting {
			t.Fatalf("B settled a live owner's call: %+v %s", r, r.Value)
		}
		close(f.tools.release)
		got := waitUntilDone(t, sb, res.RunID)
		if got.Status != api.StatusCompleted || string(got.Value) != `{"by":"A","tool":"charge"}` {
			t.Fatalf("%+v %s", got, got.Value)
		}
		if f.tools.runs("A/charge") != 1 || f.tools.runs("B/charge") != 0 {
			t.Fatalf("%v", f.tools.ran)
		}
	})

	t.Run("HotOnTheSameProcess", func(t *testing.T) {
		f := newFleet(t)
		a, sa := f.process(t, "A", fleetScope, nil, nil)
		res := execCode(t, sa, `let n = 0; for (;;) { await yield_control(); if (++n === 3) return n }`)
		for res.Status == api.StatusWaiting {
			if a.Stats().HotRuns != 1 {
				t.Fatalf("not hot: %+v", a.Stats())
			}
			res = sa.Wait(context.Background(), "w", WaitInput{RunID: res.RunID})
		}
		if res.Status != api.StatusCompleted || string(res.Value) != "3" {
			t.Fatalf("%+v", res)
		}
	})

	t.Run("ConcurrentWaitsExactlyOneRuns", func(t *testing.T) {
		f := newFleet(t)
		_, sa := f.process(t, "A", fleetScope, nil, nil)
		_, sb := f.process(t, "B", fleetScope, nil, nil)
		res := execCode(t, sa, `await yield_control(); const t0 = Date.now(); while (Date.now() - t0 < 150) {} return "ran"`)
		if res.Status != api.StatusWaiting {
			t.Fatalf("%+v", res)
		}
		for round := 0; round < 1; round++ {
			var wg sync.WaitGroup
			results := make([]api.ExecResult, 4)
			for i := range results {
				s := sa
				if i%2 == 1 {
					s = sb
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = s.Wait(context.Background(), "w", WaitInput{RunID: res.RunID})
				}()
			}
			wg.Wait()
			completed := 0
			for _, r := range results {
				switch {
				case r.Status == api.StatusCompleted:
					completed++
				case r.Code == api.CodeBusy && r.RunID != "" && r.RetryAfterMs > 0 && strings.Contains(r.Error, "already in progress"): // issue 20 item 3
				case r.Code == api.CodeInvalidInput && strings.Contains(r.Error, "unavailable or expired"):
				default:
					t.Fatalf("%+v", r)
				}
			}
			if completed != 1 {
				t.Fatalf("%d waits completed the run: %+v", completed, results)
			}
		}
	})
}

func TestDurableRecordsFailClearly(t *testing.T) { // issue 15: tampered, truncated, re-scoped, expired
	f := newFleet(t)
	_, sa := f.process(t, "A", fleetScope, nil, nil)
	// Waits on a tampered record run on another replica: A holds the run's live VM and, as the
	// record's version is the one it wrote, never reads the record (issue 20 item 5).
	_, sb := f.process(t, "B", fleetScope, nil, nil)
	suspend := func() string {
		t.Helper()
		res := execCode(t, sa, `await yield_control(); return 1`)
		if res.Status != api.StatusWaiting {
			t.Fatalf("%+v", res)
		}
		return res.RunID
	}
	rdb := redis.NewClient(&redis.Options{Addr: f.srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	tamper := func(id string, fn func([]byte) []byte) {
		b, err := rdb.HGet(ctx, f.prefix+"{"+id+"}:run", "rec").Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.HSet(ctx, f.prefix+"{"+id+"}:run", "rec", fn(b)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	otherKey := f.key
	otherKey[0] ^= 0xff
	_, otherSession := f.process(t, "B", api.RunContext{AgentID: "cli", SessionKey: "someone-else", RunID: "cli"}, nil, nil)
	_, wrongKey := f.process(t, "C", fleetScope, nil, f.store(t, otherKey))
	_, otherTools := f.process(t, "D", fleetScope, nil, nil)
	otherTools = otherTools.rt.Activate(fleetScope, append(f.tools.forProcess("D"), &api.Tool{Name: "extra", Execute: func(context.Context, *api.Call) (*api.Result, error) { return nil, nil }}))

	for _, tc := range []struct {
		name  string
		setup func(id string)
		s     *Surface
		code  api.ErrorCode
		msg   string
	}{
		{"tampered", func(id string) { tamper(id, func(b []byte) []byte { b[len(b)/2] ^= 1; return b }) }, sb, api.CodeRunStore, "failed authentication"},
		{"truncated", func(id string) { tamper(id, func(b []byte) []byte { return b[:len(b)-20] }) }, sb, api.CodeRunStore, "failed authentication"},
		{"re-scoped", func(string) {}, otherSession, api.CodeInvalidInput, "belongs to a different session"},
		{"another store key", func(string) {}, wrongKey, api.CodeRunStore, "different run store key"},
		{"another tool set", func(string) {}, otherTools, api.CodeInvalidInput, "different tool set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := suspend()
			tc.setup(id)
			r := tc.s.Wait(ctx, "w", WaitInput{RunID: id})
			if r.Status != api.StatusFailed || r.Code != tc.code || !strings.Contains(r.Error, tc.msg) {
				t.Fatalf("%+v", r)
			}
		})
	}
	t.Run("expired", func(t *testing.T) {
		_, s := f.process(t, "E", fleetScope, func(c *config.Config) { c.Tools.CodeMode.SnapshotTTLSeconds = 1 }, nil)
		res := execCode(t, s, `await yield_control(); return 1`)
		time.Sleep(1500 * time.Millisecond)
		if r := s.Wait(ctx, "w", WaitInput{RunID: res.RunID}); r.Code != api.CodeInvalidInput || !strings.Contains(r.Error, "unavailable or expired") {
			t.Fatalf("%+v", r)
		}
	})
}

func TestDurableStoreDown(t *testing.T) { // issue 15: Redis down → clear errors, the process survives; back → service resumes
	f := newFleet(t)
	_, s := f.process(t, "A", fleetScope, nil, nil)
	res := execCode(t, s, `await yield_control(); return 1`)
	if res.Status != api.StatusWaiting {
		t.Fatalf("%+v", res)
	}
	if err := f.srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if r := s.Wait(context.Background(), "w", WaitInput{RunID: res.RunID}); r.Status != api.StatusFailed || r.Code != api.CodeRunStore || !strings.Contains(r.Error, "run store unavailable") {
		t.Fatalf("wait: %+v", r)
	}
	if r := execCode(t, s, `await yield_control(); return 1`); r.Status != api.StatusFailed || r.Code != api.CodeRunStore || !strings.Contains(r.Error, "run store unavailable") {
		t.Fatalf("exec: %+v", r)
	}
	// A cell that never suspends does not need the store.
	if r := execCode(t, s, `return 2`); r.Status != api.StatusCompleted {
		t.Fatalf("%+v", r)
	}
	if err := f.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	r := execCode(t, s, `await yield_control(); return 3`)
	if r.Status != api.StatusWaiting {
		t.Fatalf("after restart: %+v", r)
	}
	if got := waitUntilDone(t, s, r.RunID); got.Status != api.StatusCompleted || string(got.Value) != "3" {
		t.Fatalf("%+v", got)
	}
}

// issue 22 item 1: with a shared run store, what a cell saves survives its process: another
// process of the fleet (or the same one restarted) loads it, and provenance comes along.
func TestResultsSurviveRestart(t *testing.T) {
	f := newFleet(t)
	untrusted := &api.Tool{Name: "page", Source: api.SourceMCP, Owner: "web", Untrusted: true,
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			return &api.Result{Details: json.RawMessage(`{"content":[{"type":"text","text":"hi"}]}`)}, nil
		}}
	cfg := testConfig(t)
	a := newRuntime(t, cfg, func(o *Options) { o.RunStore = &RunStore{d: f.store(t, f.key)} })
	sa := a.Activate(fleetScope, []*api.Tool{untrusted})
	id := mustComplete(t, execCode(t, sa, `const p = await MCP.web.page({}); return (await results.save({p, n: [1, 2, 3]})).id`))
	// An oversized value goes to the shared store too.
	r := execCode(t, sa, `return "v".repeat(100000)`)
	var big struct {
		Reference struct{ ID string } `json:"reference"`
	}
	if err := json.Unmarshal(r.Value, &big); err != nil || big.Reference.ID == "" {
		t.Fatalf("%v %s", err, r.Value)
	}
	a.Close()
	b := newRuntime(t, cfg, func(o *Options) { o.RunStore = &RunStore{d: f.store(t, f.key)} })
	sb := b.Activate(fleetScope, nil)
	r = execCode(t, sb, `const v = await results.load(`+id+`); const w = await results.load("`+big.Reference.ID+`"); return [v.n, w.length]`)
	if mustComplete(t, r) != `[[1,2,3],100000]` || !slices.Equal(r.Untrusted, []string{"mcp:web"}) {
		t.Fatalf("%+v", r)
	}
	// Another session of the fleet cannot load it.
	other := b.Activate(api.RunContext{AgentID: "cli", SessionKey: "other", RunID: "cli"}, nil)
	if got := mustComplete(t, execCode(t, other, `try { await results.load(`+id+`) } catch (e) { return e.code }`)); got != `"result_not_found"` {
		t.Fatal(got)
	}
}
