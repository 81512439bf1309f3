package git

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// Bounds of the diff engine.
const (
	// maxDiffLines: a file version with more lines is not line-diffed (diffmatchpatch maps
	// each distinct line to a rune).
	maxDiffLines = 200_000
	// diffTimeout bounds the line diff of one file; past it diffmatchpatch returns a correct
	// but coarser diff.
	diffTimeout = time.Second
	// binarySniff is how much of a file is inspected for a NUL byte, as git does.
	binarySniff = 8000
	// renameBudget bounds the bytes content rename detection may hash; past it only exact
	// renames (same blob) are found.
	renameBudget = 64 << 20
	renameLimit  = 200
	contextLines = 3
)

// Status values of a changed file.
const (
	statusAdded    = "added"
	statusModified = "modified"
	statusDeleted  = "deleted"
	statusRenamed  = "renamed"
)

// version is one side of a file change: a blob in the object database, an index entry or a
// file in the worktree.
type version struct {
	path string // repository path
	mode filemode.FileMode
	size int64
	// read returns the content; it is called only when size is within the bounds and must
	// not return more than limit+1 bytes.
	read func(limit int64) ([]byte, error)
}

// blobVersion describes a blob of the repository. The size comes from the object header, so
// a huge blob is never decompressed just to learn it is too large.
func (r *repo) blobVersion(p string, mode filemode.FileMode, h plumbing.Hash) (*version, error) {
	if mode == filemode.Submodule {
		text := []byte("Subproject commit " + h.String() + "\n")
		return &version{path: p, mode: mode, size: int64(len(text)), read: func(int64) ([]byte, error) { return text, nil }}, nil
	}
	obj, err := r.r.Storer.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, fmt.Errorf("blob %s of %s: %v", h, p, err)
	}
	return &version{path: p, mode: mode, size: obj.Size(), read: func(limit int64) ([]byte, error) {
		rc, err := obj.Reader()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(io.LimitReader(rc, limit+1))
	}}, nil
}

// changeVersions turns a tree change into its two sides (nil for an absent side).
func (r *repo) changeVersions(c *object.Change) (from, to *version, err error) {
	if c.From.Name != "" {
		if from, err = r.blobVersion(c.From.Name, c.From.TreeEntry.Mode, c.From.TreeEntry.Hash); err != nil {
			return nil, nil, err
		}
	}
	if c.To.Name != "" {
		if to, err = r.blobVersion(c.To.Name, c.To.TreeEntry.Mode, c.To.TreeEntry.Hash); err != nil {
			return nil, nil, err
		}
	}
	return from, to, nil
}

// fileChange is one changed file of a diff, show or log --stat result.
type fileChange struct {
	statFile
	Patch *string `json:"patch,omitempty"`
	// Truncated: the file was too large to diff, or its patch was cut.
	Truncated bool `json:"truncated"`
}

// differ computes file changes under the plugin's bounds. One differ serves one call, so the
// total patch budget is shared by all the call's files.
type differ struct {
	r        *repo
	opts     Options
	patches  bool // produce patch text (diff, show) or only counts (log --stat)
	perFile  int  // patch bytes per file
	left     int  // patch bytes left for the whole call
	deadline time.Time
}

func (r *repo) newDiffer(ctx context.Context, opts Options, patches bool, perFile int) *differ {
	d := &differ{r: r, opts: opts, patches: patches, perFile: perFile, left: opts.MaxTotalPatchBytes}
	d.deadline, _ = ctx.Deadline()
	return d
}

// file describes the change from one version to another (either may be nil). Paths in the
// result are as shown to the caller.
func (d *differ) file(ctx context.Context, from, to *version) (fileChange, error) {
	var fc fileChange
	switch {
	case from == nil:
		fc.Status, fc.Path = statusAdded, d.shown(to.path)
	case to == nil:
		fc.Status, fc.Path = statusDeleted, d.shown(from.path)
	case from.path != to.path:
		fc.Status, fc.Path, fc.OldPath = statusRenamed, d.shown(to.path), d.shown(from.path)
	default:
		fc.Status, fc.Path = statusModified, d.shown(to.path)
	}
	if err := ctx.Err(); err != nil {
		return fc, err
	}
	a, aBin, aBig, err := d.content(from)
	if err != nil {
		return fc, err
	}
	b, bBin, bBig, err := d.content(to)
	if err != nil {
		return fc, err
	}
	switch {
	case aBin || bBin:
		fc.Binary = true
		return fc, nil
	case aBig || bBig:
		fc.Truncated = true
		return fc, nil
	}
	if a == b {
		if from != nil && to != nil && from.path == to.path && from.mode == to.mode {
			fc.Status = "" // no change at all (a worktree edit undone since it was staged)
		}
		return fc, nil // a rename or mode change without content change
	}
	diffs := diff.DoWithTimeout(a, b, d.timeout())
	for _, df := range diffs {
		switch df.Type {
		case diffmatchpatch.DiffInsert:
			fc.Additions += countLines(df.Text)
		case diffmatchpatch.DiffDelete:
			fc.Deletions += countLines(df.Text)
		}
	}
	if !d.patches {
		return fc, nil
	}
	limit := min(d.perFile, d.left)
	if limit <= 0 {
		fc.Truncated = true
		return fc, nil
	}
	text, cut := unifiedHunks(diffs, limit)
	d.left -= len(text)
	fc.Patch, fc.Truncated = &text, cut
	return fc, nil
}

