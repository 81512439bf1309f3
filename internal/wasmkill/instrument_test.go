package wasmkill

import (
	"bytes"
	"context"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// newRuntime returns a wazero runtime (the default, compiler-backed one on
// supported platforms) with tail calls enabled for immediatesModule, and
// with envModule instantiated as "env" for importsModule.
func newRuntime(t testing.TB) wazero.Runtime {
	t.Helper()
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall)
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	t.Cleanup(func() { r.Close(ctx) })
	if _, err := r.InstantiateWithConfig(ctx, envModule(), wazero.NewModuleConfig().WithName("env")); err != nil {
		t.Fatalf("instantiate env: %v", err)
	}
	return r
}

// instantiate instantiates wasm anonymously in a fresh runtime.
func instantiate(t testing.TB, wasm []byte) api.Module {
	t.Helper()
	m, err := newRuntime(t).InstantiateWithConfig(context.Background(), wasm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	return m
}

func mustInstrument(t testing.TB, wasm []byte) []byte {
	t.Helper()
	out, err := Instrument(wasm)
	if err != nil {
		t.Fatalf("Instrument: %v", err)
	}
	return out
}

func killFlag(t testing.TB, m api.Module) api.MutableGlobal {
	t.Helper()
	g, ok := m.ExportedGlobal(GlobalName).(api.MutableGlobal)
	if !ok {
		t.Fatalf("export %q is missing or not a mutable global", GlobalName)
	}
	if g.Type() != api.ValueTypeI32 {
		t.Fatalf("kill global type = %v, want i32", g.Type())
	}
	return g
}

func isTrap(err error) bool {
	return err != nil && strings.Contains(err.Error(), "unreachable")
}

// TestSemantics checks that instrumented functions compute the same results
// as the originals while the kill flag is 0.
func TestSemantics(t *testing.T) {
	tests := []struct {
		module func() []byte
		fn     string
		args   []uint64
		want   []uint64
	}{
		{loopsModule, "sum", []uint64{10}, []uint64{55}},
		{loopsModule, "sum", []uint64{0}, []uint64{0}},
		{loopsModule, "nested", []uint64{7}, []uint64{49}},
		{loopsModule, "valueLoop", []uint64{10}, []uint64{55}},
		{loopsModule, "typeIdx", []uint64{0}, []uint64{10}},
		{loopsModule, "typeIdx", []uint64{20}, []uint64{21}},
		{loopsModule, "noLoop", []uint64{41}, []uint64{42}},
		{loopsModule, "padded", []uint64{100}, []uint64{5050}},
		{importsModule, "sumGlobals", nil, []uint64{123}},
		{importsModule, "count", nil, []uint64{311}},
		{manyGlobalsModule, "last", nil, []uint64{199}},
		{immediatesModule, "ops", nil, nil},
	}
	for _, tc := range tests {
		for _, variant := range []string{"original", "instrumented"} {
			t.Run(tc.fn+"/"+variant, func(t *testing.T) {
				wasm := tc.module()
				if variant == "instrumented" {
					wasm = mustInstrument(t, wasm)
				}
				m := instantiate(t, wasm)
				got, err := m.ExportedFunction(tc.fn).Call(context.Background(), tc.args...)
				if err != nil {
					t.Fatalf("%s%v: %v", tc.fn, tc.args, err)
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("%s%v = %v, want %v", tc.fn, tc.args, got, tc.want)
				}
			})
		}
	}
}

// TestStartModule instantiates a module without exports or globals whose
// start function traps unless its loop computes the right value.
func TestStartModule(t *testing.T) {
	m := instantiate(t, mustInstrument(t, startModule()))
	if v := killFlag(t, m).Get(); v != 0 {
		t.Fatalf("kill flag = %d after instantiation, want 0", v)
	}
}

// TestKill runs functions that never return and checks that setting the
// kill flag from another goroutine makes them trap.
func TestKill(t *testing.T) {
	tests := []struct {
		name   string
		module func() []byte
		fn     string
		args   []uint64
	}{
		{"loop", loopsModule, "spin", nil},
		{"nested", loopsModule, "spinNested", nil},
		{"value block type", loopsModule, "spinValue", nil},
		{"type index block type", loopsModule, "spinTypeIdx", []uint64{5}},
		{"imported globals", importsModule, "spin", nil},
		{"two-byte kill index", manyGlobalsModule, "spin", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := instantiate(t, mustInstrument(t, tc.module()))
			spinUntilKilled(t, killFlag(t, m), func() error {
				_, err := m.ExportedFunction(tc.fn).Call(context.Background(), tc.args...)
				return err
			})
		})
	}
}

