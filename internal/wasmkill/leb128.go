package wasmkill

import "fmt"

// reader is a bounds-checked cursor over a region [pos, end) of the whole
// module binary. Keeping the whole binary in buf (rather than re-slicing)
// means every offset we report in an error is an absolute file offset, which
// is what you want when staring at a hex dump or at wasm-objdump output.
type reader struct {
	buf []byte
	pos int
	end int
}

// sub returns a reader over the next n bytes and advances r past them.
func (r *reader) sub(n uint32) (reader, error) {
	if uint64(n) > uint64(r.end-r.pos) {
		return reader{}, fmt.Errorf("offset %#x: length %d exceeds the %d remaining bytes", r.pos, n, r.end-r.pos)
	}
	s := reader{buf: r.buf, pos: r.pos, end: r.pos + int(n)}
	r.pos += int(n)
	return s, nil
}

func (r *reader) byte() (byte, error) {
	if r.pos >= r.end {
		return 0, fmt.Errorf("offset %#x: unexpected end of data", r.pos)
	}
	b := r.buf[r.pos]
	r.pos++
	return b, nil
}

func (r *reader) skip(n int) error {
	if n > r.end-r.pos {
		return fmt.Errorf("offset %#x: need %d bytes, only %d remain", r.pos, n, r.end-r.pos)
	}
	r.pos += n
	return nil
}

// uleb decodes an unsigned LEB128 value of at most the given bit width.
// Like the spec (and wazero), it accepts padded encodings up to
// ceil(bits/7) bytes but rejects encodings that are longer or that set bits
// beyond the width in the final byte.
func (r *reader) uleb(bits uint) (uint64, error) {
	start := r.pos
	maxBytes := int((bits + 6) / 7)
	lastBits := bits - 7*uint(maxBytes-1)
	var v uint64
	var shift uint
	for i := 0; i < maxBytes; i++ {
		b, err := r.byte()
		if err != nil {
			return 0, fmt.Errorf("offset %#x: truncated LEB128", start)
		}
		if i == maxBytes-1 && b>>lastBits != 0 {
			return 0, fmt.Errorf("offset %#x: LEB128 overflows u%d", start, bits)
		}
		v |= uint64(b&0x7f) << shift
		if b&0x80 == 0 {
			return v, nil
		}
		shift += 7
	}
	// Not reached: the final-byte check rejects a continuation bit.
	return 0, fmt.Errorf("offset %#x: LEB128 too long", start)
}

// sleb decodes a signed LEB128 value of at most the given bit width, with
// the same padding rules as uleb: in the final byte, the bits above the
// width must all equal the sign bit.
func (r *reader) sleb(bits uint) (int64, error) {
	start := r.pos
	maxBytes := int((bits + 6) / 7)
	lastBits := bits - 7*uint(maxBytes-1)
	// Bits of the final byte that must agree with the sign bit (sign bit
	// included), excluding the continuation bit.
	signMask := byte(0x7f) &^ (byte(1)<<(lastBits-1) - 1)
	var v int64
	var shift uint
	for i := 0; i < maxBytes; i++ {
		b, err := r.byte()
		if err != nil {
			return 0, fmt.Errorf("offset %#x: truncated LEB128", start)
		}
		if i == maxBytes-1 {
			if b&0x80 != 0 || (b&signMask != 0 && b&signMask != signMask) {
				return 0, fmt.Errorf("offset %#x: LEB128 overflows s%d", start, bits)
			}
		}
		v |= int64(b&0x7f) << shift
		shift += 7
		if b&0x80 == 0 {
			if shift < 64 && b&0x40 != 0 {
				v |= -1 << shift
			}
			return v, nil
		}
	}
	// Not reached: the final-byte check rejects a continuation bit.
	return 0, fmt.Errorf("offset %#x: LEB128 too long", start)
}

func (r *reader) u32() (uint32, error) {
	v, err := r.uleb(32)
	return uint32(v), err
}

// appendU32 appends the minimal unsigned LEB128 encoding of v.
func appendU32(dst []byte, v uint32) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// appendS32 appends the minimal signed LEB128 encoding of v.
func appendS32(dst []byte, v int32) []byte {
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(dst, b)
		}
		dst = append(dst, b|0x80)
	}
}

// sizeU32 is the length of appendU32's encoding of v.
func sizeU32(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
