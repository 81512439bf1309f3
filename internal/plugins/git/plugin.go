// Package git is the `git` plugin: read-only tools over the repository that holds the workspace
// (git_status, git_log, git_diff, git_show, git_blame, git_branches), catalogued as
// native:git:<tool>, and the table of the guest's `Git` namespace that maps onto them.
//
// Everything is pure Go on go-git; no git binary runs, so no repository configuration (hooks,
// filters, pagers, external diff drivers) can execute anything.
//
// The repository, its worktree and every tool result are treated as hostile:
//
//   - The repository is located once (the workspace or the nearest parent holding .git) and its
//     layout — worktree root, git directory, common directory — is fixed from then on, so a
//     `.git` file written into the workspace later cannot point the tools at another repository.
//     Objects are read through go-git's filesystem storage; worktree files through a billy
//     file system bound to the worktree root, which does not follow symlinks out of it.
//   - Every `path` input is relative to the workspace (or absolute inside it). `..` escapes,
//     absolute paths elsewhere and paths whose existing prefix is a symlink leading out of the
//     workspace are refused. When the workspace is a subdirectory of the repository, results are
//     confined to that subdirectory and paths are shown relative to the workspace.
//   - Everything is bounded: commits listed and scanned, files per diff, bytes per patch and in
//     total, blob sizes read into memory, diff time per file, blame lines and history depth.
//     Blobs above the bounds are reported (with `truncated`) instead of read, binary files are
//     flagged instead of dumped, and large objects are streamed by go-git instead of cached.
//   - Long walks (history, diffs, blame, status) check the call's context between steps.
package git

import (
	"context"
	"errors"
	"sort"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/nativetool"
)

// PluginID is the plugin's id: its tools are catalogued as native:git:<name>.
const PluginID = "git"

// Options configures the plugin. Zero values mean the defaults documented on each field.
type Options struct {
	// Workspace is the directory the tools serve: the repository's worktree or a directory
	// inside it. "" means the process's current directory.
	Workspace string

	// MaxTotalPatchBytes bounds the patch text of one git_diff or git_show result (default
	// 1 MiB); files past it are listed without patches and marked truncated.
	MaxTotalPatchBytes int
	// MaxBlobBytes is the largest file version read into memory for a patch, a stat or blame
	// (default 4 MiB). Larger files are listed with truncated: true and no line counts.
	MaxBlobBytes int64
	// MaxFiles bounds the files listed by one diff, show or log entry (default 1000 for diffs,
	// 300 per log entry) and the entries of each git_status list.
	MaxFiles int
}

func (o Options) withDefaults() Options {
	if o.MaxTotalPatchBytes <= 0 {
		o.MaxTotalPatchBytes = 1 << 20
	}
	if o.MaxBlobBytes <= 0 {
		o.MaxBlobBytes = 4 << 20
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = 1000
	}
	return o
}

// Plugin returns the git plugin. Start locates the repository (an error only when the
// workspace itself is unusable); when the workspace is not inside a repository the plugin
// still starts and every tool answers with an error saying so.
func Plugin(opts Options) api.Plugin {
	p := &plugin{opts: opts.withDefaults()}
	return api.Plugin{
		ID: PluginID,
		Tools: []*api.Tool{
			statusTool(p),
			logTool(p),
			diffTool(p),
			showTool(p),
			blameTool(p),
			branchesTool(p),
		},
		Namespaces: []api.Namespace{namespace()},
		Start: func(ctx context.Context) error {
			_, err := p.locate()
			var nr *notRepoError
			if errors.As(err, &nr) {
				return nil
			}
			return err
		},
	}
}

// Namespace describes the guest's `Git` namespace for the code that registers plugin
// namespaces: each method maps, with the default input mapper (the first argument is the tool
// input), onto one of this plugin's tools.
var Namespace = struct {
	GlobalName, Description, Prompt string
	Methods                         map[string]string // method → tool name
}{
	GlobalName: "Git",
	Description: "Read-only access to the git repository of the workspace: status, history, " +
		"diffs, commits, blame and branches. Paths are relative to the workspace; revisions " +
		"accept hashes, short hashes, branch and tag names and HEAD~n.",
	Prompt: "Git (read-only): `await Git.status({})` → staged/unstaged/untracked; " +
		"`await Git.log({limit: 50, stat: true, path?})` → commits with per-file additions/deletions; " +
		"`await Git.diff({from: \"HEAD~3\", to?, path?})` → per-file patches (no `to`: the worktree); " +
		"`await Git.show({rev: \"HEAD\"})` → one commit with its patch; " +
		"`await Git.blame({path, rev?})` → who last changed each line; `await Git.branches({})`. " +
		"Results are bounded: check `truncated`.",
	Methods: map[string]string{
		"status":   "git_status",
		"log":      "git_log",
		"diff":     "git_diff",
		"show":     "git_show",
		"blame":    "git_blame",
		"branches": "git_branches",
	},
}

// namespace is the `Git` namespace over the plugin's tools (docs/semantics.md, §10): Git.log({limit: 10}) is
// tools.git_log({limit: 10}) with the plugin's own name for it.
func namespace() api.Namespace {
	required := make([]string, 0, len(Namespace.Methods))
	for _, tool := range Namespace.Methods {
		required = append(required, tool)
	}
	sort.Strings(required)
	return api.Namespace{
		ID: "git", GlobalName: Namespace.GlobalName, Description: Namespace.Description, Prompt: Namespace.Prompt,
		RequiredToolNames: required,
		CreateScope: func(context.Context, api.NamespaceContext) (any, error) {
			scope := make(map[string]any, len(Namespace.Methods))
			for method, tool := range Namespace.Methods {
				scope[method] = api.NamespaceTool(tool, nil)
			}
			return scope, nil
		},
	}
}

// maxInputBytes bounds one call's JSON input: the tools take a few short strings and numbers.
const maxInputBytes = 64 << 10

// gitTool builds a read-only tool of the plugin: Execute decodes the input strictly into In
// (nativetool.Decode), run computes the details and text renders the text block.
func gitTool[In, Out any](name, label, description, input, output string, run func(ctx context.Context, in *In) (Out, error), text func(Out) string) *api.Tool {
	return nativetool.Rendered(nativetool.Spec{
		Name: name, Label: label, Description: description, Input: input, Output: output,
		Owner: PluginID, ReadOnly: true, MaxInputBytes: maxInputBytes,
	}, run, text)
}
