package schemahint

import (
	"bytes"
	"strconv"

	"github.com/codemode-go/codemode/internal/jsname"
)

// render.go holds the one type renderer behind every output of this package:
// the compact input and output hints (one line) and the full declarations
// (multi-line, with docs). The modes differ in layout and in how they treat
// what cannot be rendered exactly.

type mode uint8

const (
	modeInput  mode = iota // compact, lenient: `unknown` where needed, `| …` after the bound
	modeOutput             // compact, exact or nothing: anything inexact marks the hint incomplete
	modeFull               // multi-line declarations for .d.ts files
)

// form tells the caller how a rendered type combines: a union needs
// `Array<…>` around it, an object literal reads better there too.
type form uint8

const (
	formAtom form = iota
	formUnion
	formObject
	formUnknown
)

// limits bound what one node may show.
type limits struct {
	enum  int // enum/const members shown
	union int // anyOf/oneOf/type-array members shown
	tuple int // tuple elements shown
	lit   int // longest string literal (bytes, unquoted) shown
	props int // properties per object shown (full mode; compact is bounded by length)
	names int // longest property name (bytes) shown (full mode)
}

var (
	inputLimits  = limits{enum: 6, union: 6, tuple: 8, lit: 64}
	outputLimits = limits{enum: 32, union: 16, tuple: 16, lit: 128}
	fullLimits   = limits{enum: 64, union: 32, tuple: 32, lit: 256, props: 200, names: 256}
)

const (
	fullMaxDepth   = 8   // object literals nested deeper render as `object` in declarations
	maxMissingReq  = 32  // required names without a property schema shown per object
	maxNoteLiteral = 100 // longest pattern/default shown in a declaration note
)

type renderer struct {
	b          []byte
	limit      int // len(b) may not exceed it; past it, over is set and rendering stops
	over       bool
	incomplete bool // something was rendered inexactly (matters for output hints)

	mode     mode
	lim      limits
	comments bool // compact input: constraint notes as /* … */
	reqFirst bool // compact input: required properties first
	depth    int  // object literals at nesting level >= depth render as `object` (0: no limit)

	// full mode
	ind       int
	paramRoot *Schema // the root object whose properties are documented with @param
	docMax    int     // bound of a nested property's /** … */ doc
}

func (r *renderer) w(s string) {
	if r.over {
		return
	}
	if len(r.b)+len(s) > r.limit {
		r.over = true
		return
	}
	r.b = append(r.b, s...)
}

func (r *renderer) quoted(s string) {
	if r.over {
		return
	}
	if len(r.b)+len(s)+2 > r.limit {
		r.over = true
		return
	}
	r.b = appendQuoted(r.b, s)
	if len(r.b) > r.limit {
		r.over = true
	}
}

func (r *renderer) propName(name string) {
	if jsname.IsIdent(name) {
		r.w(name)
		return
	}
	r.quoted(name)
}

const spaces = "                                                                "

func (r *renderer) indent() {
	n := 2 * r.ind
	for n > len(spaces) {
		r.w(spaces)
		n -= len(spaces)
	}
	r.w(spaces[:n])
}

func (r *renderer) insert(at int, s string) {
	if r.over {
		return
	}
	if len(r.b)+len(s) > r.limit {
		r.over = true
		return
	}
	r.b = append(r.b, s...)
	copy(r.b[at+len(s):], r.b[at:len(r.b)-len(s)])
	copy(r.b[at:], s)
}

// typ renders the type of s at object nesting level `level`.
func (r *renderer) typ(s *Schema, level int) form {
	if r.over {
		return formAtom
	}
	switch s.kind {
	case kNever:
		r.w("never")
		return formAtom
	case kAny, kUnsupported:
		r.incomplete = true
		r.w("unknown")
		return formUnknown
	case kEnum:
		return r.enum(s)
	case kUnion:
		return r.unionOf(s, level)
	default:
		return r.types(s, level)
	}
}

// unionW tracks a union being written so members can be deduplicated,
// dropped (`never`), absorbed (`unknown` makes the whole union unknown) or
// elided past a bound.
type unionW struct {
	start    int
	sepStart int
	mStart   int
	n        int
	elided   int
	unknown  bool
	single   form
	spans    [8][2]int
	more     [][2]int
}

func (r *renderer) unionBegin() unionW {
	return unionW{start: len(r.b)}
}

