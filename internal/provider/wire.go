package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
)

// JSON pieces shared by both dialects. Replies are decoded with encoding/json into types that
// hold only what Response needs. They are strict where a wrong shape would change the
// meaning (content, tool calls, their arguments) and lenient where a field is only passed
// through (ids, model names, stop reasons, token counts): an OpenAI-compatible server that
// sends a numeric id or a fractional token count still works, and nothing it sends there can
// change what the model said.

// maxItems bounds every array of a reply we decode (choices, tool calls, content blocks,
// content parts) and the tool calls and blocks a stream may open. Real replies carry a
// handful; a hostile one of a million `{}` must not become a million structs, each many
// times the size of its two bytes (a 16 MiB body would otherwise cost gigabytes).
const maxItems = 1024

// bounded is a JSON array of at most maxItems elements (null reads as empty).
type bounded[T any] []T

func (b *bounded[T]) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*b = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return &json.UnmarshalTypeError{Value: jsonKind(data), Type: reflect.TypeOf(*b)}
	}
	out := (*b)[:0]
	for dec.More() {
		if len(out) >= maxItems {
			return fmt.Errorf("an array has more than %d elements", maxItems)
		}
		var v T
		if err := dec.Decode(&v); err != nil {
			return err
		}
		out = append(out, v)
	}
	*b = out
	return nil
}

// text is a JSON string. null and values of other types read as "" instead of failing the
// whole reply.
type text string

func (t *text) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		*t = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*t = text(s)
	return nil
}

// tokens is a token count: a non-negative JSON number (a fraction is truncated); null, strings
// and nonsense read as 0.
type tokens int64

func (n *tokens) UnmarshalJSON(b []byte) error {
	var f float64
	if json.Unmarshal(b, &f) == nil && f >= 0 && f < math.MaxInt64 {
		*n = tokens(f)
	} else {
		*n = 0
	}
	return nil
}

// argText is a tool call's argument text: a JSON string's value, or — for servers that send
// the arguments as an object instead of a string — the JSON itself, so the call is kept as
// the model made it rather than read as empty. null reads as "".
type argText string

func (a *argText) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = argText(s)
	case string(b) == "null":
		*a = ""
	default:
		*a = argText(b)
	}
	return nil
}

// encodeBody serializes a request body. HTML characters stay as they are (`<`, `>` and `&` are
// common in code and descriptions, and escaping them would only make bodies and debug
// snapshots longer); raw schemas and arguments are compacted, never reordered.
func encodeBody(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("provider: cannot encode the request: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// objectSchema checks that a tool's input schema is one JSON object and returns it as given.
func objectSchema(name string, schema json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(schema)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, fmt.Errorf("provider: tool %q: input schema is not a JSON object", name)
	}
	return trimmed, nil
}

// decodeReply unmarshals a whole reply (or one stream event) into v; a failure is a
// protocolError naming what was being read.
func decodeReply(what string, data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syn):
		return protocolf("%s is not JSON (%s at byte %d)", what, syn.Error(), syn.Offset)
	case errors.As(err, &typ):
		return protocolf("%s: field %q cannot be a JSON %s", what, typ.Field, typ.Value)
	}
	return protocolf("%s is not valid: %v", what, err)
}

// jsonKind names the kind of a JSON value by its first byte, as encoding/json's errors do.
func jsonKind(data []byte) string {
	switch t := bytes.TrimSpace(data); {
	case len(t) == 0:
		return "nothing"
	case t[0] == '{':
		return "object"
	case t[0] == '[':
		return "array"
	case t[0] == '"':
		return "string"
	case t[0] == 't' || t[0] == 'f':
		return "bool"
	}
	return "number"
}
