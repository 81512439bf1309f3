// Package wasmkill rewrites a WebAssembly module so that the host can stop
// a runaway call at the next loop iteration.
//
// Guest code can spin forever inside a single wasm call (for example a
// QuickJS built-in that never consults the interrupt handler). wazero can
// abort such calls with WithCloseOnContextDone, but that makes every loop
// iteration call out to Go and makes QuickJS 3-6x slower. Instead,
// Instrument rewrites the module once per process: every loop starts with
// a test of one exported mutable i32 global and traps with `unreachable`
// when it is non-zero. The host sets the global (via api.MutableGlobal)
// from a timer at deadline+grace; the running call traps at its next loop
// iteration, and the host then discards the instance, whose state may be
// mid-update. In a tight loop the check costs nothing measurable.
//
// Only loops are instrumented: without a loop, wasm control flow can only
// move forward or recurse, and recursion ends in stack exhaustion, so every
// non-terminating execution passes a loop head infinitely often. (Tail
// calls, return_call*, break that argument; they are not instrumented.
// QuickJS does not use them, and wazero rejects them unless its
// experimental tail-call feature is enabled.)
//
// Caveat, from the Go side: compiled wasm code is not preemptible, and the
// check never leaves wasm. While a call spins, its goroutine holds a P, so
// the goroutine that sets the flag needs another one (GOMAXPROCS must exceed
// the number of concurrently spinning calls); and a garbage collection that
// starts meanwhile cannot stop the world or finish its cycle, which blocks
// every goroutine, the one that would set the flag included: the process
// hangs. Code that can spin without calling the host must therefore not
// rely on this flag alone while the Go heap may be collected. (A check that
// also leaves wasm every few thousand iterations, e.g. through
// `memory.grow 0`, which wazero services in Go, was measured to avoid the
// hang at no measurable cost to QuickJS; it is not implemented here.)
package wasmkill

import (
	"fmt"
	"math"
)

// GlobalName is the export name of the injected kill flag (mutable i32,
// initially 0). Setting it to any non-zero value makes every instrumented
// loop trap on its next iteration. The flag is per instance, so one kill
// does not affect other instances of the same compiled module.
const GlobalName = "codemode_kill"

// Instrument returns a new module binary in which every `loop` instruction
// in every function body is immediately followed by:
//
//	global.get $kill
//	if (empty)
//	  unreachable
//	end
//
// It appends one mutable i32 global (init 0) and exports it as GlobalName.
// Appending leaves every existing global index unchanged, so no other
// instruction needs rewriting. The input is not modified.
//
// Custom sections are copied unchanged except DWARF (.debug_*), which is
// dropped because the inserted bytes invalidate its code offsets.
//
// Instrument decodes every instruction (it needs each opcode's immediates to
// tell a real loop opcode from a 0x03 byte inside an immediate) but does not
// otherwise validate the module; compiling the output does that. Errors name
// the section, function and offset that could not be decoded; opcodes it
// does not know are errors rather than guesses.
func Instrument(wasm []byte) ([]byte, error) {
	out, _, err := instrument(wasm)
	return out, err
}