// spinUntilKilled runs call, which must not return on its own, in a
// goroutine, sets kill after 50ms and expects an unreachable trap within 5s.
//
// Native wasm code cannot be preempted by the Go scheduler, so while call
// spins: (1) it occupies a P, and the goroutine that sets the flag needs
// another one; (2) a garbage collection cannot stop the world, so a GC
// started during the spin blocks every goroutine, including the one that
// would set the flag, and the process deadlocks (observed: the tail of a
// GC cycle, which flushes every P's cache, waits forever for the spinning
// P while the other P waits for it). Hence the GOMAXPROCS check, the
// sequential subtests, and GC disabled for the duration, after finishing
// any cycle in progress (runtime.GC returns only once sweeping, which
// follows that flush, is done).
func spinUntilKilled(t *testing.T, kill api.MutableGlobal, call func() error) {
	t.Helper()
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2: the spinning wasm call holds a P that the scheduler cannot preempt")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		t.Fatalf("call returned before the kill flag was set: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	start := time.Now()
	kill.Set(1)
	select {
	case err := <-done:
		if !isTrap(err) {
			t.Fatalf("call returned %v, want an unreachable trap", err)
		}
		t.Logf("trapped %v after the flag was set", time.Since(start))
	case <-time.After(5 * time.Second):
		// The goroutine keeps spinning; the test binary exits anyway.
		t.Fatal("call still running 5s after the kill flag was set")
	}
}

// TestKillFlagSetBeforeCall checks that the flag is per instance, that a
// loop traps on its first iteration when the flag is already set, and that
// loop-free code is unaffected.
func TestKillFlagSetBeforeCall(t *testing.T) {
	wasm := mustInstrument(t, loopsModule())
	r := newRuntime(t)
	ctx := context.Background()
	compiled, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	killed, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	other, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	killFlag(t, killed).Set(1)

	if _, err := killed.ExportedFunction("sum").Call(ctx, 10); !isTrap(err) {
		t.Errorf("sum on killed instance: err = %v, want unreachable trap", err)
	}
	if got, err := killed.ExportedFunction("noLoop").Call(ctx, 41); err != nil || got[0] != 42 {
		t.Errorf("noLoop on killed instance = %v, %v; want 42, nil", got, err)
	}
	if got, err := other.ExportedFunction("sum").Call(ctx, 10); err != nil || got[0] != 55 {
		t.Errorf("sum on other instance = %v, %v; want 55, nil", got, err)
	}
}

// TestStructure checks the instrumented binaries: loop count, kill export
// and index, check bytes after every loop, section order, custom sections,
// and that the input is untouched.
func TestStructure(t *testing.T) {
	for _, tm := range testModules() {
		t.Run(tm.name, func(t *testing.T) {
			in := bytes.Clone(tm.wasm)
			out, n, err := instrument(in)
			if err != nil {
				t.Fatalf("instrument: %v", err)
			}
			if !bytes.Equal(in, tm.wasm) {
				t.Fatal("input was modified")
			}
			if n != tm.loops {
				t.Errorf("inserted %d checks, want %d", n, tm.loops)
			}
			verifyInstrumented(t, tm.wasm, out, n, tm.killIndex)
			if _, err := Instrument(out); err == nil || !strings.Contains(err.Error(), "already exports") {
				t.Errorf("instrumenting twice: err = %v, want duplicate-export error", err)
			}
			if _, err := newRuntime(t).CompileModule(context.Background(), out); err != nil {
				t.Errorf("compile instrumented module: %v", err)
			}
		})
	}
}

