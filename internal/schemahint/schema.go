package schemahint

import (
	"errors"
	"math"
	"strconv"
	"sync/atomic"
)

// Schema is an immutable, parsed JSON Schema node. It keeps the order of the
// schema's object keys (so of its properties) and pre-computes what the
// renderers need. The zero value is not useful: build one with Parse or
// FromValue. A Schema is safe for concurrent use.
type Schema struct {
	raw *jvalue // the source node, for MarshalJSON

	kind kind

	// types lists the `type` keyword's members in schema order (integer and
	// number both kept; the renderer folds them). Empty when absent.
	types    []jsType
	inferred bool // object/array type inferred from properties/items
	nullable bool // OpenAPI `nullable: true`

	enum     []*jvalue // enum members, or the single const value
	union    []*Schema // anyOf / oneOf members with shape keywords
	firstBad string    // first unsupported keyword, for notes

	// object
	props      []property
	missingReq []string // required names that are not in properties
	addl       *Schema  // additionalProperties; nil when absent

	// array
	items   *Schema   // items (non-tuple)
	tuple   []*Schema // prefixItems, or items given as an array
	rest    *Schema   // items after prefixItems / additionalItems
	hasRest bool      // rest keyword present (rest may still be nil if malformed)

	// annotations and constraints (raw, untrusted)
	description string
	title       string
	def         *jvalue
	format      string
	pattern     string
	minimum     string
	maximum     string
	exMin       string
	exMax       string
	minLength   string
	maxLength   string
	minItems    string
	maxItems    string
	unique      bool
	deprecated  bool

	// objDepth is the deepest object nesting below and including this node
	// (0 when the node renders no object literal); used to degrade hints.
	objDepth int

	outNote atomic.Pointer[string] // memoized outputNote
}

type property struct {
	name     string
	schema   *Schema
	required bool
}

// kind is what a node renders as, decided once at parse time.
type kind uint8

const (
	kAny         kind = iota // no shape information (`{}`, `true`, annotations only)
	kNever                   // `false`, empty enum
	kUnsupported             // a keyword we do not render ($ref, allOf, …) or a malformed one
	kEnum                    // enum or const
	kUnion                   // anyOf / oneOf
	kTypes                   // type keyword (or inferred object/array)
)

type jsType uint8

const (
	tString jsType = iota + 1
	tNumber
	tInteger
	tBoolean
	tNull
	tArray
	tObject
	tOther // a type name we do not know: renders `unknown`
)

var typeNames = map[string]jsType{
	"string": tString, "number": tNumber, "integer": tInteger, "boolean": tBoolean,
	"null": tNull, "array": tArray, "object": tObject,
}

// unsupportedKeywords make their node render as `unknown`.
var unsupportedKeywords = map[string]bool{
	"$ref": true, "$dynamicRef": true, "$recursiveRef": true,
	"allOf": true, "not": true, "if": true,
	"patternProperties": true, "dependentSchemas": true, "dependentRequired": true,
	"dependencies": true, "unevaluatedProperties": true, "unevaluatedItems": true,
}

// shapeKeywords are keywords that say what a value looks like (as opposed to
// constraints and annotations). A node whose anyOf/oneOf members carry none of
// them is a constraint-only union and renders as its own type.
var shapeKeywords = map[string]bool{
	"type": true, "enum": true, "const": true, "properties": true, "additionalProperties": true,
	"items": true, "prefixItems": true, "anyOf": true, "oneOf": true,
}

func schemaFromJSON(v *jvalue) (*Schema, error) {
	if v.kind != jObject && v.kind != jBool {
		return nil, errors.New("schemahint: a schema must be a JSON object or boolean")
	}
	return compile(v), nil
}

