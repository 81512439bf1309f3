package wasmkill

import "fmt"

// opcode identifies an instruction: the opcode byte for single-byte
// opcodes, or prefix<<24 | sub-opcode for the 0xFC/0xFD/0xFE families.
// It exists so tests can census the opcodes a module uses.
type opcode uint32

const (
	opBlock       = 0x02
	opLoop        = 0x03
	opIf          = 0x04
	opEnd         = 0x0b
	opGlobalGet   = 0x23
	opUnreachable = 0x00
	opTryTable    = 0x1f

	prefixMisc   = 0xfc
	prefixSIMD   = 0xfd
	prefixAtomic = 0xfe

	blockTypeEmpty = 0x40
)

// imm describes the immediates that follow a single-byte opcode. The zero
// value is immInvalid so that every opcode not listed in immediates is
// rejected: guessing an instruction's length would silently desynchronise
// the walker, and a 0x03 byte inside an immediate would then be taken for a
// loop and "instrumented", corrupting the module.
type imm uint8

const (
	immInvalid  imm = iota
	immNone         // no immediates
	immBlock        // block type; opens a block (block, if)
	immLoop         // block type; opens a block and is instrumented
	immTryTable     // block type + catch clauses; opens a block
	immEnd          // closes a block or the function
	immIdx          // one u32 (labels, functions, locals, globals, tables, tags, memories)
	immIdx2         // two u32 (call_indirect type+table, return_call_indirect)
	immBrTable      // vec(u32) + u32
	immSelectT      // vec(valtype)
	immMemarg       // memarg
	immI32          // s32
	immI64          // s64
	immF32          // 4 bytes
	immF64          // 8 bytes
	immHeapType     // heap type (ref.null)
	immPrefix       // 0xFC / 0xFD / 0xFE: u32 sub-opcode, then per-family immediates
)

var immediates = func() (t [256]imm) {
	set := func(lo, hi int, k imm) {
		for op := lo; op <= hi; op++ {
			t[op] = k
		}
	}
	set(0x00, 0x01, immNone) // unreachable, nop
	t[opBlock] = immBlock
	t[opLoop] = immLoop
	t[opIf] = immBlock
	t[0x05] = immNone // else
	t[0x08] = immIdx  // throw tag (exception handling, exnref flavour)
	t[0x0a] = immNone // throw_ref
	t[opEnd] = immEnd
	set(0x0c, 0x0d, immIdx) // br, br_if
	t[0x0e] = immBrTable
	t[0x0f] = immNone        // return
	t[0x10] = immIdx         // call
	t[0x11] = immIdx2        // call_indirect type table
	t[0x12] = immIdx         // return_call (tail calls)
	t[0x13] = immIdx2        // return_call_indirect type table
	set(0x14, 0x15, immIdx)  // call_ref, return_call_ref (typed function references)
	set(0x1a, 0x1b, immNone) // drop, select
	t[0x1c] = immSelectT
	t[opTryTable] = immTryTable
	set(0x20, 0x24, immIdx)    // local.get/set/tee, global.get/set
	set(0x25, 0x26, immIdx)    // table.get/set
	set(0x28, 0x3e, immMemarg) // loads and stores
	set(0x3f, 0x40, immIdx)    // memory.size, memory.grow (memory index)
	t[0x41] = immI32
	t[0x42] = immI64
	t[0x43] = immF32
	t[0x44] = immF64
	set(0x45, 0xc4, immNone) // numeric ops, incl. sign extension 0xc0-0xc4
	t[0xd0] = immHeapType    // ref.null
	t[0xd1] = immNone        // ref.is_null
	t[0xd2] = immIdx         // ref.func
	set(0xd3, 0xd4, immNone) // ref.eq, ref.as_non_null
	set(0xd5, 0xd6, immIdx)  // br_on_null, br_on_non_null
	t[prefixMisc] = immPrefix
	t[prefixSIMD] = immPrefix
	t[prefixAtomic] = immPrefix
	return t
}()

