package codemode

import (
	"encoding/json"
	goruntime "runtime"
	"testing"

	"github.com/codemode-go/codemode/api"
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

func (s *runtimeStats) read() {
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	s.goroutines, s.heap = goruntime.NumGoroutine(), m.HeapInuse
}

func runtimeGC() { goruntime.GC() }
