package wasmkill

// Hand-assembled test modules. There is no wat2wasm here, so modules are
// built from bytes with a few encoding helpers; each body carries its
// WebAssembly text in comments.

const (
	tI32  = 0x7f
	tI64  = 0x7e
	tV128 = 0x7b
	tFunc = 0x70 // funcref
)

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func leb(v int) []byte { return appendU32(nil, uint32(v)) }

// sleb32 is the signed LEB128 encoding used by i32.const.
func sleb32(v int32) []byte { return appendS32(nil, v) }

func str(s string) []byte { return cat(leb(len(s)), []byte(s)) }

// vec encodes a vector: element count followed by the elements.
func vec(items ...[]byte) []byte { return cat(leb(len(items)), cat(items...)) }

// sec encodes a section whose payload is a vector of items.
func sec(id byte, items ...[]byte) []byte { return rawSec(id, vec(items...)) }

func rawSec(id byte, payload []byte) []byte { return cat([]byte{id}, leb(len(payload)), payload) }

func customSec(name string, data []byte) []byte { return rawSec(secCustom, cat(str(name), data)) }

func module(sections ...[]byte) []byte { return cat(wasmHeader, cat(sections...)) }

func functype(params, results []byte) []byte {
	return cat([]byte{0x60}, vec(splitBytes(params)...), vec(splitBytes(results)...))
}

func splitBytes(b []byte) [][]byte {
	var out [][]byte
	for i := range b {
		out = append(out, b[i:i+1])
	}
	return out
}

// body encodes a code-section entry: size, locals, instructions.
// locals is a list of (count, type) pairs.
func body(locals [][2]int, instrs ...[]byte) []byte {
	var decls [][]byte
	for _, l := range locals {
		decls = append(decls, cat(leb(l[0]), []byte{byte(l[1])}))
	}
	b := cat(vec(decls...), cat(instrs...))
	return cat(leb(len(b)), b)
}

func export(name string, kind byte, idx int) []byte { return cat(str(name), []byte{kind}, leb(idx)) }

func importDesc(mod, name string, kind byte, desc ...byte) []byte {
	return cat(str(mod), str(name), []byte{kind}, desc)
}

// i32Global is (global i32 (i32.const v)), mutable if mut.
func i32Global(mut bool, v int32) []byte {
	m := byte(0)
	if mut {
		m = 1
	}
	return cat([]byte{tI32, m, 0x41}, sleb32(v), []byte{opEnd})
}

