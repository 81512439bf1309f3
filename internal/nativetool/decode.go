package nativetool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Decode decodes a tool's JSON input object into v, a pointer to a struct whose fields all
// carry json tags. Absent or null input counts as {}. Keys must match the tags exactly (a
// model that writes "Path" for "path" is told so); an unknown key, a wrong type, trailing data
// or more than maxBytes of input is an error that starts with the tool's name and names the
// field.
func Decode(tool string, raw json.RawMessage, v any, maxBytes int) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) > maxBytes {
		return fmt.Errorf("%s: input is %d bytes (limit %d)", tool, len(raw), maxBytes)
	}
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return fmt.Errorf("%s: input must be a JSON object", tool)
	}
	// encoding/json matches keys case-insensitively even with DisallowUnknownFields, so the
	// keys are checked against the tags first.
	known := fieldNames(v)
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return fmt.Errorf("%s: input is not a valid JSON object: %v", tool, err)
	}
	var unknown []string
	for k := range keys {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("%s: unknown field %q (accepted: %s)", tool, unknown[0], strings.Join(known, ", "))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s: field %q must be %s, not %s", tool, te.Field, jsonKind(te.Type), te.Value)
		}
		return fmt.Errorf("%s: invalid input: %v", tool, err)
	}
	return nil
}

// fieldNames lists the json tag names of the struct v points to, in declaration order.
func fieldNames(v any) []string {
	t := reflect.TypeOf(v).Elem()
	names := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// jsonKind names the JSON type a Go type decodes from, for error messages.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// IntArg validates an optional integer argument against [lo, hi] and returns it, or def when
// it is absent.
func IntArg(tool, name string, v *int, def, lo, hi int) (int, error) {
	if v == nil {
		return def, nil
	}
	if *v < lo || *v > hi {
		return 0, fmt.Errorf("%s: %s must be between %d and %d, not %d", tool, name, lo, hi, *v)
	}
	return *v, nil
}
