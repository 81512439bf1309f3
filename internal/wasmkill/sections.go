package wasmkill

import (
	"bytes"
	"fmt"
	"strings"
)

// Section ids. Tag (13) comes from the exception-handling proposal; it is
// listed so that modules using it are ordered correctly, not because we
// touch it.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

// sectionRank is the position of each known non-custom section in the
// canonical order the binary format requires. Section ids are not in
// numeric order: data count (12) sits before code (10), and tag (13) before
// global (6). Zero means "unknown id".
var sectionRank = [...]int{
	secType:      1,
	secImport:    2,
	secFunction:  3,
	secTable:     4,
	secMemory:    5,
	secTag:       6,
	secGlobal:    7,
	secExport:    8,
	secStart:     9,
	secElement:   10,
	secDataCount: 11,
	secCode:      12,
	secData:      13,
}

var sectionNames = [...]string{
	secCustom:    "custom",
	secType:      "type",
	secImport:    "import",
	secFunction:  "function",
	secTable:     "table",
	secMemory:    "memory",
	secGlobal:    "global",
	secExport:    "export",
	secStart:     "start",
	secElement:   "element",
	secCode:      "code",
	secData:      "data",
	secDataCount: "data count",
	secTag:       "tag",
}

func sectionName(id byte) string {
	if int(id) < len(sectionNames) {
		return sectionNames[id]
	}
	return fmt.Sprintf("unknown (id %d)", id)
}

// Kinds of import and export descriptors.
const (
	kindFunc   = 0x00
	kindTable  = 0x01
	kindMemory = 0x02
	kindGlobal = 0x03
	kindTag    = 0x04
)

var wasmHeader = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// section is one section of the input: start is the offset of its id byte
// and payload covers its contents (after the id and size).
type section struct {
	id      byte
	start   int
	payload reader
}

// raw is the section exactly as it appears in the input, header included.
func (s section) raw() []byte { return s.payload.buf[s.start:s.payload.end] }

// sectionError prefixes err with the section's name and offset.
func (s section) errorf(format string, args ...any) error {
	return fmt.Errorf("wasmkill: %s section at offset %#x: %s", sectionName(s.id), s.start, fmt.Sprintf(format, args...))
}

// parseSections splits the module into sections and checks the header and
// the canonical order of non-custom sections. The order matters to us: we
// may have to insert a global or export section, and we rely on the import
// section being seen before anything that depends on it.
func parseSections(wasm []byte) ([]section, error) {
	if len(wasm) < len(wasmHeader) || !bytes.Equal(wasm[:4], wasmHeader[:4]) {
		return nil, fmt.Errorf("wasmkill: not a wasm module (bad magic)")
	}
	if !bytes.Equal(wasm[4:8], wasmHeader[4:8]) {
		return nil, fmt.Errorf("wasmkill: unsupported wasm binary version % x (want 01 00 00 00; components are not supported)", wasm[4:8])
	}
	r := reader{buf: wasm, pos: len(wasmHeader), end: len(wasm)}
	var sections []section
	lastRank := 0
	for r.pos < r.end {
		start := r.pos
		id, _ := r.byte()
		size, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("wasmkill: section header at offset %#x: %w", start, err)
		}
		payload, err := r.sub(size)
		if err != nil {
			return nil, fmt.Errorf("wasmkill: %s section at offset %#x: %w", sectionName(id), start, err)
		}
		s := section{id: id, start: start, payload: payload}
		if id != secCustom {
			if int(id) >= len(sectionRank) || sectionRank[id] == 0 {
				return nil, s.errorf("unknown section id")
			}
			if sectionRank[id] <= lastRank {
				return nil, s.errorf("section out of order or duplicated")
			}
			lastRank = sectionRank[id]
		}
		sections = append(sections, s)
	}
	return sections, nil
}

// customName decodes the name at the start of a custom section.
func customName(s section) (string, error) {
	r := s.payload
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	name, err := r.sub(n)
	if err != nil {
		return "", err
	}
	return string(name.buf[name.pos:name.end]), nil
}

// dropCustom reports whether a custom section must not be copied. DWARF
// sections (.debug_*) address instructions by code-section offset, and
// those offsets move when checks are inserted; stale DWARF is worse than
// none (wazero uses it for stack traces).
func dropCustom(name string) bool {
	return strings.HasPrefix(name, ".debug_")
}

