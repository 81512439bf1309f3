package git

import (
	"context"
	"fmt"
	"strings"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/nativetool"
)

// Bounds of git_diff and git_show.
const (
	defaultPatchBytes = 32 << 10
	maxPatchBytesArg  = 1 << 20
)

// fileItemSchema is a changed file with its patch, in git_diff and git_show results.
const fileItemSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Relative to the workspace."},
    "oldPath": {"type": "string", "description": "The previous path of a renamed file."},
    "status": {"type": "string", "description": "added, modified, deleted or renamed."},
    "additions": {"type": "integer", "minimum": 0},
    "deletions": {"type": "integer", "minimum": 0},
    "binary": {"type": "boolean", "description": "Binary files have no patch and no line counts."},
    "patch": {"type": "string", "description": "Unified diff hunks (@@ … @@ and +/-/space lines)."},
    "truncated": {"type": "boolean", "description": "The patch was cut at maxBytes, or the file is too large to diff."}
  },
  "required": ["path", "status", "additions", "deletions", "binary", "truncated"],
  "additionalProperties": false
}`

const diffInput = `{
  "type": "object",
  "properties": {
    "from": {"type": "string", "description": "Old side: a commit hash or short hash, a branch or tag name, or HEAD~n (default HEAD)."},
    "to": {"type": "string", "description": "New side, a revision like from. Omitted: the worktree's tracked files (or the index with staged: true)."},
    "path": {"type": "string", "description": "Only files under this file or directory (relative to the workspace)."},
    "staged": {"type": "boolean", "description": "Compare from with the index (what would be committed) instead of the worktree."},
    "maxBytes": {"type": "integer", "minimum": 256, "maximum": 1048576, "description": "Patch bytes per file before it is cut (default 32768; 1 MiB in total per call)."}
  },
  "additionalProperties": false
}`

var diffOutput = `{
  "type": "object",
  "properties": {
    "from": {"type": "string", "description": "The old side's commit hash."},
    "to": {"type": "string", "description": "The new side's commit hash, or \"worktree\" or \"index\"."},
    "files": {"type": "array", "items": ` + fileItemSchema + `},
    "truncated": {"type": "boolean", "description": "Some files were left out or cut."}
  },
  "required": ["from", "to", "files", "truncated"],
  "additionalProperties": false
}`

type diffArgs struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Path     string `json:"path"`
	Staged   bool   `json:"staged"`
	MaxBytes *int   `json:"maxBytes"`
}

type diffDetails struct {
	From      string        `json:"from"`
	To        string        `json:"to"`
	Files     []*fileChange `json:"files"`
	Truncated bool          `json:"truncated"`
}

func diffTool(p *plugin) *api.Tool {
	return gitTool("git_diff", "Git diff",
		"Changes between two revisions, or between a revision (default HEAD) and the worktree or the index, as per-file patches with line counts; renames are detected and binary files flagged.",
		diffInput, diffOutput,
		p.diff, diffText)
}

func (p *plugin) diff(ctx context.Context, in *diffArgs) (*diffDetails, error) {
	const tool = "git_diff"
	perFile, err := nativetool.IntArg(tool, "maxBytes", in.MaxBytes, defaultPatchBytes, 256, maxPatchBytesArg)
	if err != nil {
		return nil, err
	}
	if in.Staged && in.To != "" {
		return nil, fmt.Errorf("%s: staged compares with the index; leave out to", tool)
	}
	r, prefix, err := p.openPath(tool, in.Path)
	if err != nil {
		return nil, err
	}
	defer r.close()
	from, err := r.resolve(tool, in.From)
	if err != nil {
		return nil, err
	}
	fromTree, err := commitTree(from)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", tool, err)
	}
	out := &diffDetails{From: from.Hash.String()}
	var pairs []versionPair
	if in.To != "" {
		to, err := r.resolve(tool, in.To)
		if err != nil {
			return nil, err
		}
		out.To = to.Hash.String()
		toTree, err := commitTree(to)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", tool, err)
		}
		changes, err := r.treeChanges(ctx, fromTree, toTree, prefix)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tool, err)
		}
		if pairs, err = r.versionPairs(changes); err != nil {
			return nil, fmt.Errorf("%s: %w", tool, err)
		}
	} else {
		out.To = "worktree"
		if in.Staged {
			out.To = "index"
		}
		if pairs, err = r.worktreePairs(ctx, fromTree, in.Staged, prefix); err != nil {
			return nil, fmt.Errorf("%s: %w", tool, err)
		}
	}
	d := r.newDiffer(ctx, p.opts, true, perFile)
	if out.Files, out.Truncated, err = d.files(ctx, pairs, p.opts.MaxFiles); err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	return out, nil
}

// files diffs each pair, listing at most max files; truncated reports files left out or cut.
// Pairs without any change (a worktree edit undone since it was staged) are left out.
func (d *differ) files(ctx context.Context, pairs []versionPair, max int) ([]*fileChange, bool, error) {
	files := []*fileChange{}
	truncated := false
	for _, pr := range pairs {
		if len(files) == max {
			truncated = true
			break
		}
		fc, err := d.file(ctx, pr.from, pr.to)
		if err != nil {
			return nil, false, err
		}
		if fc.Status == "" {
			continue
		}
		truncated = truncated || fc.Truncated
		files = append(files, &fc)
	}
	return files, truncated, nil
}

func diffText(d *diffDetails) string { return filesText(d.Files, d.Truncated) }

// filesText renders changed files as a stat listing followed by their patches.
func filesText(files []*fileChange, truncated bool) string {
	var b strings.Builder
	if len(files) == 0 {
		b.WriteString("(no changes)\n")
	}
	for _, f := range files {
		b.WriteString(statLine(&f.statFile, f.Truncated) + "\n")
	}
	for _, f := range files {
		if f.Patch == nil || *f.Patch == "" {
			continue
		}
		old := f.Path
		if f.OldPath != "" {
			old = f.OldPath
		}
		fmt.Fprintf(&b, "\n--- a/%s\n+++ b/%s\n%s", old, f.Path, *f.Patch)
		if f.Truncated {
			b.WriteString("… patch cut (raise maxBytes, or diff this path alone)\n")
		}
	}
	if truncated {
		b.WriteString("\n… truncated: some files were left out or cut\n")
	}
	return b.String()
}
