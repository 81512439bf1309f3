package wasmkill

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// quickJSPath is the QuickJS module fetched by `make wasm`; it is
// gitignored, so tests that need it skip when it is absent.
var quickJSPath = filepath.Join("..", "quickjs", "assets", "quickjs.wasm")

func quickJS(t testing.TB) []byte {
	t.Helper()
	wasm, err := os.ReadFile(quickJSPath)
	if os.IsNotExist(err) {
		t.Skipf("%s is absent (run `make wasm`)", quickJSPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// quickJSKillIndex computes the kill global's expected index from the
// module's import and global sections.
func quickJSKillIndex(t testing.TB, wasm []byte) int {
	t.Helper()
	secs, err := parseSections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	var imported, defined uint32
	for _, s := range secs {
		switch s.id {
		case secImport:
			if _, imported, _, err = importCounts(s); err != nil {
				t.Fatal(err)
			}
		case secGlobal:
			if defined, _, err = vecCount(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	return int(imported + defined)
}

func TestQuickJS(t *testing.T) {
	wasm := quickJS(t)
	in := bytes.Clone(wasm)
	out, n, err := instrument(in)
	if err != nil {
		t.Fatalf("instrument: %v", err)
	}
	if !bytes.Equal(in, wasm) {
		t.Fatal("input was modified")
	}

	t.Run("census", func(t *testing.T) {
		counts, loops := opcodeCensus(t, wasm)
		ops := slices.Sorted(maps.Keys(counts))
		var buf bytes.Buffer
		total := 0
		for _, op := range ops {
			fmt.Fprintf(&buf, " %s:%d", op, counts[op])
			total += counts[op]
		}
		t.Logf("%d instructions, %d distinct opcodes, %d loops; opcode:count%s", total, len(ops), len(loops), buf.String())
		if len(loops) != n {
			t.Errorf("inserted %d checks, census found %d loops", n, len(loops))
		}
	})

	t.Run("structure", func(t *testing.T) {
		verifyInstrumented(t, wasm, out, n, quickJSKillIndex(t, wasm))
		t.Logf("%d checks, %d -> %d bytes (+%.1f%%)", n, len(wasm), len(out), 100*float64(len(out)-len(wasm))/float64(len(wasm)))
	})

	t.Run("deterministic", func(t *testing.T) {
		again, err := Instrument(wasm)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, out) {
			t.Fatal("two runs produced different bytes")
		}
	})

	t.Run("compile", func(t *testing.T) {
		ctx := context.Background()
		r := wazero.NewRuntime(ctx)
		defer r.Close(ctx)
		orig, err := r.CompileModule(ctx, wasm)
		if err != nil {
			t.Fatalf("compile original: %v", err)
		}
		inst, err := r.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("compile instrumented: %v", err)
		}
		if a, b := len(orig.ExportedFunctions()), len(inst.ExportedFunctions()); a != b {
			t.Errorf("exported functions: original %d, instrumented %d", a, b)
		}
	})

	t.Run("eval", func(t *testing.T) {
		q := newQJS(t, out)
		if v := killFlag(t, q.mod).Get(); v != 0 {
			t.Fatalf("kill flag = %d, want 0", v)
		}
		got, err := q.evalInt(`let s = 0; for (let i = 0; i < 1000; i++) s += i; s`)
		if err != nil || got != 499500 {
			t.Fatalf("eval = %d, %v; want 499500", got, err)
		}
	})

	t.Run("kill", func(t *testing.T) {
		q := newQJS(t, out)
		spinUntilKilled(t, killFlag(t, q.mod), func() error {
			_, err := q.evalInt(`for (;;) {}`)
			return err
		})
	})
}

// qjs drives the QuickJS C API exported by quickjs-wasi directly:
// JS_NewRuntime, JS_NewContext, JS_Eval, JS_ToInt32. No interrupt handler
// is installed, so only the kill flag can stop a runaway script.
type qjs struct {
	mod api.Module
	ctx uint64 // JSContext*
}

func newQJS(t testing.TB, wasm []byte) *qjs {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { r.Close(ctx) })
	compiled, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	// Stub every host import from "env" (interrupt, timezone, module
	// loading, host calls) with a function that returns zeros.
	env := r.NewHostModuleBuilder("env")
	for _, f := range compiled.ImportedFunctions() {
		module, name, _ := f.Import()
		if module != "env" {
			continue
		}
		nres := len(f.ResultTypes())
		env.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
				clear(stack[:nres])
			}), f.ParamTypes(), f.ResultTypes()).
			Export(name)
	}
	if _, err := env.Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize"))
	if err != nil {
		t.Fatal(err)
	}
	q := &qjs{mod: mod}
	rt := q.call(t, "JS_NewRuntime")
	q.ctx = q.call(t, "JS_NewContext", rt)
	if rt == 0 || q.ctx == 0 {
		t.Fatalf("JS_NewRuntime/JS_NewContext returned %d/%d", rt, q.ctx)
	}
	return q
}

func (q *qjs) call(t testing.TB, name string, args ...uint64) uint64 {
	t.Helper()
	res, err := q.mod.ExportedFunction(name).Call(context.Background(), args...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res) == 0 {
		return 0
	}
	return res[0]
}

// cstring copies s, NUL-terminated, into guest memory allocated with malloc.
func (q *qjs) cstring(s string) (uint32, error) {
	ctx := context.Background()
	res, err := q.mod.ExportedFunction("malloc").Call(ctx, uint64(len(s)+1))
	if err != nil {
		return 0, err
	}
	p := uint32(res[0])
	if p == 0 || !q.mod.Memory().Write(p, append([]byte(s), 0)) {
		return 0, fmt.Errorf("malloc(%d) = %#x", len(s)+1, p)
	}
	return p, nil
}

// evalInt evaluates a global script and converts its value with
// JS_ToInt32. It returns the call error (a trap) as is.
func (q *qjs) evalInt(code string) (int32, error) {
	ctx := context.Background()
	src, err := q.cstring(code)
	if err != nil {
		return 0, err
	}
	name, err := q.cstring("<eval>")
	if err != nil {
		return 0, err
	}
	res, err := q.mod.ExportedFunction("JS_Eval").Call(ctx, q.ctx, uint64(src), uint64(len(code)), uint64(name), 0)
	if err != nil {
		return 0, err
	}
	out, err := q.cstring("1234") // 4 bytes for the int32 result
	if err != nil {
		return 0, err
	}
	rc, err := q.mod.ExportedFunction("JS_ToInt32").Call(ctx, q.ctx, uint64(out), res[0])
	if err != nil {
		return 0, err
	}
	v, ok := q.mod.Memory().ReadUint32Le(out)
	if int32(rc[0]) != 0 || !ok {
		return 0, fmt.Errorf("JS_ToInt32 failed (rc %d)", int32(rc[0]))
	}
	return int32(v), nil
}
