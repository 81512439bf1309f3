package contract

import (
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"unsafe"
)

// The validator has no work limit and no cancellation, and its work is the product of the
// schema and the value: an input schema of 4,000 `anyOf` branches checked against an array of
// 40,000 numbers (62 KB and 229 KB, both within the bounds) ran for eight minutes, on the VM's
// goroutine (the precheck) where no deadline reaches it; `$ref`s that fan out (a → b, b; b → c,
// c; …) double the work per level. So before a value is validated, a dry run walks the schema
// over the value the way the validator would, without checking anything, and counts the schema
// evaluations it would make, over-approximating (every branch of anyOf/oneOf and every
// patternProperties entry is counted as taken, an enum as one evaluation per member). Past the
// budget the value is not validated: an input goes to the tool unchecked (advice, as for an
// oversized schema), an output fails closed (a contract that cannot be checked is not met).

// Budgets of schema evaluations: a real tool call needs tens to thousands; one costs 0.1–3 µs.
const (
	inputEvalBudget  = 50_000
	outputEvalBudget = 2_000_000
)

// maxInPlace bounds a chain of in-place applicators ($ref, allOf, …) on one value: the
// validator reports a cycle, the dry run stops counting.
const maxInPlace = 128

// dryRunnable reports whether the dry run can follow every reference of a schema document: no
// identifier below the root (a "#/…" reference inside an embedded resource resolves against
// that resource, not the document), no anchors, no dynamic references, and only "#" and "#/…"
// references. The values of const, enum, default and examples are data and are not looked at.
func dryRunnable(doc any) bool {
	idKey := "$id"
	if m, ok := doc.(map[string]any); ok {
		if s, _ := m["$schema"].(string); strings.Contains(s, "draft-04") || strings.Contains(s, "draft-03") {
			idKey = "id"
		}
	}
	type item struct {
		v     any
		root  bool
		names bool // a map from names to schemas (properties, $defs, …): its keys are not keywords
	}
	stack := []item{{v: doc, root: true}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x := it.v.(type) {
		case map[string]any:
			if it.names {
				for _, val := range x {
					stack = append(stack, item{v: val})
				}
				continue
			}
			for k, val := range x {
				str, isStr := val.(string)
				switch k {
				case "const", "enum", "default", "examples":
					continue
				case idKey:
					if isStr && !it.root {
						return false
					}
				case "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$dynamicRef", "$recursiveRef":
					if isStr {
						return false
					}
				case "$ref":
					if isStr && str != "#" && !strings.HasPrefix(str, "#/") {
						return false
					}
				}
				switch k {
				case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies":
					stack = append(stack, item{v: val, names: true})
				default:
					stack = append(stack, item{v: val})
				}
			}
		case []any:
			for _, val := range x {
				stack = append(stack, item{v: val})
			}
		}
	}
	return true
}

// costNode is one schema of the document, reduced to what the dry run follows; references are
// resolved into pointers (the graph may have cycles).
type costNode struct {
	enum     int         // members of enum: one evaluation each
	inPlace  []*costNode // allOf, anyOf, oneOf, not, if, then, else, dependentSchemas, $ref
	props    map[string]*costNode
	patterns []*costNode // patternProperties: counted for every property
	addl     []*costNode // additionalProperties, unevaluatedProperties: counted for every property
	names    *costNode   // propertyNames
	prefix   []*costNode // prefixItems, or items as an array
	each     []*costNode // items, additionalItems, contains, unevaluatedItems: every element
	unknown  bool        // a reference the dry run cannot follow
}

// costGraph builds the nodes of a dryRunnable document.
func costGraph(doc any) *costNode {
	b := &graphBuilder{root: doc, memo: map[unsafe.Pointer]*costNode{}}
	return b.node(doc)
}

type graphBuilder struct {
	root any
	memo map[unsafe.Pointer]*costNode
}

var leaf = &costNode{}

