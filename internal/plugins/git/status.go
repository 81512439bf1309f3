package git

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/codemode-go/codemode/api"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/merkletrie"
)

const statusInput = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Only report files under this file or directory (relative to the workspace)."}
  },
  "additionalProperties": false
}`

const statusOutput = `{
  "type": "object",
  "properties": {
    "branch": {"type": "string", "description": "The checked-out branch; empty when HEAD is detached."},
    "head": {"type": "string", "description": "HEAD's commit hash; empty before the first commit."},
    "staged": {"type": "array", "description": "Changes in the index, against HEAD.", "items": {"type": "object", "properties": {"path": {"type": "string"}, "status": {"enum": ["added", "modified", "deleted"]}}, "required": ["path", "status"], "additionalProperties": false}},
    "unstaged": {"type": "array", "description": "Changes of tracked files in the worktree, against the index.", "items": {"type": "object", "properties": {"path": {"type": "string"}, "status": {"enum": ["added", "modified", "deleted"]}}, "required": ["path", "status"], "additionalProperties": false}},
    "untracked": {"type": "array", "description": "Files not tracked and not ignored.", "items": {"type": "string"}},
    "truncated": {"type": "boolean", "description": "A list was cut (1000 entries each)."}
  },
  "required": ["branch", "head", "staged", "unstaged", "untracked", "truncated"],
  "additionalProperties": false
}`

type statusArgs struct {
	Path string `json:"path"`
}

type statusChange struct {
	Path   string `json:"path"`
	Status string `json:"status"`
}

type statusDetails struct {
	Branch    string          `json:"branch"`
	Head      string          `json:"head"`
	Staged    []*statusChange `json:"staged"`
	Unstaged  []*statusChange `json:"unstaged"`
	Untracked []string        `json:"untracked"`
	Truncated bool            `json:"truncated"`
}

func statusTool(p *plugin) *api.Tool {
	return gitTool("git_status", "Git status",
		"The checked-out branch and HEAD, and the files that are staged, changed in the worktree or untracked (ignored files are left out).",
		statusInput, statusOutput,
		p.status, statusText)
}

func (p *plugin) status(ctx context.Context, in *statusArgs) (*statusDetails, error) {
	const tool = "git_status"
	r, prefix, err := p.openPath(tool, in.Path)
	if err != nil {
		return nil, err
	}
	defer r.close()
	out := &statusDetails{Staged: []*statusChange{}, Unstaged: []*statusChange{}, Untracked: []string{}}
	var tree *object.Tree
	head, err := r.r.Head()
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		// Unborn branch: everything in the index is staged as added.
		if ref, err := r.r.Storer.Reference(plumbing.HEAD); err == nil && ref.Type() == plumbing.SymbolicReference {
			out.Branch = ref.Target().Short()
		}
	case err != nil:
		return nil, fmt.Errorf("%s: reading HEAD: %v", tool, err)
	default:
		out.Head = head.Hash().String()
		if head.Name().IsBranch() {
			out.Branch = head.Name().Short()
		}
		c, err := r.r.CommitObject(head.Hash())
		if err != nil {
			return nil, fmt.Errorf("%s: HEAD commit: %v", tool, err)
		}
		if tree, err = commitTree(c); err != nil {
			return nil, fmt.Errorf("%s: %v", tool, err)
		}
	}
	s, err := r.snapshot()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", tool, err)
	}
	staged, err := r.treeVsIndex(ctx, tree, s, prefix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	worktree, err := r.indexVsWorktree(ctx, s, prefix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	limit := p.opts.MaxFiles
	for _, c := range staged {
		out.Truncated = appendChange(&out.Staged, r, c, limit) || out.Truncated
	}
	var ignored func(string) bool
	for _, c := range worktree {
		if c.action != merkletrie.Insert {
			out.Truncated = appendChange(&out.Unstaged, r, c, limit) || out.Truncated
			continue
		}
		if ignored == nil {
			m := r.ignoreMatcher()
			ignored = func(p string) bool { return m.Match(strings.Split(p, "/"), false) }
		}
		if ignored(c.path) {
			continue
		}
		if shown, ok := r.show(c.path); ok {
			if len(out.Untracked) == limit {
				out.Truncated = true
				continue
			}
			out.Untracked = append(out.Untracked, shown)
		}
	}
	return out, nil
}

// appendChange adds a status entry unless the list is full (then it reports true).
func appendChange(list *[]*statusChange, r *repo, c pathChange, limit int) bool {
	shown, ok := r.show(c.path)
	if !ok {
		return false
	}
	if len(*list) == limit {
		return true
	}
	st := statusModified
	switch c.action {
	case merkletrie.Insert:
		st = statusAdded
	case merkletrie.Delete:
		st = statusDeleted
	}
	*list = append(*list, &statusChange{Path: shown, Status: st})
	return false
}

func statusText(d *statusDetails) string {
	var b strings.Builder
	switch {
	case d.Head == "":
		fmt.Fprintf(&b, "On branch %s (no commits yet)\n", d.Branch)
	case d.Branch == "":
		fmt.Fprintf(&b, "HEAD detached at %s\n", d.Head[:12])
	default:
		fmt.Fprintf(&b, "On branch %s at %s\n", d.Branch, d.Head[:12])
	}
	section := func(title string, list []*statusChange) {
		if len(list) == 0 {
			return
		}
		b.WriteString(title + ":\n")
		for _, c := range list {
			fmt.Fprintf(&b, "  %-9s %s\n", c.Status, c.Path)
		}
	}
	section("Staged", d.Staged)
	section("Not staged", d.Unstaged)
	if len(d.Untracked) > 0 {
		b.WriteString("Untracked:\n")
		for _, p := range d.Untracked {
			b.WriteString("  " + p + "\n")
		}
	}
	if len(d.Staged)+len(d.Unstaged)+len(d.Untracked) == 0 {
		b.WriteString("Nothing to commit, working tree clean\n")
	}
	if d.Truncated {
		b.WriteString("… lists cut at 1000 entries each\n")
	}
	return b.String()
}
