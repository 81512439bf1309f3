package schemahint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
)

// Parsing limits. Schemas come from MCP servers and are untrusted.
const (
	// MaxInputBytes is the largest schema Parse accepts (and the budget FromValue
	// estimates for an already-decoded value).
	MaxInputBytes = 1 << 20
	// MaxDepth is the deepest JSON nesting (objects and arrays) Parse accepts.
	MaxDepth = 64
)

// ErrTooLarge and ErrTooDeep report a schema past MaxInputBytes or MaxDepth.
var (
	ErrTooLarge = errors.New("schemahint: schema larger than 1 MiB")
	ErrTooDeep  = errors.New("schemahint: schema nested deeper than 64 levels")
)

// jkind is the kind of a decoded JSON value.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

// jvalue is a decoded JSON value that keeps object key order. Numbers keep
// their source text. Duplicate object keys keep the first position and the
// last value (encoding/json keeps the last value too).
type jvalue struct {
	kind jkind
	b    bool
	s    string // number text or string value
	arr  []*jvalue
	keys []string
	vals []*jvalue
}

// objectBuilder appends members to an object value; a later duplicate key
// replaces the earlier value in place. Small objects are searched linearly,
// large ones through a map, so hostile 10k-key objects stay linear.
type objectBuilder struct {
	v   *jvalue
	idx map[string]int
}

func (o *objectBuilder) set(key string, val *jvalue) {
	v := o.v
	if o.idx != nil {
		if i, ok := o.idx[key]; ok {
			v.vals[i] = val
			return
		}
	} else {
		for i, k := range v.keys {
			if k == key {
				v.vals[i] = val
				return
			}
		}
	}
	v.keys = append(v.keys, key)
	v.vals = append(v.vals, val)
	if o.idx != nil {
		o.idx[key] = len(v.keys) - 1
	} else if len(v.keys) > 16 {
		o.idx = make(map[string]int, 2*len(v.keys))
		for i, k := range v.keys {
			o.idx[k] = i
		}
	}
}

// Parse decodes a JSON Schema from raw JSON, keeping the order of object keys
// (rendered hints and declarations follow the schema's own property order).
// The document must be a JSON object or boolean, at most MaxInputBytes long
// and at most MaxDepth levels deep. Unknown or malformed keywords are not an
// error: they make the affected node render as `unknown`.
func Parse(raw []byte) (*Schema, error) {
	if len(raw) > MaxInputBytes {
		return nil, ErrTooLarge
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("trailing data after the schema")
		}
		return nil, fmt.Errorf("schemahint: %w", err)
	}
	return schemaFromJSON(v)
}

func decodeValue(dec *json.Decoder, depth int) (*jvalue, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("schemahint: %w", err)
	}
	return decodeToken(dec, tok, depth)
}

func decodeToken(dec *json.Decoder, tok json.Token, depth int) (*jvalue, error) {
	switch t := tok.(type) {
	case nil:
		return &jvalue{kind: jNull}, nil
	case bool:
		return &jvalue{kind: jBool, b: t}, nil
	case json.Number:
		return &jvalue{kind: jNumber, s: string(t)}, nil
	case string:
		return &jvalue{kind: jString, s: t}, nil
	case json.Delim:
		if depth >= MaxDepth {
			return nil, ErrTooDeep
		}
		switch t {
		case '[':
			v := &jvalue{kind: jArray}
			for {
				tok, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("schemahint: %w", err)
				}
				if d, ok := tok.(json.Delim); ok && d == ']' {
					return v, nil
				}
				el, err := decodeToken(dec, tok, depth+1)
				if err != nil {
					return nil, err
				}
				v.arr = append(v.arr, el)
			}
		case '{':
			v := &jvalue{kind: jObject}
			ob := objectBuilder{v: v}
			for {
				tok, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("schemahint: %w", err)
				}
				if d, ok := tok.(json.Delim); ok && d == '}' {
					return v, nil
				}
				key, ok := tok.(string)
				if !ok {
					return nil, fmt.Errorf("schemahint: unexpected %v in object", tok)
				}
				val, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				ob.set(key, val)
			}
		}
	}
	return nil, fmt.Errorf("schemahint: unexpected token %v", tok)
}