// memberStart opens a member; false means skip it (elided, or the union is
// already decided).
func (r *renderer) memberStart(u *unionW, bound int) bool {
	if u.unknown || r.over {
		return false
	}
	if u.n >= bound {
		u.elided++
		return false
	}
	u.sepStart = len(r.b)
	if u.n > 0 {
		r.w(" | ")
	}
	u.mStart = len(r.b)
	return true
}

func (r *renderer) memberEnd(u *unionW, f form) {
	if r.over {
		return
	}
	if f == formUnknown {
		u.unknown = true
		return
	}
	m := r.b[u.mStart:]
	if string(m) == "never" {
		r.b = r.b[:u.sepStart]
		return
	}
	for i := 0; i < u.n; i++ {
		var sp [2]int
		if i < len(u.spans) {
			sp = u.spans[i]
		} else {
			sp = u.more[i-len(u.spans)]
		}
		if bytes.Equal(r.b[sp[0]:sp[1]], m) {
			r.b = r.b[:u.sepStart]
			return
		}
	}
	sp := [2]int{u.mStart, len(r.b)}
	if u.n < len(u.spans) {
		u.spans[u.n] = sp
	} else {
		u.more = append(u.more, sp)
	}
	u.n++
	u.single = f
}

func (r *renderer) unionEnd(u *unionW) form {
	if r.over {
		return formAtom
	}
	if u.unknown {
		r.b = r.b[:u.start]
		r.incomplete = true
		r.w("unknown")
		return formUnknown
	}
	if u.elided > 0 && u.n == 0 {
		r.b = r.b[:u.start]
		r.incomplete = true
		r.w("unknown")
		return formUnknown
	}
	if u.elided > 0 {
		r.incomplete = true
		if r.mode == modeFull {
			r.w(" /* +" + strconv.Itoa(u.elided) + " more */")
		} else {
			r.w(" | …")
		}
		return formUnion
	}
	switch u.n {
	case 0:
		r.w("never")
		return formAtom
	case 1:
		return u.single
	}
	return formUnion
}

func (r *renderer) nullMember(u *unionW) {
	if r.memberStart(u, u.n+1) {
		r.w("null")
		r.memberEnd(u, formAtom)
	}
}

func (r *renderer) enum(s *Schema) form {
	u := r.unionBegin()
	for _, v := range s.enum {
		if len(s.types) > 0 && !typeAllows(s.types, v) {
			continue
		}
		if !r.memberStart(&u, r.lim.enum) {
			if u.unknown || r.over {
				break
			}
			continue
		}
		if v.kind == jString && len(v.s) > r.lim.lit {
			// Too long to show: say what it is.
			r.incomplete = true
			r.w("string")
			r.memberEnd(&u, formAtom)
			continue
		}
		r.memberEnd(&u, r.literal(v))
	}
	if s.nullable {
		r.nullMember(&u)
	}
	return r.unionEnd(&u)
}

func (r *renderer) literal(v *jvalue) form {
	switch v.kind {
	case jNull:
		r.w("null")
	case jBool:
		r.w(strconv.FormatBool(v.b))
	case jNumber:
		r.w(v.s)
	case jString:
		r.quoted(v.s)
	case jArray:
		r.incomplete = true
		r.w("unknown[]")
	default:
		r.incomplete = true
		r.w("object")
	}
	return formAtom
}

func typeAllows(ts []jsType, v *jvalue) bool {
	for _, t := range ts {
		switch {
		case t == tOther,
			t == tString && v.kind == jString,
			(t == tNumber || t == tInteger) && v.kind == jNumber,
			t == tBoolean && v.kind == jBool,
			t == tNull && v.kind == jNull,
			t == tArray && v.kind == jArray,
			t == tObject && v.kind == jObject:
			return true
		}
	}
	return false
}

func (r *renderer) unionOf(s *Schema, level int) form {
	u := r.unionBegin()
	for _, m := range s.union {
		if !r.memberStart(&u, r.lim.union) {
			if u.unknown || r.over {
				break
			}
			continue
		}
		r.memberEnd(&u, r.typ(m, level))
	}
	if s.nullable {
		r.nullMember(&u)
	}
	return r.unionEnd(&u)
}

