package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/nativetool"
	"github.com/codemode-go/codemode/internal/textcut"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Bounds of git_log.
const (
	defaultLogLimit = 20
	maxLogLimit     = 500
	// maxScan bounds the commits one call visits (filters by path, author or date may skip
	// many before `limit` match).
	maxScan         = 50_000
	maxSubjectBytes = 1000
	maxIdentBytes   = 256
	maxLogFiles     = 300     // files listed per commit with stat
	maxLogBytes     = 2 << 20 // rough size of one result's details
)

const logInput = `{
  "type": "object",
  "properties": {
    "rev": {"type": "string", "description": "Where to start: a commit hash or short hash, a branch or tag name, or HEAD~n (default HEAD)."},
    "path": {"type": "string", "description": "Only commits that changed this file or directory (relative to the workspace)."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 500, "description": "Most commits to return (default 20)."},
    "skip": {"type": "integer", "minimum": 0, "description": "Matching commits to skip first, for paging (default 0)."},
    "since": {"type": "string", "description": "Only commits committed at or after this time: RFC 3339 or YYYY-MM-DD (UTC)."},
    "author": {"type": "string", "description": "Only commits whose author name or email contains this text (case-insensitive)."},
    "stat": {"type": "boolean", "description": "Also list each commit's changed files with added and deleted line counts."}
  },
  "additionalProperties": false
}`

const logOutput = `{
  "type": "object",
  "properties": {
    "commits": {"type": "array", "description": "Newest first (by commit time).", "items": {
      "type": "object",
      "properties": {
        "hash": {"type": "string", "description": "Full commit hash."},
        "author": {"type": "string"},
        "email": {"type": "string"},
        "date": {"type": "string", "description": "Author date, RFC 3339."},
        "subject": {"type": "string", "description": "First line of the message."},
        "files": {"type": "array", "description": "Only with stat: true (at most 300 per commit); merge commits list none, as in git log --stat. Files over 4 MiB count 0 lines.", "items": {
          "type": "object",
          "properties": {
            "path": {"type": "string"},
            "oldPath": {"type": "string", "description": "The previous path of a renamed file."},
            "status": {"type": "string", "description": "added, modified, deleted or renamed."},
            "additions": {"type": "integer", "minimum": 0},
            "deletions": {"type": "integer", "minimum": 0},
            "binary": {"type": "boolean"}
          },
          "required": ["path", "status", "additions", "deletions", "binary"],
          "additionalProperties": false
        }}
      },
      "required": ["hash", "author", "email", "date", "subject"],
      "additionalProperties": false
    }},
    "truncated": {"type": "boolean", "description": "More commits match: page on with skip."}
  },
  "required": ["commits", "truncated"],
  "additionalProperties": false
}`

type logArgs struct {
	Rev    string `json:"rev"`
	Path   string `json:"path"`
	Limit  *int   `json:"limit"`
	Skip   *int   `json:"skip"`
	Since  string `json:"since"`
	Author string `json:"author"`
	Stat   bool   `json:"stat"`
}

type logCommit struct {
	Hash    string      `json:"hash"`
	Author  string      `json:"author"`
	Email   string      `json:"email"`
	Date    string      `json:"date"`
	Subject string      `json:"subject"`
	Files   []*statFile `json:"files,omitempty"`
}

