package sandbox

import (
	"context"
	"testing"

	"github.com/codemode-go/codemode/internal/quickjs"
	"github.com/codemode-go/codemode/internal/source"
)

// TestHotMode runs the suspend/resume tests again with hot VMs (issue 15): behaviour must be
// identical whether a wait continues the live VM or restores its snapshot.
func TestHotMode(t *testing.T) {
	testHotEngine(t)
	hotMode = true
	defer func() { hotMode = false }()
	for name, f := range map[string]func(*testing.T){
		"YieldAndResume":      TestYieldAndResume,
		"SuspendOnSlowCall":   TestSuspendOnSlowCall,
		"SnapshotLimit":       TestSnapshotLimit,
		"PendingWorkSuspends": TestPendingWorkSuspends,
		"DeadlineHolesInWait": TestDeadlineHolesInWait,
		"EndlessTimerChain":   TestEndlessTimerChain,
		// issue 22: the snapshot limit and text codecs behave the same hot.
		"SnapshotLimitLargeState": TestSnapshotLimitLargeState,
		"TextCodecSurvivesWait":   TestTextCodecSurvivesWait,
	} {
		t.Run(name, f)
	}
}

func TestHotEviction(t *testing.T) { // issue 15: evicted VMs resume from their snapshots
	base, tmpl := testEngine(t)
	eng, err := NewEngine(context.Background(), base.mod)
	if err != nil {
		t.Fatal(err)
	}
	cache := NewHotCache(2, 1<<30)
	eng.SetHotCache(cache)
	lim := defaultLimits()
	var runs []*Run
	for i := 0; i < 4; i++ {
		prog := mustPrepare(t, `let n = 0; for (;;) { await yield_control(); n++; if (n === 2) return "done " + n }`)
		r, o := eng.Start(context.Background(), &fakeHost{}, tmpl, lim, Cell{Program: prog, CallID: "c"})
		if o.Status != StatusWaiting {
			t.Fatalf("%+v", o)
		}
		runs = append(runs, r)
	}
	st := cache.Stats()
	if st.Runs != 2 || st.Evicted != 2 {
		t.Fatalf("cache %+v, want 2 hot and 2 evicted", st)
	}
	if runs[0].Hot() || runs[1].Hot() || !runs[2].Hot() || !runs[3].Hot() {
		t.Fatal("the least recently suspended runs were not the ones evicted")
	}
	if runs[0].SnapshotBytes() == 0 {
		t.Fatal("an evicted run has no snapshot")
	}
	for i, r := range runs {
		o := r.Resume(context.Background(), lim)
		for o.Status == StatusWaiting {
			o = r.Resume(context.Background(), lim)
		}
		if o.Status != StatusCompleted || string(o.Value) != `"done 2"` {
			t.Fatalf("run %d: %+v", i, o)
		}
	}
	// Closing a hot run frees its VM and its place in the cache.
	r, _ := eng.Start(context.Background(), &fakeHost{}, tmpl, lim, Cell{Program: mustPrepare(t, `await yield_control(); return 1`), CallID: "c"})
	if !r.Hot() {
		t.Fatal("not hot")
	}
	before := cache.Stats().Runs
	r.Close()
	if r.Hot() || cache.Stats().Runs != before-1 {
		t.Fatalf("close left the VM hot: %+v", cache.Stats())
	}
	if o := r.Resume(context.Background(), lim); o.Status != StatusFailed {
		t.Fatalf("a closed run resumed: %+v", o)
	}
}

func mustPrepare(tb testing.TB, code string) *source.Program {
	tb.Helper()
	prog, err := source.Prepare(code, source.JavaScript)
	if err != nil {
		tb.Fatal(err)
	}
	return prog
}

// The memory budget counts what a hot VM holds (its linear memory's capacity), not only the bytes
// in use: a budget of three VMs' worth keeps three, whatever their heaps use.
func TestHotBudgetCountsHeldMemory(t *testing.T) { // issue 15: hot VMs within a real memory bound
	// Pooled memories of earlier tests' larger VMs would give these VMs unequal capacities.
	quickjs.ReleaseIdleMemory()
	base, tmpl := testEngine(t)
	eng, err := NewEngine(context.Background(), base.mod)
	if err != nil {
		t.Fatal(err)
	}
	probe, o := eng.Start(context.Background(), &fakeHost{}, tmpl, defaultLimits(), Cell{Program: mustPrepare(t, `await yield_control(); return 1`), CallID: "p"})
	if o.Status != StatusWaiting {
		t.Fatalf("%+v", o)
	}
	probe.Close()
	eng.SetHotCache(NewHotCache(100, 1<<40))
	r, _ := eng.Start(context.Background(), &fakeHost{}, tmpl, defaultLimits(), Cell{Program: mustPrepare(t, `await yield_control(); return 1`), CallID: "q"})
	held, inUse := eng.HotCache().Stats().Bytes, int64(r.vm.MemorySize())
	r.Close()
	if held < inUse {
		t.Fatalf("a hot VM holds %d bytes by the cache's count, less than the %d its memory uses", held, inUse)
	}
	cache := NewHotCache(100, 3*held+held/2)
	eng.SetHotCache(cache)
	for i := 0; i < 6; i++ {
		r, o := eng.Start(context.Background(), &fakeHost{}, tmpl, defaultLimits(), Cell{Program: mustPrepare(t, `await yield_control(); return 1`), CallID: "c"})
		if o.Status != StatusWaiting {
			t.Fatalf("%+v", o)
		}
		defer r.Close()
	}
	if st := cache.Stats(); st.Runs != 3 || st.Bytes > 3*held+held/2 {
		t.Fatalf("cache %+v with a budget of %d bytes (%d per VM), want 3 hot", st, 3*held+held/2, held)
	}
}
