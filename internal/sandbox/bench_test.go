package sandbox

import (
	"context"
	"testing"

	"github.com/codemode-go/codemode/internal/source"
)

func benchCell(b *testing.B, code string) {
	eng, tmpl := testEngine(b)
	prog, err := source.Prepare(code, source.JavaScript)
	if err != nil {
		b.Fatal(err)
	}
	host := &fakeHost{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, o := eng.Start(context.Background(), host, tmpl, defaultLimits(), Cell{Program: prog, CallID: "call"})
		r.Close()
		if o.Status != StatusCompleted {
			b.Fatal(o.Error)
		}
	}
}

// BenchmarkTrivialExec is a whole exec of `return 1+1` from a warm template.
func BenchmarkTrivialExec(b *testing.B) { benchCell(b, "return 1+1") }

// BenchmarkFib25 measures guest compute (and the hard-kill instrumentation's cost on it).
func BenchmarkFib25(b *testing.B) {
	benchCell(b, "function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2) } return fib(25)")
}

// BenchmarkJSON100K parses and stringifies ~100 KB of JSON in the guest.
func BenchmarkJSON100K(b *testing.B) {
	benchCell(b, `const o = []; for (let i = 0; i < 1000; i++) o.push({id: i, name: "item " + i + " of the benchmark set", tags: ["a", "b", "c"], score: i / 7});
		const s = JSON.stringify(o); const back = JSON.parse(s); return s.length > 90000 && back.length === 1000`)
}

// BenchmarkRestore is template restore to first eval.
func BenchmarkRestore(b *testing.B) {
	eng, tmpl := testEngine(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		vm, err := eng.newVM(context.Background(), tmpl.img, 32<<20)
		if err != nil {
			b.Fatal(err)
		}
		v, err := vm.Eval("1+1", "x.js", 0)
		if err != nil || v.Int() != 2 {
			b.Fatal(err)
		}
		vm.Close()
	}
}

// BenchmarkSequentialCalls is 100 awaited bridge calls in one cell.
func BenchmarkSequentialCalls(b *testing.B) {
	benchCell(b, `for (let i = 0; i < 100; i++) await tools.callValue("t", {i}); return 1`)
}

// BenchmarkParallelCalls is 100 bridge calls through Promise.all.
func BenchmarkParallelCalls(b *testing.B) {
	benchCell(b, `await Promise.all(Array.from({length: 100}, (_, i) => tools.callValue("t", {i}))); return 1`)
}

// BenchmarkSuspend is exec → waiting: the cell runs, yields, and the VM is snapshotted.
func BenchmarkSuspend(b *testing.B) {
	eng, tmpl := testEngine(b)
	benchSuspend(b, eng, tmpl)
}

// BenchmarkSuspendHot is exec → waiting with the VM kept alive (issue 15): no snapshot.
func BenchmarkSuspendHot(b *testing.B) {
	_, tmpl := testEngine(b)
	benchSuspend(b, testHotEngine(b), tmpl)
}

func benchSuspend(b *testing.B, eng *Engine, tmpl *Template) {
	prog, _ := source.Prepare(`const state = {items: Array.from({length: 100}, (_, i) => ({i}))}; await yield_control(); return state.items.length`, source.JavaScript)
	host := &fakeHost{}
	b.ReportAllocs()
	var bytes int
	for i := 0; i < b.N; i++ {
		r, o := eng.Start(context.Background(), host, tmpl, defaultLimits(), Cell{Program: prog, CallID: "call"})
		if o.Status != StatusWaiting {
			b.Fatal(o.Error)
		}
		bytes = r.SnapshotBytes()
		r.Close()
	}
	// What the run counts against the store's byte limits: its snapshot, or for a hot run the
	// most its snapshot can take once evicted.
	b.ReportMetric(float64(bytes), "counted-bytes")
}

// BenchmarkResume is wait → completed after the pending work settled: restore, deliver, finish.
func BenchmarkResume(b *testing.B) {
	eng, tmpl := testEngine(b)
	benchResume(b, eng, tmpl)
}

// BenchmarkResumeHot is wait → completed on a hot VM: deliver and finish in place.
func BenchmarkResumeHot(b *testing.B) {
	_, tmpl := testEngine(b)
	benchResume(b, testHotEngine(b), tmpl)
}

func benchResume(b *testing.B, eng *Engine, tmpl *Template) {
	prog, _ := source.Prepare(`const state = {items: Array.from({length: 100}, (_, i) => ({i}))}; await yield_control(); return state.items.length`, source.JavaScript)
	host := &fakeHost{}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r, o := eng.Start(context.Background(), host, tmpl, defaultLimits(), Cell{Program: prog, CallID: "call"})
		if o.Status != StatusWaiting {
			b.Fatal(o.Error)
		}
		b.StartTimer()
		o = r.Resume(context.Background(), defaultLimits())
		if o.Status != StatusCompleted || string(o.Value) != "100" {
			b.Fatal(o)
		}
		r.Close()
	}
}