func TestSectionLayout(t *testing.T) {
	tests := []struct {
		name    string
		wasm    []byte
		ids     []byte
		customs []string
	}{
		{
			name:    "custom sections",
			wasm:    loopsModule(),
			ids:     []byte{secType, secFunction, secGlobal, secExport, secCustom, secCode, secCustom},
			customs: []string{"producers", "name"},
		},
		{
			name: "created global and export before start and data count",
			wasm: startModule(),
			ids:  []byte{secType, secFunction, secMemory, secGlobal, secExport, secStart, secDataCount, secCode, secData},
		},
		{
			name: "created global before existing export",
			wasm: module(sec(secExport)),
			ids:  []byte{secGlobal, secExport},
		},
		{
			name: "created export after existing global",
			wasm: module(sec(secGlobal)),
			ids:  []byte{secGlobal, secExport},
		},
		{
			name: "empty module",
			wasm: emptyModule(),
			ids:  []byte{secGlobal, secExport},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := mustInstrument(t, tc.wasm)
			secs, err := parseSections(out)
			if err != nil {
				t.Fatalf("output does not parse: %v", err)
			}
			var ids []byte
			var customs []string
			for _, s := range secs {
				ids = append(ids, s.id)
				if s.id == secCustom {
					name, err := customName(s)
					if err != nil {
						t.Fatal(err)
					}
					customs = append(customs, name)
				}
			}
			if !bytes.Equal(ids, tc.ids) {
				t.Errorf("section ids = %v, want %v", ids, tc.ids)
			}
			if !slices.Equal(customs, tc.customs) {
				t.Errorf("custom sections = %q, want %q", customs, tc.customs)
			}
			m := instantiate(t, out)
			if v := killFlag(t, m).Get(); v != 0 {
				t.Errorf("kill flag = %d, want 0", v)
			}
		})
	}
}