// scanExpr walks the instruction stream of one function body from r.pos to
// r.end and appends to loops the offset just past each loop's block type,
// which is where the kill check goes. It checks that blocks are balanced
// and that the final end is the last byte of the body. visit, if non-nil,
// is called for every instruction (tests use it for an opcode census).
func scanExpr(r *reader, loops []int, visit func(opcode)) ([]int, error) {
	depth := 0
	for r.pos < r.end {
		at := r.pos
		b := r.buf[r.pos]
		r.pos++
		op := opcode(b)
		var err error
		switch immediates[b] {
		case immNone:
		case immBlock:
			err = skipBlockType(r)
			depth++
		case immLoop:
			err = skipBlockType(r)
			depth++
			loops = append(loops, r.pos)
		case immTryTable:
			err = skipTryTable(r)
			depth++
		case immEnd:
			if depth == 0 {
				if r.pos != r.end {
					return loops, fmt.Errorf("offset %#x: function end with %d bytes left in the body", at, r.end-r.pos)
				}
				if visit != nil {
					visit(op)
				}
				return loops, nil
			}
			depth--
		case immIdx:
			_, err = r.u32()
		case immIdx2:
			if _, err = r.u32(); err == nil {
				_, err = r.u32()
			}
		case immBrTable:
			err = skipBrTable(r)
		case immSelectT:
			err = skipSelectT(r)
		case immMemarg:
			err = skipMemarg(r)
		case immI32:
			_, err = r.sleb(32)
		case immI64:
			_, err = r.sleb(64)
		case immF32:
			err = r.skip(4)
		case immF64:
			err = r.skip(8)
		case immHeapType:
			err = skipHeapType(r)
		case immPrefix:
			op, err = skipPrefixed(r, b)
		default:
			return loops, fmt.Errorf("offset %#x: unknown opcode 0x%02x", at, b)
		}
		if err != nil {
			return loops, fmt.Errorf("offset %#x: opcode %s: %w", at, op, err)
		}
		if visit != nil {
			visit(op)
		}
	}
	return loops, fmt.Errorf("offset %#x: function body does not end with end", r.end)
}

// skipPrefixed decodes the sub-opcode of a 0xFC/0xFD/0xFE instruction and
// skips its immediates.
func skipPrefixed(r *reader, prefix byte) (opcode, error) {
	sub, err := r.u32()
	if err != nil {
		return opcode(prefix), err
	}
	op := opcode(prefix) << 24
	if sub >= 1<<24 {
		return op, fmt.Errorf("unknown sub-opcode %#x", sub)
	}
	op |= opcode(sub)
	switch prefix {
	case prefixMisc:
		err = skipMisc(r, sub)
	case prefixSIMD:
		err = skipSIMD(r, sub)
	case prefixAtomic:
		err = skipAtomic(r, sub)
	}
	return op, err
}

// skipMisc handles 0xFC: saturating truncation (0-7) and bulk memory /
// table operations (8-17).
func skipMisc(r *reader, sub uint32) error {
	var n int // number of u32 immediates
	switch sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // i32/i64.trunc_sat_f32/f64_s/u
		n = 0
	case 9, 11, 13, 15, 16, 17: // data.drop d, memory.fill m, elem.drop e, table.grow/size/fill t
		n = 1
	case 8, 10, 12, 14: // memory.init d m, memory.copy m m, table.init e t, table.copy t t
		n = 2
	default:
		return fmt.Errorf("unknown 0xfc sub-opcode %d", sub)
	}
	for ; n > 0; n-- {
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return nil
}

// skipSIMD handles 0xFD (fixed-width SIMD, plus relaxed SIMD 0x100-0x113).
func skipSIMD(r *reader, sub uint32) error {
	switch {
	case sub <= 0x0b, sub == 0x5c, sub == 0x5d: // v128.load*, v128.store, load32/64_zero
		return skipMemarg(r)
	case sub == 0x0c, sub == 0x0d: // v128.const, i8x16.shuffle
		return r.skip(16)
	case sub >= 0x15 && sub <= 0x22: // extract_lane / replace_lane
		return r.skip(1)
	case sub >= 0x54 && sub <= 0x5b: // v128.load/store{8,16,32,64}_lane
		if err := skipMemarg(r); err != nil {
			return err
		}
		return r.skip(1)
	case sub <= 0xff:
		switch sub {
		case 0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4, 0xbb,
			0xc2, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee:
			return fmt.Errorf("unknown 0xfd sub-opcode %#x", sub)
		}
		return nil
	case sub <= 0x113: // relaxed SIMD: no immediates
		return nil
	}
	return fmt.Errorf("unknown 0xfd sub-opcode %#x", sub)
}

