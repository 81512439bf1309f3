package schemahint

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParseKeepsOrder(t *testing.T) {
	src := `{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"number"},"mid":{"enum":["b","a"]}},"required":["mid"],"x-extra":[1,2.50,{"b":null,"a":true}]}`
	s := mustParse(t, src)
	got, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != src {
		t.Errorf("round trip\n got: %s\nwant: %s", got, src)
	}
	if h := InputHint(s, 100); h != `{ mid: "b" | "a"; zeta?: string; alpha?: number }` {
		t.Errorf("hint %s", h)
	}
}

func TestParseCatalogRoundTrip(t *testing.T) {
	for _, c := range loadCatalog(t) {
		s, err := Parse(c.InputSchema)
		if err != nil {
			t.Fatalf("%s/%s: %v", c.Server, c.Name, err)
		}
		raw, _ := s.MarshalJSON()
		var want bytes.Buffer
		if err := json.Compact(&want, c.InputSchema); err != nil {
			t.Fatal(err)
		}
		// encoding/json escapes <, > and & in strings; compare decoded values.
		var a, b any
		_ = json.Unmarshal(raw, &a)
		_ = json.Unmarshal(want.Bytes(), &b)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Fatalf("%s/%s: round trip changed the schema", c.Server, c.Name)
		}
		// Key order is kept: the raw text matches modulo escaping.
		if len(raw) < want.Len()-64 {
			t.Fatalf("%s/%s: round trip lost content", c.Server, c.Name)
		}
	}
}

func TestParseErrors(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	okDeep := `{"a":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}`
	tests := []struct {
		name    string
		src     string
		wantErr error
	}{
		{"empty", ``, nil},
		{"invalid", `{"type":`, nil},
		{"trailing", `{} {}`, nil},
		{"trailing garbage", `{}x`, nil},
		{"string", `"string"`, nil},
		{"number", `1`, nil},
		{"null", `null`, nil},
		{"array", `[]`, nil},
		{"too deep", `{"a":` + deep + `}`, ErrTooDeep},
		{"too large", `{"description":"` + strings.Repeat("x", MaxInputBytes) + `"}`, ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.src))
			if err == nil {
				t.Fatalf("Parse(%.40s) = %v, want an error", tc.src, s)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
		})
	}
	if _, err := Parse([]byte(okDeep)); err != nil {
		t.Errorf("depth %d rejected: %v", MaxDepth, err)
	}
	if _, err := Parse([]byte(" true ")); err != nil {
		t.Errorf("boolean schema rejected: %v", err)
	}
}

func TestParseInvalidUTF8(t *testing.T) {
	s := mustParse(t, "{\"type\":\"object\",\"properties\":{\"a\xffb\":{\"enum\":[\"x\xfe\"]}}}")
	if h := InputHint(s, 100); h != `{ "a\ufffdb"?: "x\ufffd" }` && h != "{ \"a\uFFFDb\"?: \"x\uFFFD\" }" {
		t.Errorf("hint %q", h)
	}
}

func TestFromValue(t *testing.T) {
	var v map[string]any
	src := `{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer","minimum":1}},"required":["zeta"]}`
	if err := json.Unmarshal([]byte(src), &v); err != nil {
		t.Fatal(err)
	}
	s, err := FromValue(v)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := s.MarshalJSON()
	if want := `{"properties":{"alpha":{"minimum":1,"type":"integer"},"zeta":{"type":"string"}},"required":["zeta"],"type":"object"}`; string(raw) != want {
		t.Errorf("sorted keys\n got: %s\nwant: %s", raw, want)
	}
	if h := InputHint(s, 100); h != `{ zeta: string; alpha?: number /* int >= 1 */ }` {
		t.Errorf("hint %s", h)
	}

	// Raw bytes keep order.
	s2, err := FromValue(json.RawMessage(src))
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := s2.MarshalJSON(); string(raw) != src {
		t.Errorf("RawMessage order lost: %s", raw)
	}
	if s3, err := FromValue(s2); err != nil || s3 != s2 {
		t.Errorf("*Schema not passed through")
	}

	// Other Go types go through encoding/json (struct field order is kept).
	type prop struct {
		Type string `json:"type"`
	}
	type schema struct {
		Type       string          `json:"type"`
		Properties map[string]prop `json:"properties"`
		Required   []string        `json:"required,omitempty"`
	}
	s4, err := FromValue(schema{Type: "object", Properties: map[string]prop{"b": {"string"}, "a": {"number"}}, Required: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	if h := InputHint(s4, 100); h != `{ b: string; a?: number }` {
		t.Errorf("struct hint %s", h)
	}
	// Mixed Go values.
	s5, err := FromValue(map[string]any{"type": "object", "properties": map[string]any{
		"n": map[string]any{"type": "integer", "maximum": 10, "minimum": json.Number("1")},
		"e": map[string]any{"enum": []any{"x", 2.5, true, nil}},
		"p": &prop{Type: "boolean"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if h := InputHint(s5, 100); h != `{ e?: "x" | 2.5 | true | null; n?: number /* int 1..10 */; p?: boolean }` {
		t.Errorf("mixed hint %s", h)
	}

	for name, bad := range map[string]any{
		"nan":       map[string]any{"minimum": math.NaN()},
		"not json":  map[string]any{"x": make(chan int)},
		"string":    "string",
		"nil":       nil,
		"too large": map[string]any{"description": strings.Repeat("x", MaxInputBytes)},
		"bad num":   map[string]any{"minimum": json.Number("1x")},
	} {
		if _, err := FromValue(bad); err == nil {
			t.Errorf("FromValue(%s) succeeded", name)
		}
	}
	deep := any("leaf")
	for i := 0; i < MaxDepth+2; i++ {
		deep = map[string]any{"a": deep}
	}
	if _, err := FromValue(deep); !errors.Is(err, ErrTooDeep) {
		t.Errorf("deep map: %v", err)
	}
	deepArr := any(1)
	for i := 0; i < MaxDepth+2; i++ {
		deepArr = []any{deepArr}
	}
	if _, err := FromValue(map[string]any{"enum": deepArr}); !errors.Is(err, ErrTooDeep) {
		t.Errorf("deep array: %v", err)
	}
	wide := map[string]any{}
	for i := 0; i < 200000; i++ {
		wide[strings.Repeat("k", 8)+string(rune('a'+i%26))+strings.Repeat("x", i%7)+itoa36(i)] = true
	}
	if _, err := FromValue(map[string]any{"properties": wide}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("wide map: %v", err)
	}
}

func itoa36(i int) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 36 {
		b = append(b, digits[i%36])
	}
	return string(b)
}

func TestMarshalNil(t *testing.T) {
	var s *Schema
	if raw, err := s.MarshalJSON(); err != nil || string(raw) != "null" {
		t.Errorf("nil MarshalJSON = %s, %v", raw, err)
	}
}
