// Package contract compiles declared output schemas and checks values against them (O1–O5). It
// is shared by native tools (whose `details` must match their outputSchema) and MCP tools (whose
// structuredContent must match the schema the server declared). Compilation is offline — a
// schema's $ref can never make us read a file or fetch a URL — and a mismatch is reported by
// location and keyword only, never by value: the value may be a secret (O4).
package contract

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is a compiled JSON Schema.
type Schema struct {
	s    *jsonschema.Schema
	doc  any       // the document
	cost *costNode // its graph for the dry run that bounds a validation's cost (cost.go)
}

// maxOutputSchemaBytes bounds an output schema (an MCP server's schemas are at most 256 KiB).
const maxOutputSchemaBytes = 256 << 10

// refusingLoader keeps compilation offline.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema reference %q is not allowed", url)
}

// Compile compiles an output schema. name identifies it in errors (a tool id). A schema over
// 256 KiB or nested deeper than 64 levels is refused (compiling costs grow with the cube of the
// depth: 1,000 levels of `items` took minutes), and so is one whose references the cost bound
// cannot follow (cost.go): an output contract that cannot be checked within bounds is not one.
func Compile(name string, raw []byte) (*Schema, error) {
	switch {
	case len(raw) > maxOutputSchemaBytes:
		return nil, fmt.Errorf("output schema of %s is %d bytes (limit %d)", name, len(raw), maxOutputSchemaBytes)
	case tooDeep(raw, maxSchemaDepth):
		return nil, fmt.Errorf("output schema of %s is nested deeper than %d levels", name, maxSchemaDepth)
	}
	s, err := compile(name, "output", raw)
	if err == nil && !dryRunnable(s.doc) {
		return nil, fmt.Errorf("output schema of %s is not supported: it uses $id below the root, anchors, dynamic references or references outside itself", name)
	}
	return s, err
}

func compile(name, what string, raw []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s schema of %s is not JSON: %v", what, name, err)
	}
	comp := jsonschema.NewCompiler()
	comp.UseLoader(refusingLoader{})
	loc := "mem:///" + strings.NewReplacer(":", "/", " ", "_").Replace(name) + "/" + what + "Schema.json"
	if err := comp.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("%s schema of %s is invalid: %s", what, name, schemaProblem(err))
	}
	s, err := comp.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("%s schema of %s is invalid: %s", what, name, schemaProblem(err))
	}
	return &Schema{s: s, doc: doc, cost: costGraph(doc)}, nil
}

// schemaProblem says what is wrong with a schema in a line a person reads: for a schema that
// fails the metaschema, the first few places and reasons ("at /properties/n/minimum: got
// string, want number") rather than the validator's whole tree.
func schemaProblem(err error) string {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if !errors.As(err, &sve) || !errors.As(sve.Err, &ve) {
		return err.Error()
	}
	const most = 3
	var parts []string
	more := 0
	for _, l := range leaves(ve) {
		if len(parts) == most {
			more++
			continue
		}
		at := "/" + strings.Join(l.InstanceLocation, "/")
		parts = append(parts, "at "+at+": "+l.ErrorKind.LocalizedString(printer))
	}
	out := "not a valid JSON Schema (" + strings.Join(parts, "; ")
	if more > 0 {
		out += fmt.Sprintf("; %d more", more)
	}
	return out + ")"
}

// ErrTooCostly: checking the value against the schema would take more than the evaluation
// budget (cost.go).
var ErrTooCostly = errors.New("the value is too large for its schema to be checked within bounds")

// Mismatch says where a value does not match its schema, without the value.
type Mismatch struct {
	Path    string // JSON pointer into the value, e.g. /items/0/id
	Keyword string // the failing schema keyword path, e.g. properties/id/type
}

func (m *Mismatch) Error() string {
	if m.Keyword == "" {
		return "mismatch at " + m.Path
	}
	return "mismatch at " + m.Path + " (keyword " + m.Keyword + ")"
}

// Check validates a JSON document (empty means null). It returns a *Mismatch, or an error when
// the document is not JSON.
func (s *Schema) Check(doc []byte) error {
	if len(bytes.TrimSpace(doc)) == 0 {
		doc = []byte("null")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return errors.New("the value is not JSON")
	}
	if !withinBudget(s.cost, inst, outputEvalBudget) {
		return ErrTooCostly
	}
	err = s.s.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &Mismatch{Path: "/"}
	}
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	return &Mismatch{Path: "/" + strings.Join(leaf.InstanceLocation, "/"), Keyword: strings.Join(leaf.ErrorKind.KeywordPath(), "/")}
}
