package redisstore

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/runstore/durabletest"
	"github.com/codemode-go/codemode/internal/testtools/redistest"
)

// issue 20 item 1: the store on a 3-master Redis Cluster. Every script declares its keys and
// each touches one slot (a run's {runId}, or a principal's accounting shard), so the whole
// conformance suite passes unchanged; then a reshard moves slots holding runs and accounting
// while clients keep working, and nothing is lost. One cluster serves both (about 2 s to form).
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node Redis Cluster")
	}
	c := redistest.StartCluster(t, 3)
	openOn := func(t testing.TB, prefix string, lim runstore.Limits) *Store {
		s, err := New(Options{Mode: ModeCluster, URL: "redis://" + c.Nodes[0].Addr(), Addrs: c.Addrs()[1:], Key: testKey,
			Prefix: prefix, Limits: lim, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	t.Run("Conformance", func(t *testing.T) {
		durabletest.Run(t, func(t *testing.T, lim runstore.Limits) (a, b runstore.Durable) {
			p := testPrefix()
			return openOn(t, p, lim), openOn(t, p, lim)
		})
	})
	t.Run("Reshard", func(t *testing.T) {
		ctx := t.Context()
		p := testPrefix()
		a, b := openOn(t, p, runstore.Limits{SessionRuns: 100}), openOn(t, p, runstore.Limits{SessionRuns: 100})
		const n = 60
		ids := make([]string, n)
		for i := range ids {
			ids[i] = runstore.NewID()
			if err := a.Put(ctx, ids[i], durabletest.NewRecord(scope, 3000, byte(i)), time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := a.AddResult(ctx, ids[i], scope, "call-1", []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		// Clients acquire and release every run, over and over, while every slot of node 0 that
		// holds one of these runs or the principal's accounting shard moves to node 1.
		own, err := c.SlotsOf(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		onNode0 := map[int]bool{}
		for _, s := range own {
			onNode0[s] = true
		}
		keys := []string{a.acctKeys(shardOf(a.keys.scope(scope).prin), "", "", "")[0]}
		for _, id := range ids {
			keys = append(keys, a.runKeys(id)[0])
		}
		var slots []int
		seen := map[int]bool{}
		for _, k := range keys {
			s, err := c.SlotOf(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if onNode0[s] && !seen[s] {
				seen[s] = true
				slots = append(slots, s)
			}
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var rounds int
		var failures []error
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := []*Store{a, b}[w]
				for r := 0; ; r++ {
					select {
					case <-stop:
						return
					default:
					}
					id := ids[(r*7+w)%n]
					_, l, err := s.Acquire(ctx, id, scope, fmt.Sprint("w", w), time.Minute, "")
					if errors.Is(err, runstore.ErrBusy) {
						continue
					}
					if err == nil {
						err = s.Release(ctx, l, nil, nil, time.Minute)
					}
					mu.Lock()
					rounds++
					if err != nil {
						failures = append(failures, err)
					}
					mu.Unlock()
				}
			}()
		}
		start := time.Now()
		moved, err := c.MoveSlots(ctx, 0, 1, slots)
		took := time.Since(start)
		time.Sleep(100 * time.Millisecond) // a few rounds after the move, too
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("resharded %d slots (%d keys) in %v; %d acquire/release rounds meanwhile, %d failed", len(slots), moved, took, rounds, len(failures))
		for _, f := range failures {
			// A script that finds the slot half-migrated gets TRYAGAIN, which the client retries;
			// nothing else may fail.
			t.Errorf("operation failed during the reshard: %v", f)
		}
		for i, id := range ids {
			rec, l, err := b.Acquire(ctx, id, scope, "check", time.Minute, "")
			if err != nil {
				t.Fatalf("run %d after the reshard: %v", i, err)
			}
			res, err := b.Results(ctx, l)
			if err != nil || string(res["call-1"]) != fmt.Sprint(i) || rec.Snapshot[0] != byte(i) {
				t.Fatalf("run %d after the reshard: %v %q", i, err, res)
			}
			if err := b.Delete(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		if u, err := a.Usage(ctx); err != nil || u.Runs != 0 {
			t.Fatalf("usage after deleting every run: %+v %v", u, err)
		}
	})
}

// issue 20 item 1: the store through Redis Sentinel. Runs stored before the primary dies are
// there after the sentinels promote the replica; while they do, calls fail in bounded time with
// a store error (never hang), and then succeed again without a restart.
func TestSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a primary, a replica and three sentinels")
	}
	set := redistest.StartSentinel(t)
	ctx := t.Context()
	s, err := New(Options{Mode: ModeSentinel, URL: "redis://" + set.Sentinels[0].Addr() + "/0", Addrs: set.Addrs()[1:],
		MasterName: redistest.MasterName, Key: testKey, Prefix: testPrefix(), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []string
	for i := range 20 {
		id := runstore.NewID()
		if err := s.Put(ctx, id, durabletest.NewRecord(scope, 2000, byte(i)), time.Minute); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := set.SyncReplica(ctx); err != nil {
		t.Fatal(err)
	}
	took, err := set.KillPrimary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Until the client finds the new primary, calls fail fast with a store error.
	deadline := time.Now().Add(20 * time.Second)
	var errs int
	for {
		callStart := time.Now()
		_, l, err := s.Acquire(ctx, ids[0], scope, "h", time.Minute, "")
		if d := time.Since(callStart); d > 3*time.Second {
			t.Fatalf("a call took %v during the failover", d)
		}
		if err == nil {
			if err := s.Release(ctx, l, nil, nil, time.Minute); err != nil {
				t.Fatal(err)
			}
			break
		}
		if !runstore.IsStoreError(err) {
			t.Fatalf("during the failover: %v", err)
		}
		errs++
		if time.Now().After(deadline) {
			t.Fatalf("the store did not recover within 20s of the failover: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("failover took %v; %d calls failed meanwhile", took, errs)
	for i, id := range ids {
		rec, l, err := s.Acquire(ctx, id, scope, "h", time.Minute, "")
		if err != nil || rec.Snapshot[0] != byte(i) {
			t.Fatalf("run %d after the failover: %v", i, err)
		}
		if err := s.Delete(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
}