// compile interprets one schema node (recursively). Anything that is not a
// valid schema renders as `unknown`.
func compile(v *jvalue) *Schema {
	s := &Schema{raw: v}
	switch v.kind {
	case jBool:
		if v.b {
			s.kind = kAny
		} else {
			s.kind = kNever
		}
		return s
	case jObject:
	default:
		s.kind = kUnsupported
		return s
	}

	var (
		malformed   bool
		hasEnum     bool
		hasConst    bool
		constVal    *jvalue
		enumVals    []*jvalue
		anyOf       *jvalue
		oneOf       *jvalue
		required    *jvalue
		propsV      *jvalue
		exMinBool   bool
		exMaxBool   bool
		hasObjShape bool
		hasArrShape bool
	)
	for i, key := range v.keys {
		val := v.vals[i]
		switch key {
		case "type":
			switch val.kind {
			case jString:
				s.types = appendType(s.types, val.s)
			case jArray:
				if len(val.arr) == 0 {
					malformed = true
				}
				for _, el := range val.arr {
					if el.kind != jString {
						malformed = true
						break
					}
					s.types = appendType(s.types, el.s)
				}
			default:
				malformed = true
			}
		case "enum":
			if val.kind != jArray {
				malformed = true
				continue
			}
			hasEnum = true
			enumVals = val.arr
		case "const":
			hasConst = true
			constVal = val
		case "nullable":
			s.nullable = val.kind == jBool && val.b
		case "properties":
			if val.kind != jObject {
				malformed = true
				continue
			}
			propsV = val
			hasObjShape = true
		case "required":
			if val.kind != jArray {
				// Draft 3 used a boolean on the property; ignore it.
				if val.kind != jBool {
					malformed = true
				}
				continue
			}
			required = val
			hasObjShape = true
		case "additionalProperties":
			if val.kind != jObject && val.kind != jBool {
				malformed = true
				continue
			}
			s.addl = compile(val)
			hasObjShape = true
		case "items":
			switch val.kind {
			case jObject, jBool:
				s.items = compile(val)
			case jArray:
				s.tuple = compileList(val.arr)
			default:
				malformed = true
				continue
			}
			hasArrShape = true
		case "prefixItems":
			if val.kind != jArray {
				malformed = true
				continue
			}
			hasArrShape = true
		case "additionalItems":
			if val.kind != jObject && val.kind != jBool {
				malformed = true
			}
		case "anyOf":
			if val.kind != jArray || len(val.arr) == 0 {
				malformed = true
				continue
			}
			anyOf = val
		case "oneOf":
			if val.kind != jArray || len(val.arr) == 0 {
				malformed = true
				continue
			}
			oneOf = val
		case "description":
			if val.kind == jString {
				s.description = val.s
			}
		case "title":
			if val.kind == jString {
				s.title = val.s
			}
		case "default":
			s.def = val
		case "format":
			if val.kind == jString {
				s.format = val.s
			}
		case "pattern":
			if val.kind == jString {
				s.pattern = val.s
			}
		case "minimum":
			s.minimum = numText(val)
		case "maximum":
			s.maximum = numText(val)
		case "exclusiveMinimum":
			if val.kind == jBool {
				exMinBool = val.b // draft 4: applies to minimum
			} else {
				s.exMin = numText(val)
			}
		case "exclusiveMaximum":
			if val.kind == jBool {
				exMaxBool = val.b
			} else {
				s.exMax = numText(val)
			}
		case "minLength":
			s.minLength = numText(val)
		case "maxLength":
			s.maxLength = numText(val)
		case "minItems":
			s.minItems = numText(val)
		case "maxItems":
			s.maxItems = numText(val)
		case "uniqueItems":
			s.unique = val.kind == jBool && val.b
		case "deprecated":
			s.deprecated = val.kind == jBool && val.b
		default:
			if unsupportedKeywords[key] && s.firstBad == "" {
				s.firstBad = key
			}
		}
	}
	if exMinBool && s.minimum != "" {
		s.exMin, s.minimum = s.minimum, ""
	}
	if exMaxBool && s.maximum != "" {
		s.exMax, s.maximum = s.maximum, ""
	}

	// Arrays: 2020-12 prefixItems + items (rest), or draft-4 items[] + additionalItems.
	if pi := v.getKey("prefixItems"); pi != nil && pi.kind == jArray {
		s.tuple = compileList(pi.arr)
		if s.items != nil {
			s.rest, s.hasRest, s.items = s.items, true, nil
		} else if it := v.getKey("items"); it != nil {
			s.hasRest = true // items given as an array next to prefixItems: malformed
			malformed = true
		}
	} else if s.tuple != nil {
		if ai := v.getKey("additionalItems"); ai != nil {
			s.hasRest = true
			if ai.kind == jObject || ai.kind == jBool {
				s.rest = compile(ai)
			}
		}
	}

	// Objects: properties in schema order, required flags.
	if propsV != nil {
		s.props = make([]property, len(propsV.keys))
		for i, name := range propsV.keys {
			s.props[i] = property{name: name, schema: compile(propsV.vals[i])}
		}
	}
	if required != nil {
		markRequired(s, required)
	}

	// Union members.
	if anyOf != nil && oneOf != nil {
		malformed = true // an intersection of two unions: not rendered
	}
	members := anyOf
	if members == nil {
		members = oneOf
	}
	var unionShape bool
	if members != nil {
		for _, m := range members.arr {
			if m.kind != jObject || hasShapeKeyword(m) {
				unionShape = true
				break
			}
		}
	}

	switch {
	case s.firstBad != "":
		s.kind = kUnsupported
	case malformed:
		s.kind = kUnsupported
		s.firstBad = "malformed"
	case hasConst:
		s.kind = kEnum
		s.enum = []*jvalue{constVal}
	case hasEnum:
		s.kind = kEnum
		s.enum = enumVals
		if len(enumVals) == 0 {
			s.kind = kNever
		}
	case unionShape:
		if hasObjShape || hasArrShape {
			// Members that refine the node's own properties or items would
			// need an intersection; we do not render those. A bare `type`
			// next to the union is redundant with the members' own types.
			s.kind = kUnsupported
			s.firstBad = anyOfName(anyOf)
			break
		}
		s.kind = kUnion
		s.union = compileList(members.arr)
	case len(s.types) > 0:
		s.kind = kTypes
	case hasObjShape:
		s.kind = kTypes
		s.types = []jsType{tObject}
		s.inferred = true
	case hasArrShape:
		s.kind = kTypes
		s.types = []jsType{tArray}
		s.inferred = true
	default:
		s.kind = kAny
	}
	s.objDepth = objDepth(s)
	return s
}

