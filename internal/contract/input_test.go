package contract

import (
	"strings"
	"testing"
)

// TestValidateInput is issue 14 item 4: a nested call's input that fails the tool's input schema
// says which field and why.
func TestValidateInput(t *testing.T) {
	const obj = `{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer","minimum":1},
		"mode":{"enum":["r","w"]},"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}},
		"odd key":{"type":"number"}},"required":["path"],"additionalProperties":false}`
	tests := []struct {
		name, schema, input string
		want                []string // failures, in order; nil means valid
		more                int
	}{
		{"valid", obj, `{"path":"a","offset":2}`, nil, 0},
		{"missing required", obj, `{}`, []string{"input: missing property 'path'"}, 0},
		{"wrong type", obj, `{"path":1}`, []string{"input.path: got number, want string"}, 0},
		{"minimum", obj, `{"path":"a","offset":0}`, []string{"input.offset: minimum: got 0, want 1"}, 0},
		{"enum", obj, `{"path":"a","mode":"x"}`, []string{"input.mode: value must be one of 'r', 'w'"}, 0},
		{"nested array item", obj, `{"path":"a","items":[{"id":"x"},{}]}`, []string{"input.items[1]: missing property 'id'"}, 0},
		{"key that is not an identifier", obj, `{"path":"a","odd key":"x"}`, []string{`input["odd key"]: got string, want number`}, 0},
		{"additional property", obj, `{"path":"a","extra":1}`, []string{"input: additional properties 'extra' not allowed"}, 0},
		{"several, bounded", obj, `{"path":1,"offset":0,"mode":"x","items":[{}],"odd key":"y","extra":1}`, nil, 2},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"x":{"type":"array","items":{"type":"string"}}}}`,
			`{"x":[1]}`, []string{"input.x[0]: got number, want string"}, 0},
		{"formats are not asserted", `{"type":"object","properties":{"u":{"type":"string","format":"uri"}}}`, `{"u":"not a uri"}`, nil, 0},
		{"$ref cycle lets the call through", `{"$ref":"#"}`, `{}`, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := CompileInput("native:core:t", []byte(tt.schema))
			if s == nil {
				t.Fatal("schema did not compile")
			}
			err := s.ValidateInput([]byte(tt.input))
			if tt.want == nil && tt.more == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			ie, ok := err.(*InputError)
			if !ok {
				t.Fatalf("error %v (%T), want an *InputError", err, err)
			}
			if tt.more > 0 {
				if len(ie.Failures) != maxReported || ie.More != tt.more || !strings.HasSuffix(ie.Error(), "and 2 more") {
					t.Fatalf("failures %q more %d", ie.Failures, ie.More)
				}
				return
			}
			if strings.Join(ie.Failures, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("failures %q, want %q", ie.Failures, tt.want)
			}
		})
	}
}

// TestCompileInputUntrusted: an input schema that cannot or should not be used means "not
// validated" (nil), never an error that makes the tool unusable, and nothing is fetched.
func TestCompileInputUntrusted(t *testing.T) {
	deep := strings.Repeat(`{"items":`, 100) + `{}` + strings.Repeat(`}`, 100)
	tests := map[string]string{
		"empty":              ``,
		"not JSON":           `{"type":`,
		"invalid":            `{"type":42}`,
		"external ref":       `{"$ref":"https://example.com/schema.json"}`,
		"file ref":           `{"$ref":"file:///etc/passwd"}`,
		"unknown metaschema": `{"$schema":"http://example.com/meta","type":"object"}`,
		"too deep":           deep,
		"too large":          `{"description":"` + strings.Repeat("x", MaxInputSchemaBytes) + `"}`,
	}
	for name, raw := range tests {
		t.Run(name, func(t *testing.T) {
			if s := CompileInput("mcp:x:y", []byte(raw)); s != nil {
				t.Fatal("compiled")
			}
		})
	}
	if tooDeep([]byte(`{"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"]"}`), 3) {
		t.Fatal("brackets inside strings count as nesting")
	}
}

// FuzzInputSchema: compiling any schema and validating any input never panics or hangs.
func FuzzInputSchema(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"number"}},"required":["a"]}`, `{"a":"x"}`)
	f.Add(`{"$ref":"#"}`, `{}`)
	f.Add(`{"$defs":{"x":{"$ref":"#/$defs/x"}},"$ref":"#/$defs/x"}`, `1`)
	f.Add(`{"pattern":"(a+)+$"}`, `"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"`)
	f.Add(`{"uniqueItems":true}`, `[1,1.0,"1"]`)
	f.Fuzz(func(t *testing.T, schema, input string) {
		s := CompileInput("mcp:f:z", []byte(schema))
		if s == nil {
			return
		}
		_ = s.ValidateInput([]byte(input))
	})
}

// TestLargeInputsNotValidated: past MaxValidatedInputBytes the input goes to the tool unchecked.
func TestLargeInputsNotValidated(t *testing.T) {
	s := CompileInput("t", []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`))
	big := `{"a":1,"pad":"` + strings.Repeat("x", MaxValidatedInputBytes) + `"}`
	if err := s.ValidateInput([]byte(big)); err != nil {
		t.Fatalf("validated a %d-byte input: %v", len(big), err)
	}
	if err := s.ValidateInput([]byte(`{"a":1}`)); err == nil {
		t.Fatal("a small invalid input passed")
	}
}
