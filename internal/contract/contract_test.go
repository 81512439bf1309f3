package contract

import (
	"errors"
	"strings"
	"testing"
)

func TestCompileAndCheck(t *testing.T) { // O4
	s, err := Compile("native:core:t", []byte(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check([]byte(`{"id":"a"}`)); err != nil {
		t.Fatal(err)
	}
	err = s.Check([]byte(`{"id":"sk-SECRET","extra":"sk-SECRET"}`))
	var m *Mismatch
	if !errors.As(err, &m) || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("%v", err)
	}
	if err := s.Check([]byte(`{"id":1}`)); !errors.As(err, &m) || m.Path != "/id" || m.Keyword != "type" {
		t.Fatalf("%v", err)
	}
	if err := s.Check(nil); !errors.As(err, &m) {
		t.Fatalf("an absent value must not match an object schema: %v", err)
	}
	if err := s.Check([]byte(`{bad`)); err == nil || errors.As(err, &m) {
		t.Fatalf("%v", err)
	}
}

func TestCompileRefusesBadSchemas(t *testing.T) {
	for _, raw := range []string{
		`{bad`,
		`{"type": 42}`,
		`{"$ref": "file:///etc/passwd"}`,
		`{"$ref": "https://example.com/schema.json"}`,
	} {
		if _, err := Compile("x", []byte(raw)); err == nil {
			t.Errorf("compiled %s", raw)
		}
	}
}
