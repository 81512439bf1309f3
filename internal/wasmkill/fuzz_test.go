package wasmkill

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// fuzzRuntime is shared by all fuzz iterations in a process. It uses the
// interpreter because only validation matters here and it compiles much
// faster; validation is the same code for both engines.
var fuzzRuntime = sync.OnceValue(func() wazero.Runtime {
	cfg := wazero.NewRuntimeConfigInterpreter().
		WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall)
	return wazero.NewRuntimeWithConfig(context.Background(), cfg)
})

// compiles reports whether wazero accepts wasm.
func compiles(wasm []byte) error {
	ctx := context.Background()
	m, err := fuzzRuntime().CompileModule(ctx, wasm)
	if err != nil {
		return err
	}
	return m.Close(ctx)
}

// FuzzInstrument checks that Instrument never panics, never modifies its
// input, returns either bytes or an error, and that whenever the input is a
// module wazero accepts and Instrument succeeds, wazero accepts the output
// too, with one check per loop.
func FuzzInstrument(f *testing.F) {
	for _, tm := range testModules() {
		f.Add(tm.wasm)
		for _, n := range []int{9, len(tm.wasm) / 2, len(tm.wasm) - 1} {
			if n > 0 && n < len(tm.wasm) {
				f.Add(tm.wasm[:n])
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := bytes.Clone(data)
		out, n, err := instrument(data)
		if !bytes.Equal(orig, data) {
			t.Fatal("input was modified")
		}
		if err != nil {
			if out != nil {
				t.Fatalf("returned %d bytes and error %v", len(out), err)
			}
			return
		}
		if !plausible(data) || compiles(data) != nil {
			return // invalid input (or one wazero cannot decode safely): nothing promised
		}
		if err := compiles(out); err != nil {
			t.Fatalf("input compiles but instrumented output does not: %v\ninput: % x\noutput: % x", err, data, out)
		}
		if _, loops := opcodeCensus(t, out); len(loops) != n {
			t.Fatalf("output has %d loops, inserted %d checks", len(loops), n)
		}
	})
}
