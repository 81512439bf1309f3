package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func numbers(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func anyOfConsts(k int) string {
	parts := make([]string, k)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"const":%d}`, -i-1)
	}
	return `{"items":{"anyOf":[` + strings.Join(parts, ",") + `,{"type":"number"}]}}`
}

// fanOut is a schema whose references double the work per level: d0 → d1, d1; d1 → d2, d2; …
func fanOut(levels int) string {
	var defs []string
	for i := 0; i < levels; i++ {
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"string"}`, levels))
	return `{"$defs":{` + strings.Join(defs, ",") + `},"$ref":"#/$defs/d0"}`
}

// Validation costs the product of schema and value, and the validator cannot be interrupted: a
// value whose check would exceed the budget is not validated (input) or fails closed (output),
// instead of running for minutes (issue 18 item 9: why FuzzInputSchema timed out).
func TestValidationCostBounded(t *testing.T) {
	tests := []struct{ name, schema, value string }{
		{"4,000 anyOf branches over 40,000 items (8 minutes unbounded)", anyOfConsts(4000), numbers(40000)},
		{"references doubling over 40 levels", fanOut(40), `"x"`},
		{"a large enum over many items", `{"items":{"enum":[` + strings.TrimSuffix(strings.Repeat(`"a",`, 5000), ",") + `]}}`, numbers(20000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := CompileInput("t", []byte(tt.schema))
			if in == nil {
				t.Fatal("the schema did not compile")
			}
			if err := in.ValidateInput([]byte(tt.value)); err != nil {
				t.Fatalf("an input too costly to check was judged: %v", err)
			}
			out, err := Compile("t", []byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			if err := out.Check([]byte(tt.value)); !errors.Is(err, ErrTooCostly) {
				t.Fatalf("output check: %v, want ErrTooCostly", err)
			}
		})
	}
	// Within the budget, the same shapes are checked as before.
	in := CompileInput("t", []byte(anyOfConsts(20)))
	if err := in.ValidateInput([]byte(`[1,2,"x"]`)); err == nil || !strings.Contains(err.Error(), "input[2]") {
		t.Fatalf("small input: %v", err)
	}
	out, _ := Compile("t", []byte(fanOut(8)))
	if err := out.Check([]byte(`1`)); err == nil || errors.Is(err, ErrTooCostly) {
		t.Fatalf("small fan-out: %v", err)
	}
}

func TestDryRunnable(t *testing.T) {
	tests := []struct {
		schema string
		ok     bool
	}{
		{`{"type":"object","properties":{"id":{"type":"string"},"$id":{"type":"string"},"default":{"type":"string"}}}`, true},
		{`{"$id":"https://x.example/s","$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a"}`, true},
		{`{"$ref":"#"}`, true},
		{`{"default":{"$id":"not a schema"},"examples":[{"$anchor":"x"}],"enum":[{"$ref":"elsewhere"}]}`, true},
		{`{"$defs":{"a":{"$id":"https://x.example/a","$ref":"#/$defs/b","$defs":{"b":{}}}}}`, false},
		{`{"properties":{"default":{"$id":"https://x.example/a"}}}`, false},
		{`{"$defs":{"a":{"$anchor":"a"}},"$ref":"#a"}`, false},
		{`{"$dynamicRef":"#x"}`, false},
		{`{"$ref":"other.json#/x"}`, false},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"a":{"id":"a.json"}}}`, false},
	}
	for _, tt := range tests {
		var doc any
		if err := jsonUnmarshalString(tt.schema, &doc); err != nil {
			t.Fatal(err)
		}
		if got := dryRunnable(doc); got != tt.ok {
			t.Errorf("dryRunnable(%s) = %v, want %v", tt.schema, got, tt.ok)
		}
	}
}

func TestCompileBoundsOutputSchemas(t *testing.T) {
	deep := strings.Repeat(`{"items":`, 1000) + "true" + strings.Repeat("}", 1000) // minutes to compile
	for _, raw := range []string{deep, `{"$defs":{"a":{"$id":"https://x.example/a"}}}`, `{"description":"` + strings.Repeat("x", maxOutputSchemaBytes) + `"}`} {
		if _, err := Compile("t", []byte(raw)); err == nil {
			t.Errorf("compiled %.60s…", raw)
		}
	}
}

func jsonUnmarshalString(s string, v *any) error { return json.Unmarshal([]byte(s), v) }
