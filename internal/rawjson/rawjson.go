// Package rawjson edits a JSON object member by member without touching what it does not change:
// every key and value keeps the bytes it was written with (escapes, number spellings, whitespace
// inside values), which decoding and encoding again would not. The gateway relays its upstream
// MCP servers' results and list items byte for byte while it changes single members of them (a
// prompt's name when it is prefixed, the protocol members of a result that belong to one hop),
// and this is all it needs for that.
package rawjson

import (
	"bytes"
	"encoding/json"
	"io"
)

// Member is one member of an object: its key decoded, and its key and value as written.
type Member struct {
	Key    string
	RawKey json.RawMessage
	Value  json.RawMessage
}

// NewMember is a member with a key of ours.
func NewMember(key string, value json.RawMessage) Member {
	return Member{Key: key, RawKey: String(key), Value: value}
}

// String is s as a JSON string, without the HTML escaping of encoding/json (a name with & or <
// stays readable).
func String(s string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Members splits obj into its members, in order (duplicate keys included). ok is false when obj
// is not exactly one JSON object, optionally surrounded by whitespace.
func Members(obj []byte) (ms []Member, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		start := dec.InputOffset()
		kt, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, isKey := kt.(string)
		if !isKey {
			return nil, false
		}
		// The bytes since the previous value: whitespace, the comma, whitespace, the key.
		rk := bytes.TrimLeft(obj[start:dec.InputOffset()], " \t\r\n,")
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		ms = append(ms, Member{Key: k, RawKey: rk, Value: v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // trailing bytes
	}
	return ms, true
}

// Object writes members as a compact object (each key and value as the member holds it).
func Object(ms []Member) []byte {
	n := 2
	for _, m := range ms {
		n += len(m.RawKey) + len(m.Value) + 2
	}
	out := make([]byte, 0, n)
	out = append(out, '{')
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m.RawKey...)
		out = append(out, ':')
		out = append(out, m.Value...)
	}
	return append(out, '}')
}

// Has reports whether ms has a member named key.
func Has(ms []Member, key string) bool {
	for _, m := range ms {
		if m.Key == key {
			return true
		}
	}
	return false
}

// Get is the value of the first member named key, or nil.
func Get(ms []Member, key string) json.RawMessage {
	for _, m := range ms {
		if m.Key == key {
			return m.Value
		}
	}
	return nil
}
