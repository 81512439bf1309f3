package quickjs

import (
	"context"
	"flag"
	"testing"
)

const fib = "function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2) } fib(25)"

func benchEval(b *testing.B, opts ModuleOptions, interrupt bool, code string) {
	ctx := context.Background()
	m, err := Load(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(ctx)
	vm, err := m.NewVM(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer vm.Close()
	if interrupt {
		vm.Interrupt = func() bool { return false }
	} else {
		vm.callVoid(vm.f.setInterruptHandler, 0)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, err := vm.Eval(code, "b.js", 0)
		if err != nil {
			b.Fatal(err)
		}
		vm.Free(v)
	}
}

// BenchmarkFib25 compares guest compute with and without the hard-kill instrumentation and the
// soft-deadline interrupt handler.
func BenchmarkFib25(b *testing.B) {
	b.Run("instrumented+interrupt", func(b *testing.B) { benchEval(b, ModuleOptions{}, true, fib) })
	b.Run("instrumented", func(b *testing.B) { benchEval(b, ModuleOptions{}, false, fib) })
	b.Run("plain+interrupt", func(b *testing.B) { benchEval(b, ModuleOptions{Uninstrumented: true}, true, fib) })
	b.Run("plain", func(b *testing.B) { benchEval(b, ModuleOptions{Uninstrumented: true}, false, fib) })
}

var overhead = flag.Bool("overhead", false, "run the instrumentation overhead measurement")
