package git

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/nativetool"
	"github.com/codemode-go/codemode/internal/textcut"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// Bounds of git_blame.
const (
	maxBlameLines   = 3000      // lines returned by one call
	maxBlameText    = 512 << 10 // bytes of line text returned by one call
	maxLineText     = 2000      // bytes of one line's text
	maxBlameCommits = 10_000    // history steps one call takes
)

const blameInput = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file, relative to the workspace."},
    "rev": {"type": "string", "description": "Blame the file as of this revision: a hash, a branch or tag name, or HEAD~n (default HEAD)."},
    "startLine": {"type": "integer", "minimum": 1, "description": "First line to return (1-based, default 1)."},
    "endLine": {"type": "integer", "minimum": 1, "description": "Last line to return (default: 3000 lines from startLine)."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

const blameOutput = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "rev": {"type": "string", "description": "The commit blamed from."},
    "lines": {"type": "array", "items": {
      "type": "object",
      "properties": {
        "line": {"type": "integer", "minimum": 1},
        "hash": {"type": "string", "description": "The commit that last changed the line."},
        "author": {"type": "string"},
        "date": {"type": "string", "description": "Author date of that commit, RFC 3339."},
        "text": {"type": "string", "description": "The line without its newline (cut at 2000 bytes)."}
      },
      "required": ["line", "hash", "author", "date", "text"],
      "additionalProperties": false
    }},
    "totalLines": {"type": "integer", "minimum": 0},
    "truncated": {"type": "boolean", "description": "Lines were left out (page with startLine), or history was too deep and older lines are attributed to the oldest commit reached."}
  },
  "required": ["path", "rev", "lines", "totalLines", "truncated"],
  "additionalProperties": false
}`

type blameArgs struct {
	Path      string `json:"path"`
	Rev       string `json:"rev"`
	StartLine *int   `json:"startLine"`
	EndLine   *int   `json:"endLine"`
}

type blameLine struct {
	Line   int    `json:"line"`
	Hash   string `json:"hash"`
	Author string `json:"author"`
	Date   string `json:"date"`
	Text   string `json:"text"`
}

type blameDetails struct {
	Path       string       `json:"path"`
	Rev        string       `json:"rev"`
	Lines      []*blameLine `json:"lines"`
	TotalLines int          `json:"totalLines"`
	Truncated  bool         `json:"truncated"`
}

func blameTool(p *plugin) *api.Tool {
	return gitTool("git_blame", "Git blame",
		"For each line of a file (as of a revision, default HEAD), the commit, author and date that last changed it. At most 3000 lines per call; page with startLine.",
		blameInput, blameOutput,
		p.blame, blameText)
}

func (p *plugin) blame(ctx context.Context, in *blameArgs) (*blameDetails, error) {
	const tool = "git_blame"
	if in.Path == "" {
		return nil, fmt.Errorf("%s: path is required", tool)
	}
	start, err := nativetool.IntArg(tool, "startLine", in.StartLine, 1, 1, 1<<31-1)
	if err != nil {
		return nil, err
	}
	end, err := nativetool.IntArg(tool, "endLine", in.EndLine, 0, start, 1<<31-1)
	if err != nil {
		return nil, fmt.Errorf("%v (and at least startLine)", err)
	}
	r, rp, err := p.openPath(tool, in.Path)
	if err != nil {
		return nil, err
	}
	defer r.close()
	shown, _ := r.show(rp)
	if rp == r.scope {
		return nil, fmt.Errorf("%s: %s is a directory", tool, in.Path)
	}
	c, err := r.resolve(tool, in.Rev)
	if err != nil {
		return nil, err
	}
	b := &blamer{r: r, opts: p.opts}
	h, text, err := b.version(c, rp)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", tool, err)
	}
	if h.IsZero() {
		return nil, fmt.Errorf("%s: %s does not exist in %s (or is not a text file)", tool, shown, c.Hash.String()[:12])
	}
	lines := slices.Collect(strings.Lines(text))
	out := &blameDetails{Path: shown, Rev: c.Hash.String(), Lines: []*blameLine{}, TotalLines: len(lines)}
	if start > len(lines) && start > 1 {
		return nil, fmt.Errorf("%s: startLine %d is past the end of %s (%d lines)", tool, start, shown, len(lines))
	}
	want := len(lines)
	if in.EndLine != nil {
		want = min(end, want)
	}
	last := min(want, start+maxBlameLines-1)
	out.Truncated = last < want
	var needs []lineNeed
	for i := start - 1; i < last; i++ {
		needs = append(needs, lineNeed{cur: i, final: i})
	}
	owners, deep, err := b.run(ctx, &blameItem{c: c, path: rp, blob: h, text: text, needs: needs}, len(lines))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	out.Truncated = out.Truncated || deep
	size := 0
	for i := start - 1; i < last; i++ {
		oc := owners[i]
		t := textcut.Prefix(strings.TrimRight(lines[i], "\r\n"), maxLineText)
		if size += len(t) + 120; size > maxBlameText {
			out.Truncated = true
			break
		}
		out.Lines = append(out.Lines, &blameLine{Line: i + 1, Hash: oc.Hash.String(), Author: ident(oc.Author.Name),
			Date: oc.Author.When.Format(time.RFC3339), Text: t})
	}
	return out, nil
}

// lineNeed is a line of the blamed file still looking for its commit: its index in the
// version being examined and in the final file.
type lineNeed struct{ cur, final int }

// blameItem is one commit's version of the file with the lines it may own.
type blameItem struct {
	c     *object.Commit
	path  string // the file's path in c (renames are followed)
	blob  plumbing.Hash
	text  string
	needs []lineNeed
}

type blamer struct {
	r    *repo
	opts Options
}

// version returns the blob hash and text of the file in commit c; a zero hash when c has no
// text file there (absent, a directory, a submodule, binary or too large).
func (b *blamer) version(c *object.Commit, path string) (plumbing.Hash, string, error) {
	t, err := commitTree(c)
	if err != nil {
		return plumbing.ZeroHash, "", err
	}
	e, err := t.FindEntry(path)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return plumbing.ZeroHash, "", nil
	}
	if err != nil {
		return plumbing.ZeroHash, "", err
	}
	if e.Mode != filemode.Regular && e.Mode != filemode.Executable && e.Mode != filemode.Deprecated {
		return plumbing.ZeroHash, "", nil
	}
	v, err := b.r.blobVersion(path, e.Mode, e.Hash)
	if err != nil {
		return plumbing.ZeroHash, "", err
	}
	if v.size > b.opts.MaxBlobBytes {
		return plumbing.ZeroHash, "", fmt.Errorf("the file is %d bytes in %s (limit %d)", v.size, c.Hash.String()[:12], b.opts.MaxBlobBytes)
	}
	data, err := v.read(b.opts.MaxBlobBytes)
	if err != nil {
		return plumbing.ZeroHash, "", err
	}
	if isBinary(data) {
		return plumbing.ZeroHash, "", fmt.Errorf("the file is binary in %s", c.Hash.String()[:12])
	}
	return e.Hash, string(data), nil
}

// run walks history from c, newest commit first, handing each line down to the parent that
// has it unchanged (first parent first) until a commit introduced it. It returns the owning
// commit per final line index. deep reports that the walk hit maxBlameCommits; the lines
// still unresolved are then attributed to the commit where the walk stopped.
func (b *blamer) run(ctx context.Context, first *blameItem, total int) ([]*object.Commit, bool, error) {
	owners := make([]*object.Commit, total)
	q := &blameQueue{byHash: map[plumbing.Hash]*blameItem{}}
	q.add(first)
	var deadline time.Time
	if dl, ok := ctx.Deadline(); ok {
		deadline = dl
	}
	for steps := 0; q.Len() > 0; steps++ {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		it := heap.Pop(q).(*blameItem)
		delete(q.byHash, it.c.Hash)
		if steps >= maxBlameCommits {
			for _, n := range it.needs {
				owners[n.final] = it.c
			}
			for q.Len() > 0 {
				rest := heap.Pop(q).(*blameItem)
				for _, n := range rest.needs {
					owners[n.final] = rest.c
				}
			}
			return owners, true, nil
		}
		remaining, err := b.step(ctx, it, q, deadline)
		if err != nil {
			return nil, false, err
		}
		for _, n := range remaining {
			owners[n.final] = it.c
		}
	}
	return owners, false, nil
}

// step hands an item's lines to its parents and returns the lines the item's commit owns.
func (b *blamer) step(ctx context.Context, it *blameItem, q *blameQueue, deadline time.Time) ([]lineNeed, error) {
	type parent struct {
		c    *object.Commit
		path string
		blob plumbing.Hash
		text string
	}
	var parents []parent
	for i := range it.c.NumParents() {
		pc, err := it.c.Parent(i)
		if err != nil {
			return nil, fmt.Errorf("parent of %s: %v", it.c.Hash, err)
		}
		path := it.path
		h, text, err := b.version(pc, path)
		if err == nil && h.IsZero() {
			// Absent in the parent: follow a rename, if this commit made one.
			if path, err = b.renamedFrom(ctx, pc, it.c, it.path); err == nil && path != "" {
				h, text, err = b.version(pc, path)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// A parent whose version cannot be blamed (binary, too large) ends the line.
			h = plumbing.ZeroHash
		}
		if h == it.blob {
			// Unchanged in this parent: everything is older (git's history simplification).
			q.add(&blameItem{c: pc, path: path, blob: h, text: text, needs: it.needs})
			return nil, nil
		}
		if !h.IsZero() {
			parents = append(parents, parent{pc, path, h, text})
		}
	}
	remaining := it.needs
	for _, pa := range parents {
		if len(remaining) == 0 {
			break
		}
		to := lineMap(pa.text, it.text, timeoutUntil(deadline))
		var passed, kept []lineNeed
		for _, n := range remaining {
			if pl, ok := to[n.cur]; ok {
				passed = append(passed, lineNeed{cur: pl, final: n.final})
			} else {
				kept = append(kept, n)
			}
		}
		if len(passed) > 0 {
			q.add(&blameItem{c: pa.c, path: pa.path, blob: pa.blob, text: pa.text, needs: passed})
		}
		remaining = kept
	}
	return remaining, nil
}

// renamedFrom returns the path in parent of the file c has at path, when c renamed it ("" when
// c added it).
func (b *blamer) renamedFrom(ctx context.Context, parent, c *object.Commit, path string) (string, error) {
	pt, err := commitTree(parent)
	if err != nil {
		return "", err
	}
	ct, err := commitTree(c)
	if err != nil {
		return "", err
	}
	changes, err := b.r.treeChanges(ctx, pt, ct, "")
	if err != nil {
		return "", err
	}
	for _, ch := range changes {
		if ch.To.Name == path && ch.From.Name != "" && ch.From.Name != path {
			return ch.From.Name, nil
		}
	}
	return "", nil
}

// lineMap maps line indexes of child to the equal lines of parent.
func lineMap(parent, child string, timeout time.Duration) map[int]int {
	m := map[int]int{}
	pl, cl := 0, 0
	for _, d := range diff.DoWithTimeout(parent, child, timeout) {
		n := countLines(d.Text)
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			for i := range n {
				m[cl+i] = pl + i
			}
			pl += n
			cl += n
		case diffmatchpatch.DiffDelete:
			pl += n
		case diffmatchpatch.DiffInsert:
			cl += n
		}
	}
	return m
}

func timeoutUntil(deadline time.Time) time.Duration {
	if deadline.IsZero() {
		return diffTimeout
	}
	return min(diffTimeout, max(time.Until(deadline), 10*time.Millisecond))
}

// blameQueue orders items newest commit first and merges items of the same commit reached
// through several children.
type blameQueue struct {
	items  []*blameItem
	byHash map[plumbing.Hash]*blameItem
}

func (q *blameQueue) add(it *blameItem) {
	if old, ok := q.byHash[it.c.Hash]; ok {
		old.needs = append(old.needs, it.needs...)
		return
	}
	q.byHash[it.c.Hash] = it
	heap.Push(q, it)
}

func (q *blameQueue) Len() int { return len(q.items) }
func (q *blameQueue) Less(i, j int) bool {
	return q.items[i].c.Committer.When.After(q.items[j].c.Committer.When)
}
func (q *blameQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *blameQueue) Push(x any)    { q.items = append(q.items, x.(*blameItem)) }
func (q *blameQueue) Pop() any {
	it := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return it
}

func blameText(d *blameDetails) string {
	var b strings.Builder
	for _, l := range d.Lines {
		date := l.Date
		if len(date) > 10 {
			date = date[:10]
		}
		fmt.Fprintf(&b, "%s (%s %s %5d) %s\n", l.Hash[:8], textcut.Prefix(l.Author, 20), date, l.Line, l.Text)
	}
	if len(d.Lines) == 0 {
		b.WriteString("(empty file)\n")
	}
	if d.Truncated {
		fmt.Fprintf(&b, "… truncated (%d lines in the file)\n", d.TotalLines)
	}
	return b.String()
}