// instrument is Instrument that also reports the number of checks inserted
// (which equals the number of loop instructions), for tests.
func instrument(wasm []byte) ([]byte, int, error) {
	sections, err := parseSections(wasm)
	if err != nil {
		return nil, 0, err
	}

	var importedFuncs, importedGlobals, definedGlobals, memories uint32
	for _, s := range sections {
		switch s.id {
		case secImport:
			var m uint32
			if importedFuncs, importedGlobals, m, err = importCounts(s); err != nil {
				return nil, 0, err
			}
			memories += m
		case secMemory:
			n, _, err := vecCount(s)
			if err != nil {
				return nil, 0, err
			}
			memories += n
		case secGlobal:
			if definedGlobals, _, err = vecCount(s); err != nil {
				return nil, 0, err
			}
		case secExport:
			count, dup, err := exportsContain(s, GlobalName)
			if err != nil {
				return nil, 0, err
			}
			if count == math.MaxUint32 {
				return nil, 0, s.errorf("too many exports to add one")
			}
			if dup {
				return nil, 0, s.errorf("module already exports %q (instrumented twice?)", GlobalName)
			}
		}
	}
	killIndex := uint64(importedGlobals) + uint64(definedGlobals)
	if killIndex+1 >= math.MaxUint32 {
		return nil, 0, fmt.Errorf("wasmkill: too many globals (%d) to add one", killIndex)
	}

	// global.get $kill; if (empty); unreachable; end
	check := []byte{opGlobalGet}
	check = appendU32(check, uint32(killIndex))
	check = append(check, opIf, blockTypeEmpty, opUnreachable, opEnd)
	yields := memories > 0
	if yields {
		check = yieldingCheck(uint32(killIndex), uint32(killIndex)+1)
	}

	// The output is the input plus a few bytes per loop; QuickJS has
	// about one loop per 400 bytes of code (+1.2% in size).
	out := make([]byte, 0, len(wasm)+len(wasm)/32+64)
	out = append(out, wasmHeader...)

	inserted := 0
	globalDone, exportDone := false, false
	// flush emits the global and export sections if they have not been
	// emitted yet and a section that must follow them is about to be.
	flush := func(rank int) {
		if !globalDone && rank > sectionRank[secGlobal] {
			out = appendSection(out, secGlobal, newGlobalSection(nil, yields))
			globalDone = true
		}
		if !exportDone && rank > sectionRank[secExport] {
			out = appendSection(out, secExport, newExportSection(nil, killIndex))
			exportDone = true
		}
	}
	for _, s := range sections {
		if s.id == secCustom {
			name, err := customName(s)
			if err != nil {
				return nil, 0, s.errorf("bad name: %v", err)
			}
			if !dropCustom(name) {
				out = append(out, s.raw()...)
			}
			continue
		}
		flush(sectionRank[s.id])
		switch s.id {
		case secGlobal:
			out = appendSection(out, secGlobal, newGlobalSection(&s, yields))
			globalDone = true
		case secExport:
			out = appendSection(out, secExport, newExportSection(&s, killIndex))
			exportDone = true
		case secCode:
			payload, n, err := rewriteCode(s, check, importedFuncs)
			if err != nil {
				return nil, 0, err
			}
			if uint64(len(payload)) > math.MaxUint32 {
				return nil, 0, s.errorf("instrumented code section too large (%d bytes)", len(payload))
			}
			out = appendSection(out, secCode, payload)
			inserted = n
		default:
			out = append(out, s.raw()...)
		}
	}
	flush(math.MaxInt)
	return out, inserted, nil
}

// YieldEvery is how many loop iterations pass between two exits to Go in a module with a memory.
// Compiled wasm cannot be preempted by the Go scheduler: a guest spinning in a loop that never
// calls the host would hold its thread through a garbage collection's stop-the-world, and the
// whole process — the timer that sets the kill flag included — would hang. So every YieldEvery
// iterations the check runs `memory.grow 0`, which wazero services in Go (a preemption point), and
// tests the kill flag there. Measured: no visible cost on QuickJS, and the kill lands in
// microseconds even while a GC is pending.
const YieldEvery = 4096

// yieldingCheck is the loop-head sequence with the periodic exit:
//
//	global.get $count; i32.const 1; i32.sub; global.set $count
//	global.get $count; i32.eqz
//	if
//	  i32.const 0; memory.grow 0; drop
//	  global.get $kill; if; unreachable; end
//	  i32.const YieldEvery; global.set $count
//	end
func yieldingCheck(kill, count uint32) []byte {
	k, c := appendU32(nil, kill), appendU32(nil, count)
	b := []byte{opGlobalGet}
	b = append(b, c...)
	b = append(b, 0x41, 0x01, 0x6b, 0x24) // i32.const 1; i32.sub; global.set
	b = append(b, c...)
	b = append(b, opGlobalGet)
	b = append(b, c...)
	b = append(b, 0x45, opIf, blockTypeEmpty)   // i32.eqz; if
	b = append(b, 0x41, 0x00, 0x40, 0x00, 0x1a) // i32.const 0; memory.grow 0; drop
	b = append(b, opGlobalGet)
	b = append(b, k...)
	b = append(b, opIf, blockTypeEmpty, opUnreachable, opEnd)
	b = append(b, 0x41)
	b = appendS32(b, YieldEvery)
	b = append(b, 0x24) // global.set
	b = append(b, c...)
	return append(b, opEnd)
}