func (r *renderer) types(s *Schema, level int) form {
	if len(s.types) == 1 && !s.nullable {
		return r.oneType(s, s.types[0], level)
	}
	u := r.unionBegin()
	for _, t := range s.types {
		if !r.memberStart(&u, r.lim.union) {
			if u.unknown || r.over {
				break
			}
			continue
		}
		r.memberEnd(&u, r.oneType(s, t, level))
	}
	if s.nullable {
		r.nullMember(&u)
	}
	return r.unionEnd(&u)
}

func (r *renderer) oneType(s *Schema, t jsType, level int) form {
	switch t {
	case tString:
		r.w("string")
	case tNumber, tInteger:
		r.w("number")
	case tBoolean:
		r.w("boolean")
	case tNull:
		r.w("null")
	case tObject:
		if s.inferred && r.mode == modeOutput {
			r.incomplete = true
		}
		if r.mode == modeFull {
			return r.objectFull(s, level)
		}
		return r.object(s, level)
	case tArray:
		if s.inferred && r.mode == modeOutput {
			r.incomplete = true
		}
		return r.array(s, level)
	default:
		r.incomplete = true
		r.w("unknown")
		return formUnknown
	}
	return formAtom
}

// isMap reports whether additionalProperties gives a value type (a schema
// that is neither absent, `true`/`{}` nor `false`).
func isMap(addl *Schema) bool {
	return addl != nil && addl.kind != kAny && addl.kind != kNever
}

func isClosed(addl *Schema) bool {
	return addl != nil && addl.kind == kNever
}

// object renders a compact object type on one line.
func (r *renderer) object(s *Schema, level int) form {
	mapT, closed := isMap(s.addl), isClosed(s.addl)
	if r.depth > 0 && level >= r.depth {
		r.incomplete = true
		r.w("object")
		return formAtom
	}
	if !closed && !mapT {
		r.incomplete = true // open object: more properties may exist
	}
	if len(s.props) == 0 && len(s.missingReq) == 0 {
		switch {
		case mapT:
			r.w("{ [key: string]: ")
			r.typ(s.addl, level+1)
			r.w(" }")
			return formObject
		case closed:
			r.w("{}")
		default:
			r.w("object")
		}
		return formAtom
	}
	r.w("{ ")
	n := 0
	if r.reqFirst {
		for i := range s.props {
			if s.props[i].required {
				r.prop(&s.props[i], level, &n)
			}
		}
		r.missing(s, &n)
		for i := range s.props {
			if !s.props[i].required {
				r.prop(&s.props[i], level, &n)
			}
		}
	} else {
		for i := range s.props {
			r.prop(&s.props[i], level, &n)
		}
		r.missing(s, &n)
	}
	if mapT {
		r.w("; [key: string]: ")
		r.typ(s.addl, level+1)
	}
	r.w(" }")
	return formObject
}

func (r *renderer) prop(p *property, level int, n *int) {
	if r.over {
		return
	}
	if *n > 0 {
		r.w("; ")
	}
	*n++
	r.propName(p.name)
	if !p.required {
		r.w("?")
	}
	r.w(": ")
	r.typ(p.schema, level+1)
	if r.comments {
		r.note(p.schema, false)
	}
}

func (r *renderer) missing(s *Schema, n *int) {
	for i, name := range s.missingReq {
		if r.over || i >= maxMissingReq {
			return
		}
		r.incomplete = true
		if *n > 0 {
			r.w("; ")
		}
		*n++
		r.propName(name)
		r.w(": unknown")
	}
}

func (r *renderer) array(s *Schema, level int) form {
	if s.tuple != nil {
		return r.tupleType(s, level)
	}
	if s.items == nil {
		r.incomplete = true
		r.w("unknown[]")
		return formAtom
	}
	r.arrayOf(s.items, level)
	return formAtom
}

// arrayOf writes `T[]`, or `Array<T>` when T is a union or an object literal.
func (r *renderer) arrayOf(items *Schema, level int) {
	start := len(r.b)
	f := r.typ(items, level)
	if f == formUnion || f == formObject {
		r.insert(start, "Array<")
		r.w(">")
		return
	}
	r.w("[]")
}