func TestInstrumentErrors(t *testing.T) {
	b := func(x ...byte) []byte { return x }
	code := func(bodies ...[]byte) []byte { return sec(secCode, bodies...) }
	tests := []struct {
		name string
		wasm []byte
		want []string // substrings of the error
	}{
		{"nil", nil, []string{"bad magic"}},
		{"bad magic", b('\x00', 'a', 's', 'n', 1, 0, 0, 0), []string{"bad magic"}},
		{"component version", b('\x00', 'a', 's', 'm', 0x0d, 0, 1, 0), []string{"version"}},
		{"truncated section size", module(b(secType)), []string{"section header at offset 0x8"}},
		{"section past end", module(b(secType, 0x05, 0x00)), []string{"type section at offset 0x8", "exceeds"}},
		{"size LEB overflow", module(b(secType, 0xff, 0xff, 0xff, 0xff, 0x7f)), []string{"overflows"}},
		{"unknown section id", module(rawSec(14, nil)), []string{"unknown section id"}},
		{"out of order", module(sec(secFunction), sec(secType)), []string{"type section", "out of order"}},
		{"duplicate section", module(sec(secType), sec(secType)), []string{"out of order or duplicated"}},
		{"bad custom name", module(rawSec(secCustom, b(0x05, 'a'))), []string{"custom section", "bad name"}},
		{"bad import kind", module(sec(secImport, importDesc("a", "b", 0x07))), []string{"import section", "import 0", "unknown import kind"}},
		{"truncated import", module(sec(secImport, b(0x01, 'a'))), []string{"import section", "import 0"}},
		{"bad export kind", module(sec(secExport, b(0x01, 'a', 0x09, 0x00))), []string{"export section", "unknown export kind"}},
		{"duplicate kill export", module(sec(secExport, export(GlobalName, kindFunc, 0))), []string{"already exports"}},
		{"code trailing bytes", module(rawSec(secCode, b(0x00, 0x0b))), []string{"code section", "trailing"}},
		{"body past section", module(rawSec(secCode, b(0x01, 0x0a, 0x00, 0x0b))), []string{"code section", "body 0", "exceeds"}},
		{"bad locals", module(code(body([][2]int{{1, 0x42}}, b(0x0b)))), []string{"locals", "unknown value type 0x42"}},
		{"unknown opcode", module(code(body(nil, b(0x01, 0x06, 0x40, 0x0b, 0x0b)))), []string{"code section", "body 0 (function index 0)", "at offset 0xb: offset 0xe: unknown opcode 0x06"}},
		{
			"function index counts imports",
			module(sec(secImport, importDesc("m", "f", kindFunc, 0x00)), code(body(nil, b(0x0b)), body(nil, b(0xff, 0x0b)))),
			[]string{"body 1 (function index 2)", "unknown opcode 0xff"},
		},
		{"unknown simd opcode", module(code(body(nil, b(0xfd, 0x9a, 0x01, 0x0b)))), []string{"unknown 0xfd sub-opcode 0x9a"}},
		{"missing end", module(code(body(nil, b(0x01)))), []string{"does not end with end"}},
		{"end before body end", module(code(body(nil, b(0x0b, 0x01)))), []string{"function end with 1 bytes left"}},
		{"unclosed block", module(code(body(nil, b(0x02, 0x40, 0x0b)))), []string{"does not end with end"}},
		{"truncated immediate", module(code(body(nil, b(0x41)))), []string{"opcode 0x41", "truncated LEB128"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Instrument(tc.wasm)
			if err == nil {
				t.Fatalf("Instrument succeeded (%d bytes), want error", len(out))
			}
			if out != nil {
				t.Errorf("Instrument returned %d bytes with an error", len(out))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "wasmkill: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

// functionBodies returns the instruction streams (after locals) of every
// function body in a module.
func functionBodies(t testing.TB, wasm []byte) []reader {
	t.Helper()
	secs, err := parseSections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []reader
	for _, s := range secs {
		if s.id != secCode {
			continue
		}
		r := s.payload
		n, err := r.u32()
		if err != nil {
			t.Fatal(err)
		}
		for i := uint32(0); i < n; i++ {
			size, err := r.u32()
			if err != nil {
				t.Fatal(err)
			}
			b, err := r.sub(size)
			if err != nil {
				t.Fatal(err)
			}
			if err := skipLocals(&b); err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, b)
		}
	}
	return bodies
}

// opcodeCensus counts every instruction in a module and returns the
// offsets just past each loop's block type.
func opcodeCensus(t testing.TB, wasm []byte) (map[opcode]int, []int) {
	t.Helper()
	counts := map[opcode]int{}
	var loops []int
	for _, b := range functionBodies(t, wasm) {
		var err error
		loops, err = scanExpr(&b, loops, func(op opcode) { counts[op]++ })
		if err != nil {
			t.Fatal(err)
		}
	}
	return counts, loops
}

// verifyInstrumented checks an instrumented module against its input: it
// has as many loops, each followed by the check for killIndex; its opcode
// histogram differs by exactly n copies of the check's four instructions;
// and it exports the kill global with index killIndex.
func verifyInstrumented(t testing.TB, in, out []byte, n, killIndex int) {
	t.Helper()
	inCounts, inLoops := opcodeCensus(t, in)
	outCounts, outLoops := opcodeCensus(t, out)
	if len(inLoops) != n || len(outLoops) != n {
		t.Fatalf("loops: input %d, output %d, inserted %d", len(inLoops), len(outLoops), n)
	}
	check := cat([]byte{opGlobalGet}, leb(killIndex), []byte{opIf, blockTypeEmpty, opUnreachable, opEnd})
	added := map[opcode]int{opGlobalGet: 1, opIf: 1, opUnreachable: 1, opEnd: 1}
	if hasMemory(t, in) {
		// Modules with a memory get the yielding check (see YieldEvery).
		check = yieldingCheck(uint32(killIndex), uint32(killIndex)+1)
		added = map[opcode]int{opGlobalGet: 3, 0x41: 3, 0x6b: 1, 0x24: 2, 0x45: 1, opIf: 2, 0x40: 1, 0x1a: 1, opUnreachable: 1, opEnd: 2}
	}
	for _, at := range outLoops {
		if !bytes.HasPrefix(out[at:], check) {
			t.Fatalf("loop at offset %#x is followed by % x, want % x", at, out[at:min(at+len(check), len(out))], check)
		}
	}
	for op, k := range added {
		if n > 0 {
			inCounts[op] += n * k
		}
	}
	if !maps.Equal(inCounts, outCounts) {
		t.Errorf("opcode histogram: output %v, want input + checks %v", outCounts, inCounts)
	}
	secs, err := parseSections(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secs {
		if s.id != secExport {
			continue
		}
		r := s.payload
		count, _ := r.u32()
		for i := uint32(0); i < count; i++ {
			nl, _ := r.u32()
			name, _ := r.sub(nl)
			kind, _ := r.byte()
			idx, _ := r.u32()
			if string(name.buf[name.pos:name.end]) == GlobalName {
				if kind != kindGlobal || int(idx) != killIndex {
					t.Errorf("export %q: kind %d index %d, want global %d", GlobalName, kind, idx, killIndex)
				}
				return
			}
		}
	}
	t.Errorf("no export named %q", GlobalName)
}

// hasMemory reports whether a module defines or imports a memory.
func hasMemory(t testing.TB, wasm []byte) bool {
	t.Helper()
	secs, err := parseSections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secs {
		switch s.id {
		case secMemory:
			if n, _, _ := vecCount(s); n > 0 {
				return true
			}
		case secImport:
			if _, _, m, _ := importCounts(s); m > 0 {
				return true
			}
		}
	}
	return false
}

// TestKillLandsDuringGC is the reason for YieldEvery: a guest spinning in a loop that never calls
// the host must not hang a garbage collection (and with it the whole process, including the timer
// that sets the kill flag).
func TestKillLandsDuringGC(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2")
	}
	ctx := context.Background()
	out, err := Instrument(spinWithMemory)
	if err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t)
	mod, err := r.InstantiateModule(ctx, mustCompile(t, r, out), wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := mod.ExportedFunction("spin").Call(ctx); done <- err }()
	time.Sleep(20 * time.Millisecond)
	gcDone := make(chan struct{})
	go func() { runtime.GC(); close(gcDone) }()
	select {
	case <-gcDone:
	case <-time.After(10 * time.Second):
		t.Fatal("a garbage collection could not stop a spinning guest")
	}
	killFlag(t, mod).Set(1)
	select {
	case err := <-done:
		if !isTrap(err) {
			t.Fatalf("err = %v, want a trap", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the kill did not land")
	}
}

// spinWithMemory is (module (memory 1) (func (export "spin") (loop (br 0)))).
var spinWithMemory = cat(
	[]byte("\x00asm\x01\x00\x00\x00"),
	[]byte{0x01, 0x04, 0x01, 0x60, 0x00, 0x00},                               // type: () -> ()
	[]byte{0x03, 0x02, 0x01, 0x00},                                           // function 0: type 0
	[]byte{0x05, 0x03, 0x01, 0x00, 0x01},                                     // memory: min 1
	[]byte{0x07, 0x08, 0x01, 0x04, 's', 'p', 'i', 'n', 0x00, 0x00},           // export "spin" = func 0
	[]byte{0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b}, // code: loop; br 0; end; end
)

func mustCompile(t testing.TB, r wazero.Runtime, wasm []byte) wazero.CompiledModule {
	t.Helper()
	c, err := r.CompileModule(context.Background(), wasm)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