// skipAtomic handles 0xFE (threads): every instruction takes a memarg
// except atomic.fence, which takes a single reserved zero byte.
func skipAtomic(r *reader, sub uint32) error {
	switch {
	case sub <= 0x02, sub >= 0x10 && sub <= 0x4e:
		return skipMemarg(r)
	case sub == 0x03:
		return r.skip(1)
	}
	return fmt.Errorf("unknown 0xfe sub-opcode %#x", sub)
}

// skipMemarg skips align and offset. With multi-memory, bit 6 of the
// alignment field says a memory index follows it. The offset is read as a
// u64 so memory64 modules decode too.
func skipMemarg(r *reader) error {
	align, err := r.u32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 {
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	_, err = r.uleb(64)
	return err
}

func skipBrTable(r *reader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	for i := uint64(0); i <= uint64(n); i++ { // n targets + default
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return nil
}

func skipSelectT(r *reader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	for ; n > 0; n-- {
		if err := skipValType(r); err != nil {
			return err
		}
	}
	return nil
}

// skipTryTable skips try_table's block type and catch clauses:
// catch tag l, catch_ref tag l, catch_all l, catch_all_ref l.
func skipTryTable(r *reader) error {
	if err := skipBlockType(r); err != nil {
		return err
	}
	n, err := r.u32()
	if err != nil {
		return err
	}
	for ; n > 0; n-- {
		kind, err := r.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0x00, 0x01:
			if _, err := r.u32(); err != nil {
				return err
			}
		case 0x02, 0x03:
		default:
			return fmt.Errorf("offset %#x: unknown catch kind %#x", r.pos-1, kind)
		}
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return nil
}

// skipBlockType skips a block type: 0x40 (empty), a value type, or a
// non-negative s33 type index. Single-byte value types are exactly the
// bytes that read as negative one-byte s33 values (0x40-0x7f), so the first
// byte tells the forms apart.
func skipBlockType(r *reader) error {
	if r.pos >= r.end {
		return fmt.Errorf("offset %#x: unexpected end of data", r.pos)
	}
	b := r.buf[r.pos]
	if b == blockTypeEmpty {
		r.pos++
		return nil
	}
	if b&0xc0 == 0x40 {
		return skipValType(r)
	}
	at := r.pos
	idx, err := r.sleb(33)
	if err != nil {
		return err
	}
	if idx < 0 {
		return fmt.Errorf("offset %#x: invalid block type %d", at, idx)
	}
	return nil
}

// isAbstractHeapType reports whether b is the one-byte encoding of an
// abstract heap type (func, extern, and the GC/exception ones).
func isAbstractHeapType(b byte) bool {
	switch b {
	case 0x70, 0x6f, // func, extern
		0x69,                         // exn
		0x6a, 0x6b, 0x6c, 0x6d, 0x6e, // array, struct, i31, eq, any
		0x71, 0x72, 0x73, 0x74: // none, noextern, nofunc, noexn
		return true
	}
	return false
}

// skipValType skips a value type: a number/vector type, an abstract
// reference shorthand, or (typed references) 0x63/0x64 followed by a heap
// type.
func skipValType(r *reader) error {
	at := r.pos
	b, err := r.byte()
	if err != nil {
		return err
	}
	switch {
	case b >= 0x7b && b <= 0x7f: // v128, f64, f32, i64, i32
		return nil
	case isAbstractHeapType(b):
		return nil
	case b == 0x63 || b == 0x64: // (ref null ht), (ref ht)
		return skipHeapType(r)
	}
	return fmt.Errorf("offset %#x: unknown value type 0x%02x", at, b)
}

// skipHeapType skips an s33 heap type: an abstract type (negative, one
// byte) or a type index.
func skipHeapType(r *reader) error {
	at := r.pos
	v, err := r.sleb(33)
	if err != nil {
		return err
	}
	if v < 0 && (v < -64 || !isAbstractHeapType(byte(v+0x80)) || r.pos-at != 1) {
		return fmt.Errorf("offset %#x: unknown heap type %d", at, v)
	}
	return nil
}

// skipLocals skips a function body's local declarations.
func skipLocals(r *reader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	for ; n > 0; n-- {
		if _, err := r.u32(); err != nil {
			return err
		}
		if err := skipValType(r); err != nil {
			return err
		}
	}
	return nil
}

func (op opcode) String() string {
	if op>>24 != 0 {
		return fmt.Sprintf("0x%02x 0x%02x", byte(op>>24), uint32(op&0xffffff))
	}
	return fmt.Sprintf("0x%02x", byte(op))
}