// killGlobal is the appended global: (global (mut i32) (i32.const 0)).
var killGlobal = []byte{0x7f, 0x01, 0x41, 0x00, opEnd}

// newGlobalSection returns the payload of the global section with the kill
// global appended; s is the existing section or nil. The existing entries
// are copied verbatim. The caller has already checked that the count
// decodes and that count+1 fits in a u32.
func newGlobalSection(s *section, yields bool) []byte {
	var count uint32
	var rest []byte
	if s != nil {
		count, rest, _ = vecCount(*s)
	}
	p := make([]byte, 0, len(rest)+2*len(killGlobal)+10)
	extra := uint32(1)
	if yields {
		extra = 2
	}
	p = appendU32(p, count+extra)
	p = append(p, rest...)
	p = append(p, killGlobal...)
	if yields {
		// The countdown: (global (mut i32) (i32.const YieldEvery)), right after the kill flag.
		p = append(p, 0x7f, 0x01, 0x41)
		p = appendS32(p, YieldEvery)
		p = append(p, opEnd)
	}
	return p
}

// newExportSection returns the payload of the export section with the kill
// global's export appended; s is the existing section or nil.
func newExportSection(s *section, killIndex uint64) []byte {
	var count uint32
	var rest []byte
	if s != nil {
		count, rest, _ = vecCount(*s)
	}
	p := make([]byte, 0, len(rest)+len(GlobalName)+12)
	p = appendU32(p, count+1)
	p = append(p, rest...)
	p = appendU32(p, uint32(len(GlobalName)))
	p = append(p, GlobalName...)
	p = append(p, kindGlobal)
	return appendU32(p, uint32(killIndex))
}

// rewriteCode returns the payload of the code section with check inserted
// after every loop's block type, and the number of insertions. Body sizes
// are re-encoded; locals and all other bytes are copied unchanged.
func rewriteCode(s section, check []byte, importedFuncs uint32) ([]byte, int, error) {
	r := s.payload
	wasm := r.buf
	count, err := r.u32()
	if err != nil {
		return nil, 0, s.errorf("%v", err)
	}
	payload := make([]byte, 0, r.end-r.pos+(r.end-r.pos)/32+8)
	payload = appendU32(payload, count)
	var loops []int
	inserted := 0
	for i := uint32(0); i < count; i++ {
		at := r.pos
		fail := func(err error) ([]byte, int, error) {
			return nil, 0, s.errorf("body %d (function index %d) at offset %#x: %v", i, uint64(importedFuncs)+uint64(i), at, err)
		}
		size, err := r.u32()
		if err != nil {
			return fail(err)
		}
		body, err := r.sub(size)
		if err != nil {
			return fail(err)
		}
		start := body.pos
		if err := skipLocals(&body); err != nil {
			return fail(fmt.Errorf("locals: %w", err))
		}
		if loops, err = scanExpr(&body, loops[:0], nil); err != nil {
			return fail(err)
		}
		newSize := uint64(size) + uint64(len(loops))*uint64(len(check))
		if newSize > math.MaxUint32 {
			return fail(fmt.Errorf("instrumented body too large (%d bytes)", newSize))
		}
		payload = appendU32(payload, uint32(newSize))
		prev := start
		for _, p := range loops {
			payload = append(payload, wasm[prev:p]...)
			payload = append(payload, check...)
			prev = p
		}
		payload = append(payload, wasm[prev:body.end]...)
		inserted += len(loops)
	}
	if r.pos != r.end {
		return nil, 0, s.errorf("%d trailing bytes at offset %#x", r.end-r.pos, r.pos)
	}
	return payload, inserted, nil
}
