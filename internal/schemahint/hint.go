package schemahint

// DefaultHintLen is the hint length (bytes) used when maxLen <= 0.
const DefaultHintLen = 256

const ellipsis = "…"

// InputHint renders a bounded, one-line, TypeScript-style signature of a
// tool's input, for the quick index and ALL_TOOLS entries, e.g.
//
//	{ path: string; offset?: number /* int >= 1 */; mode?: "a" | "b" }
//
// Required properties come first, then optional ones, each group in schema
// order. Enums and unions show at most 6 members, then `| …`. Integer and
// range, length, item-count and format constraints become short `/* … */`
// notes. Arrays render as `T[]`, or `Array<…>` around unions and object
// literals; nested objects are inlined; an additionalProperties schema
// becomes `{ [key: string]: T }`. A nil or empty schema renders `{}`. Nodes
// using keywords we do not render ($ref, allOf, not, if, patternProperties,
// dependent*, anyOf/oneOf next to properties) render as `unknown`.
//
// The result is at most maxLen bytes (DefaultHintLen when maxLen <= 0). A
// hint that does not fit degrades in steps: notes are dropped, then nested
// object literals collapse to `object` from the deepest level up, then the
// root lists the properties that fit and ends with `…`. Tokens (names,
// literals) are never cut. Descriptions are never included.
func InputHint(s *Schema, maxLen int) string {
	if maxLen <= 0 {
		maxLen = DefaultHintLen
	}
	return compactHint(s, maxLen, true, true)
}

// OutputHint renders a compact type for a tool's declared output (its
// `details` value), e.g. `Array<{ id: string; paid: boolean; tons: number }>`,
// only when the hint is complete: every object layer is closed
// (`additionalProperties: false`, or a typed additionalProperties map), every
// node has a type, no keyword is unsupported, no enum or union is elided and
// the hint fits in maxLen bytes (DefaultHintLen when maxLen <= 0). Otherwise
// ok is false and the caller prints `-> ?`. Properties keep schema order;
// output hints carry no notes.
func OutputHint(s *Schema, maxLen int) (hint string, ok bool) {
	if s == nil {
		return "", false
	}
	if maxLen <= 0 {
		maxLen = DefaultHintLen
	}
	r := renderer{mode: modeOutput, lim: outputLimits, limit: maxLen}
	r.b = make([]byte, 0, min(maxLen, 256))
	r.typ(s, 0)
	if r.over || r.incomplete {
		return "", false
	}
	return string(r.b), true
}

// emptyRoot reports whether a root input schema renders as `{}`: absent,
// `true`, `{}`, or an object with no properties and no value schema.
func emptyRoot(s *Schema) bool {
	if s == nil || s.kind == kAny {
		return true
	}
	return s.kind == kTypes && len(s.types) == 1 && s.types[0] == tObject && !s.nullable &&
		len(s.props) == 0 && len(s.missingReq) == 0 && !isMap(s.addl)
}

// compactHint is InputHint with a switch for notes (off for the output notes
// in declaration docs) and for the property order.
func compactHint(s *Schema, maxLen int, comments, reqFirst bool) string {
	if emptyRoot(s) {
		return fitOr("{}", maxLen)
	}
	r := renderer{mode: modeInput, lim: inputLimits, reqFirst: reqFirst, limit: maxLen}
	r.b = make([]byte, 0, min(maxLen, 256))
	try := func(comments bool, depth int) bool {
		r.b, r.over, r.comments, r.depth = r.b[:0], false, comments, depth
		r.typ(s, 0)
		return !r.over
	}
	if comments && try(true, 0) {
		return string(r.b)
	}
	if try(false, 0) {
		return string(r.b)
	}
	for d := s.objDepth - 1; d >= 1; d-- {
		if try(false, d) {
			return string(r.b)
		}
	}
	return truncatedHint(s, &r, maxLen)
}

// truncatedHint is the last degradation step: the root object with nested
// objects collapsed and enums shortened, listing the properties that fit,
// then `…`. An optional property that does not fit is skipped (later, shorter
// ones may fit); a required one that does not fit ends the list, so a shown
// optional property means every required one is shown.
func truncatedHint(s *Schema, r *renderer, maxLen int) string {
	if s.kind != kTypes || !hasType(s.types, tObject) {
		if fitOr("unknown", maxLen) != "" {
			return "unknown"
		}
		return fitOr(ellipsis, maxLen)
	}
	const tail = "; " + ellipsis + " }"
	if maxLen < len("{ "+ellipsis+" }") {
		return fitOr(ellipsis, maxLen)
	}
	r.b, r.over, r.comments, r.depth = r.b[:0], false, false, 1
	r.lim.enum, r.lim.union = 3, 3
	r.limit = maxLen - len(tail)
	r.w("{ ")
	n := 0
	add := func(p *property) bool {
		mark, n0 := len(r.b), n
		r.prop(p, 0, &n)
		if r.over {
			r.b, r.over, n = r.b[:mark], false, n0
			return false
		}
		return true
	}
	order := func(required bool) bool {
		for i := range s.props {
			p := &s.props[i]
			if r.reqFirst && p.required != required {
				continue
			}
			if !add(p) && p.required {
				return false
			}
		}
		return true
	}
	if !r.reqFirst {
		order(false)
	} else if order(true) {
		order(false)
	}
	r.limit = maxLen
	if n == 0 {
		r.w(ellipsis + " }")
	} else {
		r.w(tail)
	}
	return string(r.b)
}

func fitOr(s string, maxLen int) string {
	if len(s) <= maxLen {
		return s
	}
	return ""
}