func rep(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

var i32x1 = [][2]int{{1, tI32}}

// loopsModule has no imports, no globals and one function per loop shape.
// It also carries custom sections: DWARF ones must be dropped, others kept.
func loopsModule() []byte {
	b := func(x ...byte) []byte { return x }
	sum := cat(
		b(0x02, 0x40),                               // block
		b(0x03, 0x40),                               //   loop
		b(0x20, 0x00, 0x45, 0x0d, 0x01),             // local.get 0; i32.eqz; br_if 1
		b(0x20, 0x01, 0x20, 0x00, 0x6a, 0x21, 0x01), // acc += n
		b(0x20, 0x00, 0x41, 0x01, 0x6b, 0x21, 0x00), // n--
		b(0x0c, 0x00),                               // br 0
		b(0x0b, 0x0b),                               // end end
		b(0x20, 0x01, 0x0b),                         // local.get 1
	)
	return module(
		customSec(".debug_info", []byte{1, 2, 3}),
		sec(secType,
			functype(nil, nil),         // 0: () -> ()
			functype(b(tI32), b(tI32)), // 1: (i32) -> i32
			functype(nil, b(tI32)),     // 2: () -> i32
		),
		sec(secFunction, leb(0), leb(1), leb(1), leb(0), leb(1), leb(1), leb(1), leb(2), leb(1), leb(1)),
		sec(secExport,
			export("spin", kindFunc, 0),
			export("sum", kindFunc, 1),
			export("nested", kindFunc, 2),
			export("spinNested", kindFunc, 3),
			export("valueLoop", kindFunc, 4),
			export("typeIdx", kindFunc, 5),
			export("spinTypeIdx", kindFunc, 6),
			export("spinValue", kindFunc, 7),
			export("noLoop", kindFunc, 8),
			export("padded", kindFunc, 9),
		),
		customSec("producers", vec()),
		sec(secCode,
			// spin: (loop $l (br $l))
			body(nil, b(0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b)),
			// sum(n): acc = n + (n-1) + ... + 1
			body(i32x1, sum),
			// nested(n): n*n by counting in two nested loops; locals i j acc
			body([][2]int{{3, tI32}}, cat(
				b(0x02, 0x40, 0x03, 0x40),                   // block loop
				b(0x20, 0x01, 0x20, 0x00, 0x4f, 0x0d, 0x01), // br_if 1 (i >= n)
				b(0x41, 0x00, 0x21, 0x02),                   // j = 0
				b(0x02, 0x40, 0x03, 0x40),                   //   block loop
				b(0x20, 0x02, 0x20, 0x00, 0x4f, 0x0d, 0x01), // br_if 1 (j >= n)
				b(0x20, 0x03, 0x41, 0x01, 0x6a, 0x21, 0x03), // acc++
				b(0x20, 0x02, 0x41, 0x01, 0x6a, 0x21, 0x02), // j++
				b(0x0c, 0x00, 0x0b, 0x0b),                   // br 0 end end
				b(0x20, 0x01, 0x41, 0x01, 0x6a, 0x21, 0x01), // i++
				b(0x0c, 0x00, 0x0b, 0x0b),                   // br 0 end end
				b(0x20, 0x03, 0x0b),                         // local.get acc
			)),
			// spinNested: (loop (local.set 0 (i32.const 0))
			//   (loop (br_if 0 (i32.lt_u (local.tee 0 (i32.add (local.get 0) (i32.const 1))) (i32.const 1000))))
			//   (br 0))
			body(i32x1, cat(
				b(0x03, 0x40, 0x41, 0x00, 0x21, 0x00),
				b(0x03, 0x40, 0x20, 0x00, 0x41, 0x01, 0x6a, 0x22, 0x00, 0x41, 0xe8, 0x07, 0x49, 0x0d, 0x00, 0x0b),
				b(0x0c, 0x00, 0x0b, 0x0b),
			)),
			// valueLoop(n): (loop (result i32) acc += n; n--; br_if 0 (n); acc)
			body(i32x1, b(
				0x03, tI32,
				0x20, 0x01, 0x20, 0x00, 0x6a, 0x21, 0x01,
				0x20, 0x00, 0x41, 0x01, 0x6b, 0x22, 0x00,
				0x0d, 0x00,
				0x20, 0x01,
				0x0b, 0x0b,
			)),
			// typeIdx(x): x; (loop (type 1) [i32]->[i32] i32.const 1; i32.add; local.tee 1;
			//   br_if 0 (local.get 1 < 10)) => max(x+1, 10)
			body(i32x1, b(
				0x20, 0x00,
				0x03, 0x01,
				0x41, 0x01, 0x6a, 0x22, 0x01,
				0x20, 0x01, 0x41, 0x0a, 0x48, 0x0d, 0x00,
				0x0b, 0x0b,
			)),
			// spinTypeIdx(x): x; (loop (type 1) (br 0)) -- a value is on the stack at the loop head
			body(nil, b(0x20, 0x00, 0x03, 0x01, 0x0c, 0x00, 0x0b, 0x0b)),
			// spinValue: (loop (result i32) (br 0))
			body(nil, b(0x03, tI32, 0x0c, 0x00, 0x0b, 0x0b)),
			// noLoop(x): x + 1
			body(nil, b(0x20, 0x00, 0x41, 0x01, 0x6a, 0x0b)),
			// padded(n): 120 nops, then sum; the body size LEB grows to two
			// bytes only after instrumentation.
			body(i32x1, rep(0x01, 120), sum),
		),
		customSec(".debug_line", []byte{4, 5, 6}),
		customSec("name", cat([]byte{0x00}, leb(len(str("loops"))), str("loops"))),
	)
}

// loopsModuleLoops is the number of loop instructions in loopsModule.
const loopsModuleLoops = 11

// envModule provides the imports of importsModule.
func envModule() []byte {
	return module(
		sec(secType, functype(nil, []byte{tI32})),
		sec(secFunction, leb(0)),
		sec(secGlobal, i32Global(false, 7), i32Global(true, 11)),
		sec(secExport, export("five", kindFunc, 0), export("g0", kindGlobal, 0), export("g1", kindGlobal, 1)),
		sec(secCode, body(nil, []byte{0x41, 0x05, 0x0b})),
	)
}

// importsModule imports a function and two globals and defines a third
// global, so the kill global gets index 3 and must not disturb 0-2.
func importsModule() []byte {
	return module(
		sec(secType, functype(nil, []byte{tI32}), functype(nil, nil)),
		sec(secImport,
			importDesc("env", "five", kindFunc, 0x00),
			importDesc("env", "g0", kindGlobal, tI32, 0x00),
			importDesc("env", "g1", kindGlobal, tI32, 0x01),
		),
		sec(secFunction, leb(0), leb(0), leb(1)),
		sec(secGlobal, i32Global(true, 100)),
		sec(secExport,
			export("sumGlobals", kindFunc, 1),
			export("count", kindFunc, 2),
			export("spin", kindFunc, 3),
			export("g2", kindGlobal, 2),
		),
		sec(secCode,
			// sumGlobals: g0 + g1 + g2 + five() = 7 + 11 + 100 + 5
			body(nil, []byte{0x23, 0x00, 0x23, 0x01, 0x6a, 0x23, 0x02, 0x6a, 0x10, 0x00, 0x6a, 0x0b}),
			// count: (loop g1++; g2++; br_if 0 (g2 < 200)) g2 + g1 = 200 + 111
			body(nil, []byte{
				0x03, 0x40,
				0x23, 0x01, 0x41, 0x01, 0x6a, 0x24, 0x01,
				0x23, 0x02, 0x41, 0x01, 0x6a, 0x24, 0x02,
				0x23, 0x02, 0x41, 0xc8, 0x01, 0x48, 0x0d, 0x00,
				0x0b,
				0x23, 0x02, 0x23, 0x01, 0x6a,
				0x0b,
			}),
			// spin
			body(nil, []byte{0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b}),
		),
	)
}

// startModule has no export section and no global section (both must be
// created), a start section between them and code, a data count section,
// and a start function that traps unless its loop computes 55 from a
// passive data segment (so instantiation itself checks semantics).
func startModule() []byte {
	return module(
		sec(secType, functype(nil, nil)),
		sec(secFunction, leb(0)),
		sec(secMemory, []byte{0x00, 0x01}),
		rawSec(secStart, leb(0)),
		rawSec(secDataCount, leb(1)),
		sec(secCode, body([][2]int{{2, tI32}}, []byte{
			0x41, 0x00, 0x41, 0x00, 0x41, 0x04, 0xfc, 0x08, 0x00, 0x00, // memory.init 0 (dst 0, src 0, len 4)
			0xfc, 0x09, 0x00, // data.drop 0
			0x02, 0x40, 0x03, 0x40, // block loop
			0x20, 0x00, 0x41, 0x00, 0x28, 0x02, 0x00, 0x4e, 0x0d, 0x01, // br_if 1 (i >= mem[0])
			0x20, 0x00, 0x41, 0x01, 0x6a, 0x22, 0x00, 0x20, 0x01, 0x6a, 0x21, 0x01, // i++; acc += i
			0x0c, 0x00, 0x0b, 0x0b, // br 0 end end
			0x20, 0x01, 0x41, 0x37, 0x47, 0x04, 0x40, 0x00, 0x0b, // if acc != 55: unreachable
			0x0b,
		})),
		sec(secData, cat([]byte{0x01}, vec([]byte{10}, []byte{0}, []byte{0}, []byte{0}))),
	)
}

// manyGlobalsModule defines 200 globals, so the kill index needs a
// two-byte LEB128.
func manyGlobalsModule() []byte {
	globals := make([][]byte, 200)
	for i := range globals {
		globals[i] = i32Global(true, int32(i))
	}
	return module(
		sec(secType, functype(nil, nil), functype(nil, []byte{tI32})),
		sec(secFunction, leb(0), leb(1)),
		sec(secGlobal, globals...),
		sec(secExport, export("spin", kindFunc, 0), export("last", kindFunc, 1)),
		sec(secCode,
			body(nil, []byte{0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b}),
			// last: (loop (br_if 0 (i32.lt_s (global.get 199) ... ))) -- one pass, returns global 199
			body(nil, cat([]byte{0x03, 0x40, 0x0b, 0x23}, leb(199), []byte{0x0b})),
		),
	)
}

// immediatesModule exercises opcodes whose immediates contain 0x03 bytes
// (which a byte scan would take for loop), across MVP, bulk memory,
// reference types, SIMD and tail calls. It has exactly two loops. "ops"
// runs without trapping when the kill flag is 0.
func immediatesModule() []byte {
	b := func(x ...byte) []byte { return x }
	v128 := cat(b(0xfd, 0x0c), rep(0x03, 16)) // v128.const 0x03 x16
	return module(
		sec(secType,
			functype(nil, nil),         // 0
			functype(b(tI32), b(tI32)), // 1
			functype(nil, b(tI32)),     // 2
			functype(nil, nil),         // 3 (same shape as 0)
		),
		sec(secFunction, leb(0), leb(0)),
		sec(secTable, b(tFunc, 0x00, 0x01)),
		sec(secMemory, b(0x00, 0x01)),
		sec(secGlobal, i32Global(false, 0), i32Global(false, 1), i32Global(false, 2), i32Global(false, 3)),
		sec(secExport, export("ops", kindFunc, 0)),
		sec(secElement, cat(b(0x00, 0x41, 0x00, 0x0b), vec(leb(0)))),
		sec(secCode,
			body([][2]int{{4, tI32}, {1, tV128}}, cat(
				b(0x41, 0x03, 0x1a),            // i32.const 3; drop
				b(0x42, 0x03, 0x1a),            // i64.const 3; drop
				b(0x43), rep(0x03, 4), b(0x1a), // f32.const; drop
				b(0x44), rep(0x03, 8), b(0x1a), // f64.const; drop
				b(0x20, 0x03, 0x1a),                   // local.get 3; drop
				b(0x23, 0x03, 0x1a),                   // global.get 3; drop
				b(0x41, 0x00, 0x28, 0x02, 0x03, 0x1a), // i32.load align=2 offset=3
				b(0x41, 0x00, 0x2d, 0x00, 0x03, 0x1a), // i32.load8_u offset=3
				// block block block (br_table 0 1 2 2 (i32.const 0)) end end end
				b(0x02, 0x40, 0x02, 0x40, 0x02, 0x40, 0x41, 0x00, 0x0e, 0x03, 0x00, 0x01, 0x02, 0x02, 0x0b, 0x0b, 0x0b),
				// if (i32.const 0) (call_indirect (type 3) (i32.const 0)) end
				b(0x41, 0x00, 0x04, 0x40, 0x41, 0x00, 0x11, 0x03, 0x00, 0x0b),
				v128, b(0x1a), // v128.const; drop
				v128, v128, b(0xfd, 0x0d), rep(0x03, 16), b(0x1a), // i8x16.shuffle
				v128, b(0xfd, 0x15, 0x03, 0x1a), // i8x16.extract_lane_s 3
				b(0x41, 0x00), v128, b(0xfd, 0x54, 0x00, 0x03, 0x03, 0x1a), // v128.load8_lane offset=3 lane=3
				b(0x41, 0x00, 0xfd, 0x00, 0x04, 0x03, 0x21, 0x04),             // v128.load align=4 offset=3; local.set 4
				b(0x20, 0x04, 0xfd, 0x80, 0x01, 0x1a),                         // i16x8.abs (two-byte sub-opcode 0x80)
				b(0x41, 0x00, 0x41, 0x03, 0x41, 0x03, 0xfc, 0x0b, 0x00),       // memory.fill
				b(0x41, 0x00, 0x41, 0x03, 0x41, 0x03, 0xfc, 0x0a, 0x00, 0x00), // memory.copy
				b(0x41, 0x03, 0x41, 0x03, 0x41, 0x01, 0x1c, 0x01, tI32, 0x1a), // select (result i32)
				b(0xd0, tFunc, 0xd1, 0x1a),                                    // ref.null func; ref.is_null; drop
				b(0xd2, 0x00, 0x1a),                                           // ref.func 0; drop
				b(0x41, 0x00, 0x25, 0x00, 0x1a),                               // table.get 0; drop
				b(0xfc, 0x10, 0x00, 0x1a),                                     // table.size 0; drop
				b(0x43, 0x00, 0x00, 0x00, 0x00, 0xfc, 0x00, 0x1a),             // i32.trunc_sat_f32_s
				b(0x41, 0x03, 0xc0, 0x1a),                                     // i32.extend8_s
				b(0x02, 0x02, 0x41, 0x03, 0x0b, 0x1a),                         // block (type 2) i32.const 3 end; drop
				b(0x41, 0x01, 0x04, 0x40, 0x01, 0x05, 0x01, 0x0b),             // if nop else nop end
				b(0x03, 0x03, 0x0b),                                           // loop (type 3) end
				b(0x03, 0x40, 0x41, 0x03, 0x1a, 0x0b),                         // loop i32.const 3; drop end
				b(0x0b),
			)),
			// tail: (return_call 0) (return_call_indirect (type 3) (i32.const 0))
			body(nil, b(0x12, 0x00, 0x41, 0x00, 0x13, 0x03, 0x00, 0x0b)),
		),
	)
}

// emptyModule is the smallest valid module.
func emptyModule() []byte { return module() }

type testModule struct {
	name      string
	wasm      []byte
	loops     int // loop instructions in the module
	killIndex int // index the kill global must get
}

func testModules() []testModule {
	return []testModule{
		{"loops", loopsModule(), loopsModuleLoops, 0},
		{"env", envModule(), 0, 2},
		{"imports", importsModule(), 2, 3},
		{"start", startModule(), 1, 0},
		{"manyGlobals", manyGlobalsModule(), 2, 200},
		{"immediates", immediatesModule(), 2, 4},
		{"empty", emptyModule(), 0, 0},
	}
}