func (r *renderer) tupleType(s *Schema, level int) form {
	r.w("[")
	shown := len(s.tuple)
	if shown > r.lim.tuple {
		shown = r.lim.tuple
		r.incomplete = true
	}
	for i := 0; i < shown; i++ {
		if i > 0 {
			r.w(", ")
		}
		r.typ(s.tuple[i], level)
	}
	closed := s.rest != nil && s.rest.kind == kNever
	switch {
	case shown < len(s.tuple) || s.rest == nil || s.rest.kind == kAny || s.rest.kind == kUnsupported:
		r.incomplete = true
		if shown > 0 {
			r.w(", ")
		}
		r.w("...unknown[]")
	case !closed:
		if shown > 0 {
			r.w(", ")
		}
		r.w("...")
		r.arrayOf(s.rest, level)
	}
	r.w("]")
	return formAtom
}

// objectFull renders a multi-line object type for declarations.
func (r *renderer) objectFull(s *Schema, level int) form {
	if r.depth > 0 && level >= r.depth {
		r.w("object")
		return formAtom
	}
	mapT, closed := isMap(s.addl), isClosed(s.addl)
	if len(s.props) == 0 && len(s.missingReq) == 0 {
		switch {
		case mapT:
			r.w("{ [key: string]: ")
			r.typ(s.addl, level+1)
			r.w(" }")
			return formObject
		case closed || s == r.paramRoot:
			r.w("{}")
		default:
			r.w("{ [key: string]: unknown }")
		}
		return formAtom
	}
	r.w("{\n")
	r.ind++
	shown, omitted := 0, 0
	for i := range s.props {
		if r.over {
			return formObject
		}
		p := &s.props[i]
		if shown >= r.lim.props || len(p.name) > r.lim.names {
			omitted++
			continue
		}
		shown++
		if s != r.paramRoot {
			if d := cleanDoc(p.schema.description, r.docMax, true); d != "" {
				r.indent()
				r.w("/** ")
				r.w(d)
				r.w(" */\n")
			}
		}
		r.indent()
		r.propName(p.name)
		if !p.required {
			r.w("?")
		}
		r.w(": ")
		r.typ(p.schema, level+1)
		r.w(";")
		r.note(p.schema, true)
		r.w("\n")
	}
	for i, name := range s.missingReq {
		if i >= maxMissingReq || len(name) > r.lim.names {
			omitted++
			continue
		}
		r.indent()
		r.propName(name)
		r.w(": unknown;\n")
	}
	switch {
	case mapT:
		r.indent()
		r.w("[key: string]: ")
		r.typ(s.addl, level+1)
		r.w(";\n")
	case !closed:
		r.indent()
		r.w("[key: string]: unknown;\n")
	}
	if omitted > 0 {
		r.indent()
		r.w("// " + strconv.Itoa(omitted) + " more properties not shown\n")
	}
	r.ind--
	r.indent()
	r.w("}")
	return formObject
}

// note writes a property's constraint note: ` /* int >= 1 */` in compact
// hints, ` // int >= 1, default: 3` in declarations; nothing when there is
// none. Compact notes hold only our words, numbers and validated format
// names; full notes may hold quoted literals, which cannot end a `//`
// comment since line terminators are escaped.
func (r *renderer) note(s *Schema, full bool) {
	if r.over || !mayHaveNote(s, full) {
		return
	}
	mark := len(r.b)
	if full {
		r.b = append(r.b, " // "...)
	} else {
		r.b = append(r.b, " /* "...)
	}
	n := noteW{b: r.b, start: len(r.b)}
	n.schema(s, full)
	r.b = n.b
	if len(r.b) == n.start {
		r.b = r.b[:mark]
		return
	}
	if !full {
		r.b = append(r.b, " */"...)
	}
	if len(r.b) > r.limit {
		r.over = true
	}
}

// mayHaveNote is a cheap filter: most properties have no constraints.
func mayHaveNote(s *Schema, full bool) bool {
	switch s.kind {
	case kTypes:
		if s.minimum != "" || s.maximum != "" || s.exMin != "" || s.exMax != "" ||
			s.minLength != "" || s.maxLength != "" || s.minItems != "" || s.maxItems != "" ||
			s.format != "" || s.items != nil {
			return true
		}
		for _, t := range s.types {
			if t == tInteger {
				return true
			}
		}
		return full && (s.def != nil || s.deprecated || s.pattern != "" || s.unique)
	case kUnion:
		return true
	default:
		return full
	}
}

// noteW appends comma-separated note parts.
type noteW struct {
	b     []byte
	start int
}

func (n *noteW) sep() {
	if len(n.b) > n.start {
		n.b = append(n.b, ", "...)
	}
}

