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
	"context"
	"errors"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/nativetool"
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

// coreSpec describes a built-in tool: owned by "core", its input bounded by maxInputBytes.
func coreSpec(name, label, description, input, output string, readOnly bool) nativetool.Spec {
	return nativetool.Spec{
		Name: name, Label: label, Description: description, Input: input, Output: output,
		Owner: api.CoreOwner, ReadOnly: readOnly, MaxInputBytes: maxInputBytes,
	}
}

// typedTool builds a built-in tool whose Execute decodes the input strictly into In
// (nativetool.Decode, errors prefixed with the tool's name) and calls run with it.
func typedTool[In any](name, label, description, input, output string, readOnly bool, run func(ctx context.Context, in *In) (*api.Result, error)) *api.Tool {
	return nativetool.Typed(coreSpec(name, label, description, input, output, readOnly), run)
}
