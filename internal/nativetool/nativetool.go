// Package nativetool is the plumbing shared by the tools this module implements in Go — the
// built-in tools (internal/builtin) and the bundled plugins (internal/plugins/…): schema
// literals, strict decoding of the input a cell wrote, bounded integer arguments, and results
// made of one text block and JSON details.
//
// A cell's input is hostile. Decode accepts exactly the JSON object the input struct
// describes and says which field is wrong, so a model corrects its call from the message alone,
// and a tool's code only ever sees well-typed values.
package nativetool

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/codemode-go/codemode/api"
)

// Spec describes a native tool.
type Spec struct {
	Name, Label, Description string
	// Input and Output are JSON Schema literals: constants of the tool's package, compacted
	// with their key order kept (see Schema).
	Input, Output string
	// Owner is api.CoreOwner for built-in tools, the plugin id for a plugin's tools.
	Owner    string
	ReadOnly bool
	// MaxInputBytes bounds the JSON input of one call (Decode).
	MaxInputBytes int
}

// tool is the api.Tool of s, without Execute.
func (s Spec) tool() *api.Tool {
	return &api.Tool{
		Name:         s.Name,
		Label:        s.Label,
		Description:  s.Description,
		InputSchema:  Schema(s.Input),
		OutputSchema: Schema(s.Output),
		Source:       api.SourceNative,
		Owner:        s.Owner,
		ReadOnly:     s.ReadOnly,
	}
}

// Typed returns the tool s describes. Its Execute decodes the call's input into a new In with
// Decode (errors name the tool) and calls run with it.
func Typed[In any](s Spec, run func(ctx context.Context, in *In) (*api.Result, error)) *api.Tool {
	t := s.tool()
	t.Execute = func(ctx context.Context, call *api.Call) (*api.Result, error) {
		var in In
		if err := Decode(s.Name, call.Input, &in, s.MaxInputBytes); err != nil {
			return nil, err
		}
		return run(ctx, &in)
	}
	return t
}

// Rendered is Typed for the common shape of a tool: run computes the details and text renders
// the result's text block from them.
func Rendered[In, Out any](s Spec, run func(ctx context.Context, in *In) (Out, error), text func(Out) string) *api.Tool {
	return Typed(s, func(ctx context.Context, in *In) (*api.Result, error) {
		d, err := run(ctx, in)
		if err != nil {
			return nil, err
		}
		return Result(text(d), d)
	})
}

// Schema turns a schema literal into compact JSON, keeping key order (the catalog renders the
// schema as written). The literals are constants checked by their package's tests, so a
// malformed one is a programming error and panics.
func Schema(s string) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		panic("nativetool: invalid schema literal: " + err.Error())
	}
	return b.Bytes()
}

// Result builds a tool result: one text block and the JSON details. HTML characters are not
// escaped, so file content and patches keep their size (and a result stays well inside the
// dispatcher's bound).
func Result(text string, details any) (*api.Result, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(details); err != nil {
		return nil, err
	}
	return &api.Result{
		Content: []api.ContentBlock{{Type: "text", Text: text}},
		Details: bytes.TrimRight(b.Bytes(), "\n"),
	}, nil
}