// importCounts counts imported functions and globals. Imported entities
// take the low indices of their index space, so the first defined global
// has index importedGlobals, and the appended kill global has index
// importedGlobals + definedGlobals.
func importCounts(s section) (funcs, globals, memories uint32, err error) {
	r := s.payload
	count, err := r.u32()
	if err != nil {
		return 0, 0, 0, s.errorf("%v", err)
	}
	for i := uint32(0); i < count; i++ {
		at := r.pos
		kind, err := skipImport(&r)
		if err != nil {
			return 0, 0, 0, s.errorf("import %d at offset %#x: %v", i, at, err)
		}
		switch kind {
		case kindFunc:
			funcs++
		case kindGlobal:
			globals++
		case kindMemory:
			memories++
		}
	}
	if r.pos != r.end {
		return 0, 0, 0, s.errorf("%d trailing bytes at offset %#x", r.end-r.pos, r.pos)
	}
	return funcs, globals, memories, nil
}

func skipName(r *reader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	_, err = r.sub(n)
	return err
}

func skipImport(r *reader) (byte, error) {
	if err := skipName(r); err != nil { // module
		return 0, err
	}
	if err := skipName(r); err != nil { // field
		return 0, err
	}
	kind, err := r.byte()
	if err != nil {
		return 0, err
	}
	switch kind {
	case kindFunc:
		_, err = r.u32()
	case kindTable:
		if err = skipValType(r); err == nil {
			err = skipLimits(r)
		}
	case kindMemory:
		err = skipLimits(r)
	case kindGlobal:
		if err = skipValType(r); err == nil {
			_, err = r.byte() // mutability
		}
	case kindTag:
		if _, err = r.byte(); err == nil { // attribute
			_, err = r.u32()
		}
	default:
		err = fmt.Errorf("offset %#x: unknown import kind %#x", r.pos-1, kind)
	}
	return kind, err
}

// skipLimits skips table/memory limits. Flag bit 0: maximum present;
// bit 1: shared (threads); bit 2: 64-bit index type (memory64).
func skipLimits(r *reader) error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if flags > 0x07 {
		return fmt.Errorf("offset %#x: unknown limits flags %#x", r.pos-1, flags)
	}
	bits := uint(32)
	if flags&0x04 != 0 {
		bits = 64
	}
	if _, err := r.uleb(bits); err != nil {
		return err
	}
	if flags&0x01 != 0 {
		_, err = r.uleb(bits)
	}
	return err
}

// exportsContain reports whether the export section already exports name,
// which would make our added export a duplicate (an invalid module).
func exportsContain(s section, name string) (count uint32, found bool, err error) {
	r := s.payload
	count, err = r.u32()
	if err != nil {
		return 0, false, s.errorf("%v", err)
	}
	for i := uint32(0); i < count; i++ {
		at := r.pos
		n, err := r.u32()
		if err != nil {
			return 0, false, s.errorf("export %d at offset %#x: %v", i, at, err)
		}
		nr, err := r.sub(n)
		if err != nil {
			return 0, false, s.errorf("export %d at offset %#x: %v", i, at, err)
		}
		if string(nr.buf[nr.pos:nr.end]) == name {
			found = true
		}
		kind, err := r.byte()
		if err == nil && kind > kindTag {
			err = fmt.Errorf("offset %#x: unknown export kind %#x", r.pos-1, kind)
		}
		if err == nil {
			_, err = r.u32()
		}
		if err != nil {
			return 0, false, s.errorf("export %d at offset %#x: %v", i, at, err)
		}
	}
	if r.pos != r.end {
		return 0, false, s.errorf("%d trailing bytes at offset %#x", r.end-r.pos, r.pos)
	}
	return count, found, nil
}

// vecCount reads the element count that starts global and export sections.
func vecCount(s section) (count uint32, rest []byte, err error) {
	r := s.payload
	count, err = r.u32()
	if err != nil {
		return 0, nil, s.errorf("%v", err)
	}
	return count, r.buf[r.pos:r.end], nil
}

// appendSection appends a section header and payload to dst.
func appendSection(dst []byte, id byte, payload []byte) []byte {
	dst = append(dst, id)
	dst = appendU32(dst, uint32(len(payload)))
	return append(dst, payload...)
}