// statFile is a changed file with its line counts, as git log --stat lists it; fileChange adds
// the patch.
type statFile struct {
	Path      string `json:"path"`
	OldPath   string `json:"oldPath,omitempty"`
	Status    string `json:"status"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Binary    bool   `json:"binary"`
}

type logDetails struct {
	Commits   []*logCommit `json:"commits"`
	Truncated bool         `json:"truncated"`
}

func logTool(p *plugin) *api.Tool {
	return gitTool("git_log", "Git log",
		"List commits, newest first, optionally only those touching a path, by an author or since a date; with stat: true each commit lists its changed files with line counts.",
		logInput, logOutput,
		p.log, logText)
}

func (p *plugin) log(ctx context.Context, in *logArgs) (*logDetails, error) {
	const tool = "git_log"
	limit, err := nativetool.IntArg(tool, "limit", in.Limit, defaultLogLimit, 1, maxLogLimit)
	if err != nil {
		return nil, err
	}
	skip, err := nativetool.IntArg(tool, "skip", in.Skip, 0, 0, maxScan)
	if err != nil {
		return nil, err
	}
	var since time.Time
	if in.Since != "" {
		if since, err = parseSince(in.Since); err != nil {
			return nil, fmt.Errorf("%s: since: %v", tool, err)
		}
	}
	author := strings.ToLower(in.Author)
	r, prefix, err := p.openPath(tool, in.Path)
	if err != nil {
		return nil, err
	}
	defer r.close()
	start, err := r.resolve(tool, in.Rev)
	if err != nil {
		return nil, err
	}
	var d *differ
	if in.Stat {
		d = r.newDiffer(ctx, p.opts, false, 0)
	}
	out := &logDetails{Commits: []*logCommit{}}
	size := 0
	iter := object.NewCommitIterCTime(start, nil, nil)
	defer iter.Close()
	for scanned := 0; ; scanned++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", tool, err)
		}
		c, err := iter.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: walking history: %v", tool, err)
		}
		if scanned >= maxScan || (!since.IsZero() && c.Committer.When.Before(since)) {
			// Commit time order: with `since`, everything after this is older. git stops
			// at the first older commit too (it tolerates some clock skew; we do not).
			out.Truncated = scanned >= maxScan
			break
		}
		if author != "" && !strings.Contains(strings.ToLower(c.Author.Name+" <"+c.Author.Email+">"), author) {
			continue
		}
		if prefix != "" {
			touched, err := touches(c, prefix)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", tool, err)
			}
			if !touched {
				continue
			}
		}
		if skip > 0 {
			skip--
			continue
		}
		if len(out.Commits) == limit || size > maxLogBytes {
			out.Truncated = true
			break
		}
		lc := &logCommit{
			Hash:    c.Hash.String(),
			Author:  ident(c.Author.Name),
			Email:   ident(c.Author.Email),
			Date:    c.Author.When.Format(time.RFC3339),
			Subject: subject(c.Message),
		}
		if d != nil && c.NumParents() < 2 { // merges list no files, as in git log --stat
			if lc.Files, err = commitStat(ctx, r, d, c, prefix); err != nil {
				return nil, fmt.Errorf("%s: commit %s: %w", tool, c.Hash, err)
			}
		}
		size += 200 + len(lc.Subject) + len(lc.Author) + len(lc.Email)
		for _, f := range lc.Files {
			size += 100 + len(f.Path) + len(f.OldPath)
		}
		out.Commits = append(out.Commits, lc)
	}
	return out, nil
}

// commitStat lists a commit's changed files (against its first parent) under prefix, at most
// maxLogFiles of them.
func commitStat(ctx context.Context, r *repo, d *differ, c *object.Commit, prefix string) ([]*statFile, error) {
	changes, err := r.commitChanges(ctx, c, prefix)
	if err != nil {
		return nil, err
	}
	pairs, err := r.versionPairs(changes[:min(len(changes), maxLogFiles)])
	if err != nil {
		return nil, err
	}
	fcs, _, err := d.files(ctx, pairs, maxLogFiles)
	if err != nil {
		return nil, err
	}
	files := make([]*statFile, len(fcs))
	for i, fc := range fcs {
		files[i] = &fc.statFile
	}
	return files, nil
}

// touches reports whether commit c changed anything under prefix compared with one of its
// parents (a root commit touches the paths it contains). A merge whose version of prefix
// equals one parent's did not change it, as git log's history simplification sees it.
func touches(c *object.Commit, prefix string) (bool, error) {
	h, err := entryHash(c, prefix)
	if err != nil {
		return false, err
	}
	if c.NumParents() == 0 {
		return !h.IsZero(), nil
	}
	for i := range c.NumParents() {
		pc, err := c.Parent(i)
		if err != nil {
			return false, fmt.Errorf("parent of %s: %v", c.Hash, err)
		}
		ph, err := entryHash(pc, prefix)
		if err != nil {
			return false, err
		}
		if ph == h {
			return false, nil
		}
	}
	return true, nil
}

// entryHash is the hash of the tree entry at path in c (zero when absent).
func entryHash(c *object.Commit, path string) (plumbing.Hash, error) {
	t, err := commitTree(c)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	e, err := t.FindEntry(path)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("%s in %s: %v", path, c.Hash, err)
	}
	return e.Hash, nil
}

// parseSince accepts RFC 3339 or a plain date (UTC midnight).
func parseSince(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a date (use RFC 3339, e.g. 2024-05-01T00:00:00Z, or YYYY-MM-DD)", s)
}

// subject is the first line of a commit message, bounded.
func subject(msg string) string {
	s, _, _ := strings.Cut(strings.TrimLeft(msg, "\n"), "\n")
	return textcut.Prefix(strings.TrimRight(s, "\r "), maxSubjectBytes)
}

// ident bounds a name or email from a commit: a hostile repository may make them huge.
func ident(s string) string { return textcut.Prefix(s, maxIdentBytes) }

func logText(d *logDetails) string {
	var b strings.Builder
	for _, c := range d.Commits {
		fmt.Fprintf(&b, "%s %s %s  %s\n", c.Hash[:12], c.Date[:10], c.Author, c.Subject)
		for _, f := range c.Files {
			b.WriteString("    " + statLine(f, false) + "\n")
		}
	}
	switch {
	case len(d.Commits) == 0:
		b.WriteString("(no commits)\n")
	case d.Truncated:
		b.WriteString("… more commits: page on with skip\n")
	}
	return b.String()
}

// statLine is one file of a stat listing: `M path (+3 -1)`. truncated: the file was too large
// to diff.
func statLine(f *statFile, truncated bool) string {
	letter := map[string]string{statusAdded: "A", statusModified: "M", statusDeleted: "D", statusRenamed: "R"}[f.Status]
	name := f.Path
	if f.OldPath != "" {
		name = f.OldPath + " → " + f.Path
	}
	switch {
	case f.Binary:
		return fmt.Sprintf("%s %s (binary)", letter, name)
	case truncated && f.Additions == 0 && f.Deletions == 0:
		return fmt.Sprintf("%s %s (too large to diff)", letter, name)
	}
	return fmt.Sprintf("%s %s (+%d -%d)", letter, name, f.Additions, f.Deletions)
}
