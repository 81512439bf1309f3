package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/codemode-go/codemode/internal/jsname"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Input schemas check a nested call's input before the tool runs, so a cell learns which field is
// wrong and why instead of getting whatever the tool makes of it. Unlike output contracts (O4),
// an input schema is advice, not a gate: MCP and client schemas are untrusted, so a schema that
// is too large, too deep or does not compile means "not validated", never "tool unusable", and
// a schema problem found while validating (a $ref cycle) lets the call through.

// Bounds on an input schema worth compiling.
const (
	// MaxInputSchemaBytes bounds the schemas compiled for validation. Real input schemas are a few
	// KB; compiling and checking happen on the VM goroutine, where a hostile 256 KB schema cost
	// 0.8 s to compile (4,300 patterns) or 0.2 s per check (a 3,000-link $ref chain).
	MaxInputSchemaBytes = 64 << 10
	// MaxValidatedInputBytes bounds the inputs checked: validation runs before the tool, on the
	// VM goroutine, and a hostile schema (uniqueItems over objects…) must not turn a large input
	// into seconds of CPU there (measured: 230 KB of objects under uniqueItems ≈ 0.2 s). Larger
	// inputs go to the tool unchecked.
	MaxValidatedInputBytes = 256 << 10
	maxSchemaDepth         = 64
	maxReported            = 4   // failures listed in one message
	maxFailureText         = 200 // bytes of one failure's text
)

// CompileInput compiles a tool's input schema, or returns nil when it cannot or should not be
// used for validation (empty, oversized, nested too deep, not JSON, invalid, or referring to
// documents outside itself). It never reads a file or the network.
func CompileInput(name string, raw []byte) (s *Schema) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || len(raw) > MaxInputSchemaBytes || tooDeep(raw, maxSchemaDepth) {
		return nil
	}
	defer func() {
		if recover() != nil {
			s = nil // a hostile schema must not take the process down: it is just not used
		}
	}()
	s, err := compile(name, "input", raw)
	if err != nil || !dryRunnable(s.doc) {
		return nil
	}
	return s
}

// tooDeep reports JSON nesting deeper than limit (strings are skipped).
func tooDeep(raw []byte, limit int) bool {
	depth := 0
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > limit {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// InputError lists what is wrong with an input: the model's own value, so the messages may quote
// it (bounded).
type InputError struct {
	Failures []string // "input.a: got string, want number"
	More     int      // failures not listed
}

func (e *InputError) Error() string {
	s := strings.Join(e.Failures, "; ")
	if e.More > 0 {
		s += fmt.Sprintf("; and %d more", e.More)
	}
	return s
}

var printer = message.NewPrinter(language.English)

// ValidateInput checks an input document. It returns nil when the input matches (or the schema
// cannot judge it, or the input is larger than MaxValidatedInputBytes), an *InputError when it
// does not, or an error when the input is not JSON.
func (s *Schema) ValidateInput(doc []byte) (verr error) {
	if len(doc) > MaxValidatedInputBytes {
		return nil
	}
	// encoding/json (numbers as float64, which the validator accepts) costs less than half of
	// jsonschema.UnmarshalJSON on the call path; an input number beyond 2^53 is judged rounded.
	var inst any
	if err := json.Unmarshal(doc, &inst); err != nil {
		return errors.New("the input is not JSON")
	}
	defer func() {
		if recover() != nil {
			verr = nil // the schema cannot judge this input
		}
	}()
	if !withinBudget(s.cost, inst, inputEvalBudget) {
		return nil // too costly to judge: advice, like an oversized schema
	}
	err := s.s.Validate(inst)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		return nil
	}
	out := &InputError{}
	for _, l := range leaves(ve) {
		if _, cycle := l.ErrorKind.(*kind.RefCycle); cycle {
			return nil // the schema's fault, not the input's
		}
		out.add(jsPath(l.InstanceLocation), l)
	}
	return out
}

// leaves are the failures a validation error is made of, in order: the errors without causes.
func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	var out []*jsonschema.ValidationError
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			out = append(out, v)
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}

// add reports one failing leaf at path (its text clipped), or counts it past maxReported.
func (e *InputError) add(path string, l *jsonschema.ValidationError) {
	if len(e.Failures) == maxReported {
		e.More++
		return
	}
	text := l.ErrorKind.LocalizedString(printer)
	if len(text) > maxFailureText {
		text = text[:maxFailureText] + "…"
	}
	e.Failures = append(e.Failures, path+": "+text)
}

// jsPath renders a JSON pointer's tokens as a JavaScript access path: input.items[0].name.
func jsPath(tokens []string) string {
	var b strings.Builder
	b.WriteString("input")
	for _, t := range tokens {
		if isIndex(t) && len(t) <= 60 {
			b.WriteString("[" + t + "]")
		} else {
			b.WriteString(jsname.Property(t, 60))
		}
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// CompileResult compiles the schema a cell gives for a child agent's structured result
// (agents.run's schema option): like an input schema it comes from hostile code, so it is
// bounded (size, nesting) and compiled offline, but unlike one it is a gate — the child's value
// must match it — so a schema that cannot be used is an error that says why.
func CompileResult(name string, raw []byte) (s *Schema, err error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return nil, errors.New("is empty")
	case len(raw) > MaxInputSchemaBytes:
		return nil, fmt.Errorf("is %d bytes (limit %d)", len(raw), MaxInputSchemaBytes)
	case tooDeep(raw, maxSchemaDepth):
		return nil, fmt.Errorf("is nested deeper than %d levels", maxSchemaDepth)
	}
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("cannot be compiled (%v)", r)
		}
	}()
	s, err = compile(name, "result", raw)
	if err != nil {
		msg := err.Error()
		if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "result schema of ") {
			msg = msg[i+2:]
		}
		return nil, fmt.Errorf("is not usable: %s", msg)
	}
	return s, nil
}

// ValidateValue checks a structured result against a schema from CompileResult: nil when it
// matches, an *InputError naming each failure (paths start at "value"), or an error when doc
// is not JSON. Unlike ValidateInput it never lets a value through unchecked: the caller bounds
// its size.
func (s *Schema) ValidateValue(doc []byte) (verr error) {
	var inst any
	if err := json.Unmarshal(doc, &inst); err != nil {
		return errors.New("the value is not JSON")
	}
	defer func() {
		if r := recover(); r != nil {
			verr = fmt.Errorf("the schema cannot judge the value (%v)", r)
		}
	}()
	err := s.s.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	out := &InputError{}
	for _, l := range leaves(ve) {
		out.add("value"+strings.TrimPrefix(jsPath(l.InstanceLocation), "input"), l)
	}
	return out
}
