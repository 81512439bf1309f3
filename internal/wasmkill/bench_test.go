package wasmkill

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// BenchmarkInstrumentQuickJS measures the one-off rewrite of the real
// QuickJS module (done once per process, at startup).
func BenchmarkInstrumentQuickJS(b *testing.B) {
	wasm := quickJS(b)
	b.SetBytes(int64(len(wasm)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Instrument(wasm); err != nil {
			b.Fatal(err)
		}
	}
}

// countModule exports count(n): a tight loop that increments a local n
// times -- the worst case for a per-iteration check, since the loop body
// is a handful of instructions.
func countModule() []byte {
	return module(
		sec(secType, functype([]byte{tI32}, []byte{tI32})),
		sec(secFunction, leb(0)),
		sec(secExport, export("count", kindFunc, 0)),
		sec(secCode, body(i32x1, []byte{
			0x03, 0x40, // loop
			0x20, 0x01, 0x41, 0x01, 0x6a, 0x22, 0x01, // i = i + 1 (tee)
			0x20, 0x00, 0x49, 0x0d, 0x00, // br_if 0 (i < n)
			0x0b,
			0x20, 0x01, // i
			0x0b,
		})),
	)
}

// The overhead benchmarks run the plain and the instrumented module
// alternately within each iteration and report both times and their ratio,
// so that drift in machine load (this matters on shared 2-CPU machines)
// affects both sides alike. ns/op is the sum of both.

// BenchmarkLoopOverhead measures one tight-loop iteration with and without
// the kill check, on the default (compiler) runtime.
func BenchmarkLoopOverhead(b *testing.B) {
	const iters = 200_000
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	var count [2]api.Function
	for i, wasm := range [][]byte{countModule(), mustInstrument(b, countModule())} {
		m, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			b.Fatal(err)
		}
		count[i] = m.ExportedFunction("count")
	}
	var m overheadMeter
	for b.Loop() {
		m.pair(func(i int) {
			res, err := count[i].Call(ctx, iters)
			if err != nil || res[0] != iters {
				b.Fatalf("count = %v, %v", res, err)
			}
		})
	}
	m.report(b, iters, "iter")
}

// BenchmarkQuickJSOverhead compares QuickJS running JavaScript with and
// without instrumentation. "loop" is bound by the bytecode interpreter
// (QuickJS's dispatch loop passes a check per JS opcode); "builtins" spends
// its time in C string code (memcpy/search loops).
func BenchmarkQuickJSOverhead(b *testing.B) {
	scripts := []struct{ name, code string }{
		{"loop", `(() => { let s = 0; for (let i = 0; i < 100000; i++) s = (s + i) | 0; return s })()`},
		{"builtins", `(() => { const t = "abc".repeat(20000); return t.replaceAll("b", "xy").split("c").join("").length })()`},
	}
	wasm := quickJS(b)
	vms := [2]*qjs{newQJS(b, wasm), newQJS(b, mustInstrument(b, wasm))}
	for _, s := range scripts {
		b.Run(s.name, func(b *testing.B) {
			var m overheadMeter
			for b.Loop() {
				m.pair(func(i int) {
					if _, err := vms[i].evalInt(s.code); err != nil {
						b.Fatal(err)
					}
				})
			}
			m.report(b, 1, "eval")
		})
	}
}

// overheadMeter times pairs of runs (0: plain, 1: instrumented), in
// alternating order, and reports the median of the per-pair ratios, which
// is robust against load spikes that hit one run of a pair.
type overheadMeter struct {
	total  [2]time.Duration
	ratios []float64
	n      int
}

func (m *overheadMeter) pair(run func(variant int)) {
	var d [2]time.Duration
	for k := range 2 {
		i := (k + m.n) % 2
		start := time.Now()
		run(i)
		d[i] = time.Since(start)
		m.total[i] += d[i]
	}
	m.ratios = append(m.ratios, float64(d[1])/float64(d[0]))
	m.n++
}

func (m *overheadMeter) report(b *testing.B, units int, unit string) {
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(m.n) / float64(units) }
	b.ReportMetric(per(m.total[0]), "plain-ns/"+unit)
	b.ReportMetric(per(m.total[1]), "instrumented-ns/"+unit)
	slices.Sort(m.ratios)
	b.ReportMetric(100*(m.ratios[len(m.ratios)/2]-1), "median-overhead-%")
}
