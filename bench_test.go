package codemode

import (
	"encoding/json"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/quickjs"
	"github.com/codemode-go/codemode/internal/testtools"
)

func syntheticTools(n int) []*api.Tool { return testtools.Synthetic(n) }

func benchExec(b *testing.B, tools []*api.Tool, code string) {
	rt := newRuntime(b, testConfig(b))
	s := rt.Activate(api.RunContext{SessionKey: "bench"}, tools)
	in, _ := json.Marshal(map[string]string{"code": code})
	if r := execRaw(s, "warm", in); r.Status != api.StatusCompleted {
		b.Fatalf("%+v", r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := execRaw(s, "b", in); r.Status != api.StatusCompleted {
			b.Fatalf("%+v", r)
		}
	}
}

// Issue figures: a 1,000-tool catalog.
func BenchmarkCatalog1000TrivialExec(b *testing.B) { benchExec(b, syntheticTools(1000), "return 1+1") }
func BenchmarkCatalog1000ExecSearch(b *testing.B) {
	benchExec(b, syntheticTools(1000), `return (await tools.search("export the invoice report")).length`)
}
func BenchmarkCatalog1000Sequential100(b *testing.B) {
	benchExec(b, syntheticTools(1000), `for (let i = 0; i < 100; i++) await tools.callValue(ALL_TOOLS[i].id, {id: "x"}); return 1`)
}
func BenchmarkCatalog1000Parallel100(b *testing.B) {
	benchExec(b, syntheticTools(1000), `await Promise.all(ALL_TOOLS.slice(0, 100).map(t => tools.callValue(t.id, {id: "x"}))); return 1`)
}

// Suspend/resume at 1,001 tools (issue 15): exec → waiting, and wait → completed after the
// pending work settled, with hot VMs (the default) and with snapshots only.
func BenchmarkCatalog1000ExecWaiting(b *testing.B)       { benchSuspend(b, false, false) }
func BenchmarkCatalog1000ExecWaitingCold(b *testing.B)   { benchSuspend(b, true, false) }
func BenchmarkCatalog1000WaitCompleted(b *testing.B)     { benchSuspend(b, false, true) }
func BenchmarkCatalog1000WaitCompletedCold(b *testing.B) { benchSuspend(b, true, true) }

func benchSuspend(b *testing.B, cold, measureWait bool) {
	rt := newRuntime(b, testConfig(b), func(o *Options) {
		if cold {
			o.HotRuns = -1
		}
	})
	s := rt.Activate(api.RunContext{SessionKey: "bench"}, syntheticTools(1001))
	in, _ := json.Marshal(map[string]string{"code": `const state = {items: Array.from({length: 100}, (_, i) => ({i}))}; await yield_control(); return state.items.length`})
	b.ReportAllocs()
	// The half measured is timed by hand: Stop/StartTimer read the memory statistics (a
	// stop-the-world each), which costs more than a hot wait itself. ns/op is both halves.
	var measured time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r := execRaw(s, "b", in)
		if r.Status != api.StatusWaiting {
			b.Fatalf("%+v", r)
		}
		if !measureWait {
			measured += time.Since(t0)
		}
		w, _ := json.Marshal(map[string]string{"runId": r.RunID})
		t1 := time.Now()
		if r := waitRaw(s, "w", w); r.Status != api.StatusCompleted {
			b.Fatalf("%+v", r)
		}
		if measureWait {
			measured += time.Since(t1)
		}
	}
	name := "exec-µs"
	if measureWait {
		name = "wait-µs"
	}
	b.ReportMetric(float64(measured.Microseconds())/float64(b.N), name)
}

// BenchmarkActivate1000 is Activate for a 1,000-tool set already seen (fingerprint + cache hit).
func BenchmarkActivate1000(b *testing.B) {
	rt := newRuntime(b, testConfig(b))
	tools := syntheticTools(1000)
	rt.Activate(api.RunContext{}, tools)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		rt.Activate(api.RunContext{}, tools)
	}
}

type runtimeStats struct {
	goroutines int
	heap       uint64
}

// read takes the goroutine count and the heap in use, less the VM memories the quickjs pool
// keeps for reuse by design (bounded, and emptied when the process is idle): a leak check must
// not depend on how full the pool happened to be before it started.
func (s *runtimeStats) read() {
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	s.goroutines, s.heap = goruntime.NumGoroutine(), m.HeapInuse-uint64(quickjs.PooledMemory())
}

func runtimeGC() { goruntime.GC() }