func anyOfName(anyOf *jvalue) string {
	if anyOf != nil {
		return "anyOf"
	}
	return "oneOf"
}

func (v *jvalue) getKey(key string) *jvalue {
	for i, k := range v.keys {
		if k == key {
			return v.vals[i]
		}
	}
	return nil
}

func hasShapeKeyword(m *jvalue) bool {
	for _, k := range m.keys {
		if shapeKeywords[k] || unsupportedKeywords[k] {
			return true
		}
	}
	return false
}

func compileList(arr []*jvalue) []*Schema {
	out := make([]*Schema, len(arr))
	for i, el := range arr {
		out[i] = compile(el)
	}
	return out
}

func appendType(ts []jsType, name string) []jsType {
	t, ok := typeNames[name]
	if !ok {
		t = tOther
	}
	for _, have := range ts {
		if have == t {
			return ts
		}
	}
	return append(ts, t)
}

func markRequired(s *Schema, req *jvalue) {
	var idx map[string]int
	if len(s.props) > 16 && len(req.arr) > 4 {
		idx = make(map[string]int, len(s.props))
		for i := len(s.props) - 1; i >= 0; i-- {
			idx[s.props[i].name] = i
		}
	}
	seenMissing := map[string]bool{}
	for _, r := range req.arr {
		if r.kind != jString {
			continue
		}
		found := false
		if idx != nil {
			if i, ok := idx[r.s]; ok {
				s.props[i].required, found = true, true
			}
		} else {
			for i := range s.props {
				if s.props[i].name == r.s {
					s.props[i].required, found = true, true
					break
				}
			}
		}
		if !found && !seenMissing[r.s] {
			seenMissing[r.s] = true
			s.missingReq = append(s.missingReq, r.s)
		}
	}
}

// numText returns a JSON number's text, or "" when v is not a number.
func numText(v *jvalue) string {
	if v.kind != jNumber {
		return ""
	}
	return v.s
}

// objDepth is the number of nested object literals a node renders at most.
func objDepth(s *Schema) int {
	d := 0
	switch s.kind {
	case kUnion:
		for _, m := range s.union {
			d = max(d, m.objDepth)
		}
	case kTypes:
		for _, t := range s.types {
			switch t {
			case tObject:
				inner := 0
				for _, p := range s.props {
					inner = max(inner, p.schema.objDepth)
				}
				if s.addl != nil {
					inner = max(inner, s.addl.objDepth)
				}
				d = max(d, inner+1)
			case tArray:
				if s.items != nil {
					d = max(d, s.items.objDepth)
				}
				for _, m := range s.tuple {
					d = max(d, m.objDepth)
				}
				if s.rest != nil {
					d = max(d, s.rest.objDepth)
				}
			}
		}
	}
	return d
}

// bigNumber reports whether a bound is too large to be worth showing
// (e.g. Number.MAX_SAFE_INTEGER emitted by schema generators).
func bigNumber(text string) bool {
	if len(text) > 24 {
		return true
	}
	f, err := strconv.ParseFloat(text, 64)
	return err != nil || math.Abs(f) >= 1<<53-1
}
