// Package builtin implements the runtime's built-in native tools: file access inside the
// configured workspace (read, write, edit, apply_patch, ls, find, grep), an HTTP fetch tool
// (web_fetch) and an optional shell tool (exec).
//
// Every tool is an *api.Tool owned by "core" (catalog id native:core:<name>) and declares an
// OutputSchema for its `details` value (docs/semantics.md O1–O6). The schemas are closed at every
// object layer, so the catalog renders them as compact hints, and a test validates real details
// against them.
//
// Tool inputs come from model-written code and are treated as hostile:
//
//   - Inputs are decoded strictly: unknown fields (matched case-sensitively), wrong types and
//     trailing data are errors naming the field.
//   - Every path is resolved against the workspace root. Relative paths that climb out with
//     "..", absolute paths outside the root, and paths whose existing prefix resolves through a
//     symlink to a place outside the root are refused. File system access then goes through an
//     os.Root opened on the resolved root, which refuses escapes by construction, so a symlink
//     swapped in between the check and the access cannot lead outside either.
//   - Everything is bounded: bytes read and returned, lines, matches, directory entries
//     visited, patch and diff sizes, process output and run time.
//   - Files are replaced atomically (a temporary file in the same directory, then a rename), so
//     a failed or cancelled write never leaves a half-written file. apply_patch validates every
//     hunk of every file in memory before it writes anything.
//   - web_fetch refuses loopback, private, link-local, unspecified, multicast and other
//     special-purpose addresses at connect time, on the resolved IP, unless the configuration
//     allows private networks; redirects and DNS rebinding are covered by the same check.
//     It uses no proxy, speaks only http and https, and follows at most 5 redirects.
//   - exec runs `sh -c` in its own process group, which is killed on timeout or cancellation.
//     It is a real shell: when it is enabled, the workspace confinement of the file tools is a
//     convenience for the model, not a security boundary.
package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
)

// Limits shared by several tools.
const (
	maxInputBytes = 16 << 20 // one tool call's JSON input
	maxReadBytes  = 1 << 20  // content returned by one read
	maxFileBytes  = 8 << 20  // files edit and apply_patch rewrite, and write's content
	maxDiffBytes  = 64 << 10 // the diff edit returns
	binarySniff   = 8 << 10  // bytes inspected for NUL to call a file binary
)

// Tools returns the built-in tools enabled by cfg, in a stable order: read, write, edit,
// apply_patch, ls, find, grep, then web_fetch (when cfg.Tools.WebFetch.Enabled) and exec (when
// cfg.Tools.Exec.Enabled). The workspace (cfg.Workspace; "" is the process's current directory,
// a relative path is relative to it) must be an existing directory.
func Tools(cfg *config.Config) ([]*api.Tool, error) {
	if cfg == nil {
		return nil, errors.New("builtin: nil config")
	}
	ws, err := newWorkspace(cfg.Workspace)
	if err != nil {
		return nil, err
	}
	tools := []*api.Tool{
		readTool(ws),
		writeTool(ws),
		editTool(ws),
		applyPatchTool(ws),
		lsTool(ws),
		findTool(ws),
		grepTool(ws),
	}
	if cfg.Tools.WebFetch.Enabled {
		tools = append(tools, webFetchTool(cfg.Tools.WebFetch, nil))
	}
	if cfg.Tools.Exec.Enabled {
		tools = append(tools, execTool(ws))
	}
	return tools, nil
}

// newTool fills the fields every built-in tool shares.
func newTool(name, label, description, input, output string, readOnly bool) *api.Tool {
	return &api.Tool{
		Name:         name,
		Label:        label,
		Description:  description,
		InputSchema:  compactSchema(input),
		OutputSchema: compactSchema(output),
		Source:       api.SourceNative,
		Owner:        api.CoreOwner,
		ReadOnly:     readOnly,
	}
}

// typedTool builds a tool whose Execute decodes the input into In (decodeInput's strict rules,
// errors prefixed with the tool's name) and calls run with it.
func typedTool[In any](name, label, description, input, output string, readOnly bool, run func(ctx context.Context, in *In) (*api.Result, error)) *api.Tool {
	t := newTool(name, label, description, input, output, readOnly)
	t.Execute = func(ctx context.Context, call *api.Call) (*api.Result, error) {
		var in In
		if err := decodeInput(name, call.Input, &in); err != nil {
			return nil, err
		}
		return run(ctx, &in)
	}
	return t
}

// compactSchema turns a schema literal into compact JSON, keeping key order. The literals are
// constants checked by tests, so a malformed one is a programming error.
func compactSchema(s string) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		panic("builtin: invalid schema literal: " + err.Error())
	}
	return b.Bytes()
}

// decodeInput decodes a tool's JSON input object into v (a pointer to a struct whose fields all
// carry json tags). Absent or null input counts as {}. Keys must match the tags exactly; any
// other key, a wrong type or trailing data is an error that names the field.
func decodeInput(tool string, raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) > maxInputBytes {
		return fmt.Errorf("%s: input is %d bytes (limit %d)", tool, len(raw), maxInputBytes)
	}
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return fmt.Errorf("%s: input must be a JSON object", tool)
	}
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

// result builds a tool result: one text block and the JSON details. HTML characters are not
// escaped, so file content keeps its size (and the result stays well inside the dispatcher's
// 8 MiB bound).
func result(text string, details any) (*api.Result, error) {
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

// intArg validates an optional integer argument against [lo, hi] and returns it or def.
func intArg(tool, name string, v *int, def, lo, hi int) (int, error) {
	if v == nil {
		return def, nil
	}
	if *v < lo || *v > hi {
		return 0, fmt.Errorf("%s: %s must be between %d and %d, not %d", tool, name, lo, hi, *v)
	}
	return *v, nil
}
