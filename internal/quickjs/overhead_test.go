package quickjs

import (
	"context"
	"testing"
	"time"
)

// TestInstrumentationOverhead reports (does not assert) the hard-kill instrumentation's cost on
// fib(25): alternating runs, fastest of each, which is robust to other load on the machine.
// Run with: go test -run InstrumentationOverhead -v ./internal/quickjs/ -overhead
func TestInstrumentationOverhead(t *testing.T) {
	if !*overhead {
		t.Skip("measurement only: pass -overhead")
	}
	ctx := context.Background()
	vms := map[string]*VM{}
	for name, opts := range map[string]ModuleOptions{"instrumented": {}, "plain": {Uninstrumented: true}} {
		m, err := Load(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close(ctx)
		vm, err := m.NewVM(ctx)
		if err != nil {
			t.Fatal(err)
		}
		vm.Interrupt = func() bool { return false }
		vms[name] = vm
	}
	best := map[string]time.Duration{}
	for round := 0; round < 15; round++ {
		for _, name := range []string{"instrumented", "plain"} {
			t0 := time.Now()
			v, err := vms[name].Eval(fib, "f.js", 0)
			if err != nil {
				t.Fatal(err)
			}
			vms[name].Free(v)
			if d := time.Since(t0); best[name] == 0 || d < best[name] {
				best[name] = d
			}
		}
	}
	t.Logf("fib(25) fastest of 15: instrumented %v, plain %v: %+.1f%%", best["instrumented"], best["plain"],
		100*(float64(best["instrumented"])/float64(best["plain"])-1))
}
