package git

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/nativetool"
	"github.com/codemode-go/codemode/internal/textcut"
)

const maxMessageBytes = 64 << 10

const showInput = `{
  "type": "object",
  "properties": {
    "rev": {"type": "string", "description": "The commit: a hash or short hash, a branch or tag name, or HEAD~n (default HEAD)."},
    "path": {"type": "string", "description": "Only files under this file or directory (relative to the workspace)."},
    "maxBytes": {"type": "integer", "minimum": 256, "maximum": 1048576, "description": "Patch bytes per file before it is cut (default 32768; 1 MiB in total per call)."}
  },
  "additionalProperties": false
}`

var showOutput = `{
  "type": "object",
  "properties": {
    "hash": {"type": "string"},
    "author": {"type": "string"},
    "date": {"type": "string", "description": "Author date, RFC 3339."},
    "message": {"type": "string", "description": "The full commit message (cut at 64 KiB)."},
    "files": {"type": "array", "items": ` + fileItemSchema + `},
    "truncated": {"type": "boolean", "description": "Some files were left out or cut."}
  },
  "required": ["hash", "author", "date", "message", "files", "truncated"],
  "additionalProperties": false
}`

type showArgs struct {
	Rev      string `json:"rev"`
	Path     string `json:"path"`
	MaxBytes *int   `json:"maxBytes"`
}

type showDetails struct {
	Hash      string        `json:"hash"`
	Author    string        `json:"author"`
	Date      string        `json:"date"`
	Message   string        `json:"message"`
	Files     []*fileChange `json:"files"`
	Truncated bool          `json:"truncated"`

	parents []string // for the text rendering
	email   string
}

func showTool(p *plugin) *api.Tool {
	return gitTool("git_show", "Git show",
		"One commit: author, date, full message and its changes (against the first parent for a merge) as per-file patches with line counts.",
		showInput, showOutput,
		p.show, showText)
}

func (p *plugin) show(ctx context.Context, in *showArgs) (*showDetails, error) {
	const tool = "git_show"
	perFile, err := nativetool.IntArg(tool, "maxBytes", in.MaxBytes, defaultPatchBytes, 256, maxPatchBytesArg)
	if err != nil {
		return nil, err
	}
	r, prefix, err := p.openPath(tool, in.Path)
	if err != nil {
		return nil, err
	}
	defer r.close()
	c, err := r.resolve(tool, in.Rev)
	if err != nil {
		return nil, err
	}
	out := &showDetails{
		Hash:    c.Hash.String(),
		Author:  ident(c.Author.Name),
		Date:    c.Author.When.Format(time.RFC3339),
		Message: textcut.Prefix(strings.Trim(c.Message, "\n"), maxMessageBytes),
		email:   ident(c.Author.Email),
	}
	for _, h := range c.ParentHashes {
		out.parents = append(out.parents, h.String())
	}
	changes, err := r.commitChanges(ctx, c, prefix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	pairs, err := r.versionPairs(changes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	d := r.newDiffer(ctx, p.opts, true, perFile)
	if out.Files, out.Truncated, err = d.files(ctx, pairs, p.opts.MaxFiles); err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	return out, nil
}

func showText(d *showDetails) string {
	var b strings.Builder
	fmt.Fprintf(&b, "commit %s\n", d.Hash)
	if len(d.parents) > 1 {
		fmt.Fprintf(&b, "Merge: %s (files against the first parent)\n", strings.Join(d.parents, " "))
	}
	fmt.Fprintf(&b, "Author: %s <%s>\nDate:   %s\n\n    %s\n\n", d.Author, d.email, d.Date,
		strings.ReplaceAll(d.Message, "\n", "\n    "))
	b.WriteString(filesText(d.Files, d.Truncated))
	return b.String()
}