// FromValue builds a Schema from an already-decoded JSON value: map[string]any,
// []any, string, bool, nil, float64, json.Number, integers, json.RawMessage or
// []byte (parsed as JSON), or a *Schema (returned as is). Any other type is
// marshalled with encoding/json and parsed.
//
// Go maps have no key order, so the keys of a map[string]any are sorted.
// Callers that care about the schema's own property order must pass the raw
// JSON bytes to Parse (or a json.RawMessage here). The same limits as Parse
// apply (the size is estimated from the decoded value).
func FromValue(v any) (*Schema, error) {
	switch t := v.(type) {
	case *Schema:
		if t == nil {
			return nil, errors.New("schemahint: nil schema")
		}
		return t, nil
	case json.RawMessage:
		return Parse(t)
	case []byte:
		return Parse(t)
	}
	budget := MaxInputBytes
	jv, err := valueFromGo(v, 0, &budget)
	if err != nil {
		return nil, err
	}
	return schemaFromJSON(jv)
}

var errFallback = errors.New("fallback")

func valueFromGo(v any, depth int, budget *int) (*jvalue, error) {
	jv, err := valueFromGoFast(v, depth, budget)
	if err != errFallback {
		return jv, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("schemahint: %w", err)
	}
	if len(raw) > *budget {
		return nil, ErrTooLarge
	}
	*budget -= len(raw)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return decodeValue(dec, depth)
}

func valueFromGoFast(v any, depth int, budget *int) (*jvalue, error) {
	*budget -= 4 // rough per-value overhead: separators, literal names
	if *budget < 0 {
		return nil, ErrTooLarge
	}
	switch t := v.(type) {
	case nil:
		return &jvalue{kind: jNull}, nil
	case bool:
		return &jvalue{kind: jBool, b: t}, nil
	case string:
		*budget -= len(t)
		if *budget < 0 {
			return nil, ErrTooLarge
		}
		return &jvalue{kind: jString, s: toValidUTF8(t)}, nil
	case json.Number:
		if _, err := strconv.ParseFloat(string(t), 64); err != nil && !isRangeErr(err) {
			return nil, fmt.Errorf("schemahint: invalid number %q", string(t))
		}
		*budget -= len(t)
		return &jvalue{kind: jNumber, s: string(t)}, nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("schemahint: unsupported number %v", t)
		}
		raw, _ := json.Marshal(t)
		return &jvalue{kind: jNumber, s: string(raw)}, nil
	case float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		raw, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("schemahint: %w", err)
		}
		return &jvalue{kind: jNumber, s: string(raw)}, nil
	case []any:
		if depth >= MaxDepth {
			return nil, ErrTooDeep
		}
		out := &jvalue{kind: jArray, arr: make([]*jvalue, 0, len(t))}
		for _, el := range t {
			jv, err := valueFromGo(el, depth+1, budget)
			if err != nil {
				return nil, err
			}
			out.arr = append(out.arr, jv)
		}
		return out, nil
	case map[string]any:
		if depth >= MaxDepth {
			return nil, ErrTooDeep
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := &jvalue{kind: jObject, keys: make([]string, 0, len(keys)), vals: make([]*jvalue, 0, len(keys))}
		ob := objectBuilder{v: out}
		for _, k := range keys {
			*budget -= len(k)
			jv, err := valueFromGo(t[k], depth+1, budget)
			if err != nil {
				return nil, err
			}
			// Two Go keys may only collide after UTF-8 repair; set keeps one.
			ob.set(toValidUTF8(k), jv)
		}
		return out, nil
	}
	if depth >= MaxDepth {
		return nil, ErrTooDeep
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return &jvalue{kind: jNull}, nil
	}
	return nil, errFallback
}

func isRangeErr(err error) bool {
	var ne *strconv.NumError
	return errors.As(err, &ne) && ne.Err == strconv.ErrRange
}

// MarshalJSON re-encodes the schema as compact JSON with its keys in their
// original order (sorted when the schema came from a Go map).
func (s *Schema) MarshalJSON() ([]byte, error) {
	if s == nil || s.raw == nil {
		return []byte("null"), nil
	}
	return appendJSON(nil, s.raw), nil
}

func appendJSON(b []byte, v *jvalue) []byte {
	switch v.kind {
	case jNull:
		return append(b, "null"...)
	case jBool:
		return strconv.AppendBool(b, v.b)
	case jNumber:
		return append(b, v.s...)
	case jString:
		return appendQuoted(b, v.s)
	case jArray:
		b = append(b, '[')
		for i, el := range v.arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, el)
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		for i, k := range v.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendQuoted(b, k)
			b = append(b, ':')
			b = appendJSON(b, v.vals[i])
		}
		return append(b, '}')
	}
}
