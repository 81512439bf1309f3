package wasmkill

import "testing"

// wazero sizes what it decodes from the counts and lengths in the module (make([]wasm.Global,
// count) for the global section, make([]byte, n) for a name or a data segment, a slice of all
// of a body's locals), before it has seen whether the bytes are there: a 16-byte module once
// asked for ~73 GB and the fuzzer died with "runtime: out of memory" (issue 18 item 9). The
// modules we instrument in production are the pinned QuickJS build, so the bound lives in the
// harness: FuzzInstrument hands wazero only modules whose every preallocated count fits in the
// bytes that follow it.

// maxLocals bounds the locals of one function body in modules the harness compiles (wazero
// allocates the sum; real modules declare tens).
const maxLocals = 1 << 16

// plausible reports whether wazero can decode wasm without an allocation larger than the
// module justifies.
func plausible(wasm []byte) bool {
	secs, err := parseSections(wasm)
	if err != nil {
		return false
	}
	for _, s := range secs {
		r := s.payload
		if s.id == secCustom {
			if name, err := customName(s); err == nil && name == "name" && !plausibleNames(s) {
				return false
			}
			continue
		}
		if s.id == secStart || s.id == secDataCount {
			continue // one index, one count: nothing is allocated from them
		}
		n, ok := count(&r)
		if !ok {
			return false
		}
		switch s.id {
		case secType:
			for ; n > 0; n-- {
				if b, err := r.byte(); err != nil || b != 0x60 || !valTypes(&r) || !valTypes(&r) {
					return false
				}
			}
		case secImport:
			if _, _, _, err := importCounts(s); err != nil {
				return false
			}
		case secExport:
			if _, _, err := exportsContain(s, GlobalName); err != nil {
				return false
			}
		case secCode:
			for ; n > 0; n-- {
				size, err := r.u32()
				if err != nil {
					return false
				}
				body, err := r.sub(size)
				if err != nil || !plausibleLocals(&body) {
					return false
				}
			}
		case secData:
			for ; n > 0; n-- {
				if !plausibleData(&r) {
					return false
				}
			}
		case secElement:
			for ; n > 0; n-- {
				if !plausibleElement(&r) {
					return false
				}
			}
		}
	}
	return true
}

// count reads a vector count and reports whether that many items (one byte each at least) fit.
func count(r *reader) (uint32, bool) {
	n, err := r.u32()
	return n, err == nil && uint64(n) <= uint64(r.end-r.pos)
}

func valTypes(r *reader) bool {
	n, ok := count(r)
	for ; ok && n > 0; n-- {
		ok = skipValType(r) == nil
	}
	return ok
}

func plausibleLocals(r *reader) bool {
	n, ok := count(r)
	sum := uint64(0)
	for ; ok && n > 0; n-- {
		k, err := r.u32()
		sum += uint64(k)
		ok = err == nil && sum <= maxLocals && skipValType(r) == nil
	}
	return ok
}

// skipConstExpr skips a constant expression: the instructions wazero accepts there, then end.
func skipConstExpr(r *reader) bool {
	for {
		op, err := r.byte()
		if err != nil {
			return false
		}
		switch op {
		case 0x0b: // end
			return true
		case 0x41: // i32.const
			_, err = r.sleb(32)
		case 0x42: // i64.const
			_, err = r.sleb(64)
		case 0x43: // f32.const
			err = r.skip(4)
		case 0x44: // f64.const
			err = r.skip(8)
		case 0x23, 0xd2: // global.get, ref.func
			_, err = r.u32()
		case 0xd0: // ref.null
			err = skipHeapType(r)
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constant arithmetic
		case 0xfd: // v128.const
			var sub uint32
			if sub, err = r.u32(); err == nil && sub == 12 {
				err = r.skip(16)
			} else if err == nil {
				return false
			}
		default:
			return false
		}
		if err != nil {
			return false
		}
	}
}

func plausibleData(r *reader) bool {
	flags, err := r.u32()
	if err != nil {
		return false
	}
	switch flags {
	case 0:
		if !skipConstExpr(r) {
			return false
		}
	case 1:
	case 2:
		if _, err := r.u32(); err != nil || !skipConstExpr(r) {
			return false
		}
	default:
		return false
	}
	size, err := r.u32()
	if err != nil {
		return false
	}
	_, err = r.sub(size)
	return err == nil
}

func plausibleElement(r *reader) bool {
	flags, err := r.u32()
	if err != nil || flags > 7 {
		return false
	}
	if flags&3 == 2 { // explicit table index
		if _, err := r.u32(); err != nil {
			return false
		}
	}
	if flags&1 == 0 && !skipConstExpr(r) { // active: the offset
		return false
	}
	if flags&3 != 0 { // an element kind (byte) or a reference type
		if flags&4 == 0 {
			if _, err := r.byte(); err != nil {
				return false
			}
		} else if skipValType(r) != nil {
			return false
		}
	}
	n, ok := count(r)
	for ; ok && n > 0; n-- {
		if flags&4 != 0 {
			ok = skipConstExpr(r)
		} else {
			_, err := r.u32()
			ok = err == nil
		}
	}
	return ok
}

// plausibleNames checks the counts of a name section's function and local name maps.
func plausibleNames(s section) bool {
	r := s.payload
	n, err := r.u32()
	if err != nil {
		return false
	}
	if _, err := r.sub(n); err != nil { // the section's own name, "name"
		return false
	}
	for r.pos < r.end {
		id, err := r.byte()
		if err != nil {
			return false
		}
		size, err := r.u32()
		if err != nil {
			return false
		}
		sub, err := r.sub(size)
		if err != nil {
			return false
		}
		if id != 1 && id != 2 {
			continue
		}
		maps, ok := count(&sub)
		for ; ok && maps > 0; maps-- {
			if _, err := sub.u32(); err != nil {
				return false
			}
			if id == 1 {
				ok = skipName(&sub) == nil
				continue
			}
			locals, lok := count(&sub)
			for ok = lok; ok && locals > 0; locals-- {
				_, err := sub.u32()
				ok = err == nil && skipName(&sub) == nil
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// The module of issue 18 item 9 (a global section claiming ~4.5 billion globals) and its
// relatives are refused by the harness; the test modules are all accepted.
func TestPlausible(t *testing.T) {
	for _, tm := range testModules() {
		if !plausible(tm.wasm) {
			t.Errorf("%s: refused", tm.name)
		}
	}
	header := string(wasmHeader)
	for name, wasm := range map[string]string{
		"global count":  header + "\x06\x06\xff\xff\xff\xff\x0f\x00",
		"type params":   header + "\x01\x08\x01\x60\xff\xff\xff\xff\x0f\x00",
		"locals":        header + "\x03\x02\x01\x00\x0a\x0b\x01\x09\x01\xff\xff\xff\xff\x0f\x7f\x0b\x00",
		"data length":   header + "\x0b\x0a\x01\x01\xff\xff\xff\xff\x0f\x00\x00\x00",
		"element count": header + "\x09\x09\x01\x00\x41\x00\x0b\xff\xff\xff\x0f",
		"export name":   header + "\x07\x07\x01\xff\xff\xff\xff\x0f\x00",
		"names":         header + "\x00\x0d\x04name\x01\x06\xff\xff\xff\xff\x0f\x00",
	} {
		if plausible([]byte(wasm)) {
			t.Errorf("%s: accepted % x", name, wasm)
		}
	}
}