func (d *differ) shown(p string) string {
	s, ok := d.r.show(p)
	if !ok {
		return p
	}
	return s
}

// timeout is the line-diff time bound: diffTimeout, or less when the call's deadline is
// nearer.
func (d *differ) timeout() time.Duration {
	t := diffTimeout
	if !d.deadline.IsZero() {
		t = min(t, max(time.Until(d.deadline), 10*time.Millisecond))
	}
	return t
}

// content reads a version for diffing. big reports a version over the size or line bounds
// (its content is not returned); an absent version is empty.
func (d *differ) content(v *version) (text string, binary, big bool, err error) {
	if v == nil {
		return "", false, false, nil
	}
	if v.size > d.opts.MaxBlobBytes {
		return "", false, true, nil
	}
	b, err := v.read(d.opts.MaxBlobBytes)
	if err != nil {
		return "", false, false, fmt.Errorf("reading %s: %v", d.shown(v.path), err)
	}
	if int64(len(b)) > d.opts.MaxBlobBytes {
		return "", false, true, nil // it grew while we looked
	}
	if isBinary(b) {
		return "", true, false, nil
	}
	if bytes.Count(b, []byte{'\n'}) > maxDiffLines {
		return "", false, true, nil
	}
	return string(b), false, false, nil
}

// isBinary reports whether data looks binary the way git decides it: a NUL byte in its first
// 8000 bytes.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0
}

// countLines counts the lines of a diff chunk (a last line without newline counts).
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// unifiedHunks renders line diffs as unified-diff hunks (go-git's encoder, without its file
// header: the path is in the result's fields), cut at a line boundary to at most limit bytes.
func unifiedHunks(diffs []diffmatchpatch.Diff, limit int) (string, bool) {
	chunks := make([]fdiff.Chunk, 0, len(diffs))
	for _, df := range diffs {
		op := fdiff.Equal
		switch df.Type {
		case diffmatchpatch.DiffInsert:
			op = fdiff.Add
		case diffmatchpatch.DiffDelete:
			op = fdiff.Delete
		}
		chunks = append(chunks, chunk{df.Text, op})
	}
	var b strings.Builder
	if err := fdiff.NewUnifiedEncoder(&b, contextLines).Encode(onePatch{chunks}); err != nil {
		return "", true
	}
	s := b.String()
	if i := strings.Index(s, "\n@@ "); i >= 0 {
		s = s[i+1:]
	} else if !strings.HasPrefix(s, "@@ ") {
		s = ""
	}
	if len(s) <= limit {
		return s, false
	}
	cut := s[:limit]
	if i := strings.LastIndexByte(cut, '\n'); i >= 0 {
		cut = cut[:i+1]
	} else {
		cut = ""
	}
	return cut, true
}

// The minimal go-git diff model the unified encoder needs.
type (
	chunk struct {
		text string
		op   fdiff.Operation
	}
	onePatch  struct{ chunks []fdiff.Chunk }
	filePatch struct{ chunks []fdiff.Chunk }
	patchFile struct{}
)

func (c chunk) Content() string                   { return c.text }
func (c chunk) Type() fdiff.Operation             { return c.op }
func (p onePatch) FilePatches() []fdiff.FilePatch { return []fdiff.FilePatch{filePatch(p)} }
func (p onePatch) Message() string                { return "" }
func (p filePatch) IsBinary() bool                { return false }
func (p filePatch) Files() (from, to fdiff.File)  { return patchFile{}, patchFile{} }
func (p filePatch) Chunks() []fdiff.Chunk         { return p.chunks }
func (patchFile) Hash() plumbing.Hash             { return plumbing.ZeroHash }
func (patchFile) Mode() filemode.FileMode         { return filemode.Regular }
func (patchFile) Path() string                    { return "f" }
