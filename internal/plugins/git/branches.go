package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/go-git/go-git/v5/plumbing"
)

const maxRefs = 1000

const branchesInput = `{
  "type": "object",
  "properties": {},
  "additionalProperties": false
}`

const branchesOutput = `{
  "type": "object",
  "properties": {
    "current": {"type": "string", "description": "The checked-out branch; empty when HEAD is detached."},
    "head": {"type": "string", "description": "HEAD's commit hash; empty before the first commit."},
    "branches": {"type": "array", "description": "Local branches, then remote-tracking ones (origin/main), by name.", "items": {
      "type": "object",
      "properties": {
        "name": {"type": "string"},
        "hash": {"type": "string"},
        "remote": {"type": "boolean"},
        "date": {"type": "string", "description": "Commit date of the tip, RFC 3339."},
        "subject": {"type": "string", "description": "Subject of the tip commit."}
      },
      "required": ["name", "hash", "remote", "date", "subject"],
      "additionalProperties": false
    }},
    "tags": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "hash": {"type": "string", "description": "The tagged commit."}}, "required": ["name", "hash"], "additionalProperties": false}},
    "truncated": {"type": "boolean", "description": "More than 1000 branches or tags."}
  },
  "required": ["current", "head", "branches", "tags", "truncated"],
  "additionalProperties": false
}`

type branchesArgs struct{}

type branch struct {
	Name    string `json:"name"`
	Hash    string `json:"hash"`
	Remote  bool   `json:"remote"`
	Date    string `json:"date"`
	Subject string `json:"subject"`
}

type tag struct {
	Name string `json:"name"`
	Hash string `json:"hash"`
}

type branchesDetails struct {
	Current   string    `json:"current"`
	Head      string    `json:"head"`
	Branches  []*branch `json:"branches"`
	Tags      []*tag    `json:"tags"`
	Truncated bool      `json:"truncated"`
}

func branchesTool(p *plugin) *api.Tool {
	return gitTool("git_branches", "Git branches",
		"Local and remote-tracking branches with their tip commits, the tags, and which branch is checked out.",
		branchesInput, branchesOutput,
		p.branches, branchesText)
}

func (p *plugin) branches(ctx context.Context, _ *branchesArgs) (*branchesDetails, error) {
	const tool = "git_branches"
	r, err := p.open(tool)
	if err != nil {
		return nil, err
	}
	defer r.close()
	out := &branchesDetails{Branches: []*branch{}, Tags: []*tag{}}
	if ref, err := r.r.Storer.Reference(plumbing.HEAD); err == nil {
		if ref.Type() == plumbing.SymbolicReference {
			out.Current = ref.Target().Short()
		}
	}
	if head, err := r.r.Head(); err == nil {
		out.Head = head.Hash().String()
	}
	iter, err := r.r.References()
	if err != nil {
		return nil, fmt.Errorf("%s: listing references: %v", tool, err)
	}
	defer iter.Close()
	var refs []*plumbing.Reference
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", tool, err)
		}
		ref, err := iter.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: listing references: %v", tool, err)
		}
		if ref.Type() != plumbing.HashReference {
			continue // symbolic refs such as refs/remotes/origin/HEAD
		}
		n := ref.Name()
		if !n.IsBranch() && !n.IsRemote() && !n.IsTag() {
			continue
		}
		if len(refs) == 2*maxRefs+1 {
			out.Truncated = true
			break
		}
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool {
		ri, rj := refRank(refs[i].Name()), refRank(refs[j].Name())
		if ri != rj {
			return ri < rj
		}
		return refs[i].Name() < refs[j].Name()
	})
	for _, ref := range refs {
		n := ref.Name()
		if n.IsTag() {
			if len(out.Tags) == maxRefs {
				out.Truncated = true
				continue
			}
			h := ref.Hash()
			if c, err := r.r.ResolveRevision(plumbing.Revision(n.String())); err == nil {
				h = *c // annotated tags name their commit
			}
			out.Tags = append(out.Tags, &tag{Name: n.Short(), Hash: h.String()})
			continue
		}
		if len(out.Branches) == maxRefs {
			out.Truncated = true
			continue
		}
		b := &branch{Name: n.Short(), Hash: ref.Hash().String(), Remote: n.IsRemote()}
		if c, err := r.r.CommitObject(ref.Hash()); err == nil {
			b.Date = c.Committer.When.Format(time.RFC3339)
			b.Subject = subject(c.Message)
		}
		out.Branches = append(out.Branches, b)
	}
	return out, nil
}

// refRank orders local branches, then remote-tracking branches, then tags.
func refRank(n plumbing.ReferenceName) int {
	switch {
	case n.IsBranch():
		return 0
	case n.IsRemote():
		return 1
	}
	return 2
}

func branchesText(d *branchesDetails) string {
	var b strings.Builder
	for _, br := range d.Branches {
		mark := "  "
		if !br.Remote && br.Name == d.Current {
			mark = "* "
		}
		h := br.Hash
		if len(h) > 12 {
			h = h[:12]
		}
		date := br.Date
		if len(date) > 10 {
			date = date[:10]
		}
		fmt.Fprintf(&b, "%s%s %s %s %s\n", mark, br.Name, h, date, br.Subject)
	}
	if len(d.Branches) == 0 {
		b.WriteString("(no branches)\n")
	}
	if d.Current == "" && d.Head != "" {
		fmt.Fprintf(&b, "HEAD detached at %s\n", d.Head[:12])
	}
	if len(d.Tags) > 0 {
		names := make([]string, len(d.Tags))
		for i, t := range d.Tags {
			names[i] = t.Name
		}
		b.WriteString("Tags: " + strings.Join(names, ", ") + "\n")
	}
	if d.Truncated {
		b.WriteString("… more than 1000 branches or tags\n")
	}
	return b.String()
}