func (b *graphBuilder) node(s any) *costNode {
	m, ok := s.(map[string]any)
	if !ok {
		return leaf // a boolean schema
	}
	key := reflect.ValueOf(m).UnsafePointer()
	if n := b.memo[key]; n != nil {
		return n
	}
	n := &costNode{}
	b.memo[key] = n
	list := func(v any) []*costNode {
		var out []*costNode
		if l, ok := v.([]any); ok {
			for _, sub := range l {
				out = append(out, b.node(sub))
			}
		}
		return out
	}
	if e, ok := m["enum"].([]any); ok {
		n.enum = len(e)
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		n.inPlace = append(n.inPlace, list(m[kw])...)
	}
	for _, kw := range []string{"not", "if", "then", "else"} {
		if sub, ok := m[kw]; ok {
			n.inPlace = append(n.inPlace, b.node(sub))
		}
	}
	for _, kw := range []string{"dependentSchemas", "dependencies"} {
		if deps, ok := m[kw].(map[string]any); ok {
			for _, sub := range deps {
				if _, isNames := sub.([]any); !isNames {
					n.inPlace = append(n.inPlace, b.node(sub))
				}
			}
		}
	}
	if ref, ok := m["$ref"].(string); ok {
		if target, ok := b.resolve(ref); ok {
			n.inPlace = append(n.inPlace, b.node(target))
		} else {
			n.unknown = true
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		n.props = make(map[string]*costNode, len(props))
		for k, sub := range props {
			n.props[k] = b.node(sub)
		}
	}
	if pats, ok := m["patternProperties"].(map[string]any); ok {
		for _, sub := range pats {
			n.patterns = append(n.patterns, b.node(sub))
		}
	}
	for _, kw := range []string{"additionalProperties", "unevaluatedProperties"} {
		if sub, ok := m[kw]; ok {
			n.addl = append(n.addl, b.node(sub))
		}
	}
	if sub, ok := m["propertyNames"]; ok {
		n.names = b.node(sub)
	}
	n.prefix = list(m["prefixItems"])
	if items, ok := m["items"].([]any); ok { // drafts before 2020-12
		n.prefix = list(items)
	}
	for _, kw := range []string{"items", "additionalItems", "contains", "unevaluatedItems"} {
		if sub, ok := m[kw]; ok {
			if _, isList := sub.([]any); !isList {
				n.each = append(n.each, b.node(sub))
			}
		}
	}
	return n
}

// withinBudget reports whether validating inst against the schema (its costGraph) costs at most
// budget evaluations. A reference the dry run cannot follow answers false: its cost is unknown.
func withinBudget(g *costNode, inst any, budget int) bool {
	d := &dryRun{budget: budget}
	return d.eval(g, inst, 0)
}

// dryRun counts the schema evaluations a validation would make.
type dryRun struct {
	budget int
	n      int
}

func (d *dryRun) eval(s *costNode, v any, inPlace int) bool {
	d.n += 1 + s.enum
	if d.n > d.budget || inPlace > maxInPlace || s.unknown {
		return false
	}
	for _, sub := range s.inPlace {
		if !d.eval(sub, v, inPlace+1) {
			return false
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if sub, ok := s.props[k]; ok && !d.eval(sub, val, 0) {
				return false
			}
			for _, sub := range s.patterns {
				if !d.eval(sub, val, 0) {
					return false
				}
			}
			for _, sub := range s.addl {
				if !d.eval(sub, val, 0) {
					return false
				}
			}
			if s.names != nil && !d.eval(s.names, k, 0) {
				return false
			}
		}
	case []any:
		for i, val := range x {
			if i < len(s.prefix) && !d.eval(s.prefix[i], val, 0) {
				return false
			}
			for _, sub := range s.each {
				if !d.eval(sub, val, 0) {
					return false
				}
			}
		}
	}
	return true
}

// resolve follows a reference within the document: "#" or a JSON pointer "#/a/b".
func (b *graphBuilder) resolve(ref string) (any, bool) {
	if !strings.HasPrefix(ref, "#") {
		return nil, false
	}
	ptr, err := url.PathUnescape(ref[1:])
	if err != nil {
		return nil, false
	}
	if ptr == "" {
		return b.root, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false // an anchor
	}
	cur := b.root
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