func (n *noteW) part(s string) {
	n.sep()
	n.b = append(n.b, s...)
}

func (n *noteW) schema(s *Schema, full bool) {
	m := s
	if s.kind == kUnion {
		// The note of the one member that is not null, if any.
		m = nil
		for _, u := range s.union {
			if u.kind == kTypes && len(u.types) == 1 && u.types[0] == tNull {
				continue
			}
			if m != nil {
				m = nil
				break
			}
			m = u
		}
	}
	if m != nil {
		n.constraints(m, full, true)
	}
	if !full {
		return
	}
	if bad := unsupportedBy(s); bad != "" {
		n.part("uses ")
		n.b = append(n.b, bad...)
	}
	def := s.def
	if def == nil && m != nil {
		def = m.def
	}
	if def != nil {
		mark := len(n.b)
		n.part("default: ")
		at := len(n.b)
		n.b = appendJSON(n.b, def)
		if len(n.b)-at > maxNoteLiteral {
			n.b = n.b[:mark]
		}
	}
	if s.deprecated {
		n.part("deprecated")
	}
}

func (n *noteW) constraints(m *Schema, full, top bool) {
	if m.kind != kTypes {
		return
	}
	isInt, isNum := hasType(m.types, tInteger), hasType(m.types, tNumber)
	if isInt || isNum {
		prefix := ""
		if isInt && !isNum {
			prefix = "int"
		}
		n.bounds(prefix, m.minimum, m.maximum, m.exMin, m.exMax)
	}
	if hasType(m.types, tString) {
		if formatOK(m.format) {
			n.part(m.format)
		}
		n.bounds("len", zeroless(m.minLength), m.maxLength, "", "")
		if full && m.pattern != "" && len(m.pattern) <= maxNoteLiteral {
			n.part("pattern: ")
			n.b = appendQuoted(n.b, m.pattern)
		}
	}
	if hasType(m.types, tArray) {
		if top && m.items != nil {
			n.constraints(m.items, full, false)
		}
		n.bounds("items", zeroless(m.minItems), m.maxItems, "", "")
		if full && m.unique {
			n.part("unique")
		}
	}
}

// bounds writes a range: `1..20`, `>= 1`, `> 0, <= 20`, after an optional
// prefix; the prefix "int" is written even without bounds.
func (n *noteW) bounds(prefix, lo, hi, exLo, exHi string) {
	loEx, hiEx := false, false
	if exLo != "" && !bigNumber(exLo) {
		lo, loEx = exLo, true
	} else if bigNumber(lo) {
		lo = ""
	}
	if exHi != "" && !bigNumber(exHi) {
		hi, hiEx = exHi, true
	} else if bigNumber(hi) {
		hi = ""
	}
	if lo == "" && hi == "" {
		if prefix == "int" {
			n.part("int")
		}
		return
	}
	n.sep()
	if prefix != "" {
		n.b = append(n.b, prefix...)
		n.b = append(n.b, ' ')
	}
	if lo != "" && hi != "" && !loEx && !hiEx {
		n.b = append(n.b, lo...)
		n.b = append(n.b, ".."...)
		n.b = append(n.b, hi...)
		return
	}
	if lo != "" {
		if loEx {
			n.b = append(n.b, "> "...)
		} else {
			n.b = append(n.b, ">= "...)
		}
		n.b = append(n.b, lo...)
	}
	if hi != "" {
		if lo != "" {
			n.b = append(n.b, ", "...)
		}
		if hiEx {
			n.b = append(n.b, "< "...)
		} else {
			n.b = append(n.b, "<= "...)
		}
		n.b = append(n.b, hi...)
	}
}

// unsupportedBy names the keyword that makes s render as `unknown`, looking
// into union members.
func unsupportedBy(s *Schema) string {
	switch s.kind {
	case kUnsupported:
		return s.firstBad
	case kUnion:
		for _, m := range s.union {
			if bad := unsupportedBy(m); bad != "" {
				return bad
			}
		}
	}
	return ""
}

func hasType(ts []jsType, t jsType) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

func zeroless(n string) string {
	if n == "0" {
		return ""
	}
	return n
}

func formatOK(f string) bool {
	if f == "" || len(f) > 32 {
		return false
	}
	for i := 0; i < len(f); i++ {
		c := f[i]
		if !(c == '-' || c == '_' || c == '.' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')) {
			return false
		}
	}
	return true
}
