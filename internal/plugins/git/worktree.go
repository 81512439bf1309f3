package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/codemode-go/codemode/internal/confine"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/merkletrie"
	"github.com/go-git/go-git/v5/utils/merkletrie/filesystem"
	mindex "github.com/go-git/go-git/v5/utils/merkletrie/index"
	"github.com/go-git/go-git/v5/utils/merkletrie/noder"
)

// emptyNoderHash is the hash go-git's worktree noder gives what it could not hash; such a
// node never equals anything (a file that vanished or could not be read shows as changed).
var emptyNoderHash = make([]byte, 24)

func noderEqual(a, b noder.Hasher) bool {
	ha, hb := a.Hash(), b.Hash()
	if bytes.Equal(ha, emptyNoderHash) || bytes.Equal(hb, emptyNoderHash) {
		return false
	}
	return bytes.Equal(ha, hb)
}

// pathChange is one path that differs between two snapshots of the tree.
type pathChange struct {
	path   string
	action merkletrie.Action
}

// diffNoders compares two merkle tries under a path prefix, honouring ctx.
func diffNoders(ctx context.Context, from, to noder.Noder, prefix string) ([]pathChange, error) {
	chs, err := merkletrie.DiffTreeContext(ctx, from, to, noderEqual)
	if err != nil {
		if errors.Is(err, merkletrie.ErrCanceled) {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	out := make([]pathChange, 0, len(chs))
	for _, ch := range chs {
		a, err := ch.Action()
		if err != nil {
			return nil, err
		}
		name := ch.To.String()
		if name == "" {
			name = ch.From.String()
		}
		if inScope(prefix, name) {
			out = append(out, pathChange{name, a})
		}
	}
	return out, nil
}

// snapshot is what the worktree-side tools need: HEAD's tree (nil when unborn), the index
// and its entries by path.
type snapshot struct {
	idx     *index.Index
	entries map[string]*index.Entry
}

func (r *repo) snapshot() (*snapshot, error) {
	idx, err := r.r.Storer.Index()
	if err != nil {
		return nil, fmt.Errorf("reading the index: %v", err)
	}
	s := &snapshot{idx: idx, entries: make(map[string]*index.Entry, len(idx.Entries))}
	for _, e := range idx.Entries {
		s.entries[e.Name] = e
	}
	return s, nil
}

// treeVsIndex lists the paths that differ between tree (nil: empty) and the index.
func (r *repo) treeVsIndex(ctx context.Context, tree *object.Tree, s *snapshot, prefix string) ([]pathChange, error) {
	var from noder.Noder = object.NewTreeRootNode(&object.Tree{})
	if tree != nil {
		from = object.NewTreeRootNode(tree)
	}
	return diffNoders(ctx, from, mindex.NewRootNode(s.idx), prefix)
}

// indexVsWorktree lists the paths that differ between the index and the worktree: Insert is
// an untracked file, Delete a tracked file missing from the worktree. Submodules count as
// unchanged (their checkouts are not inspected).
func (r *repo) indexVsWorktree(ctx context.Context, s *snapshot, prefix string) ([]pathChange, error) {
	subs := map[string]plumbing.Hash{}
	for _, e := range s.idx.Entries {
		if e.Mode == filemode.Submodule {
			subs[e.Name] = e.Hash
		}
	}
	wt := filesystem.NewRootNodeWithOptions(r.wt, subs, filesystem.Options{Index: s.idx})
	return diffNoders(ctx, mindex.NewRootNode(s.idx), wt, prefix)
}

// indexVersion is the blob an index entry names.
func (r *repo) indexVersion(e *index.Entry) (*version, error) {
	return r.blobVersion(e.Name, e.Mode, e.Hash)
}

// worktreeVersion is a file of the worktree as git would store it: a regular file's content,
// or a symlink's target. The worktree file system is bound to the worktree root, so neither a
// symlink nor a path component can lead outside it.
func (r *repo) worktreeVersion(p string) (*version, error) {
	fi, err := r.wt.Lstat(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", p, confine.Describe(err))
	}
	mode, err := filemode.NewFromOSFileMode(fi.Mode())
	if err != nil {
		return nil, fmt.Errorf("%s is neither a regular file nor a symlink", p)
	}
	v := &version{path: p, mode: mode, size: fi.Size()}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := r.wt.Readlink(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", p, confine.Describe(err))
		}
		v.size = int64(len(target))
		v.read = func(int64) ([]byte, error) { return []byte(target), nil }
		return v, nil
	}
	v.read = func(limit int64) ([]byte, error) {
		f, err := r.wt.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(io.LimitReader(f, limit+1))
	}
	return v, nil
}

// treeVersion is the blob at path in tree, or nil when the tree has no file there.
func (r *repo) treeVersion(tree *object.Tree, p string) (*version, error) {
	if tree == nil {
		return nil, nil
	}
	e, err := tree.FindEntry(p)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if e.Mode == filemode.Dir {
		return nil, nil
	}
	return r.blobVersion(p, e.Mode, e.Hash)
}

// versionPair is one file change whose sides may live in the worktree or the index.
type versionPair struct{ from, to *version }

// worktreePairs lists the file changes from tree to the index (staged: true) or to the
// worktree's tracked files (like `git diff <rev>`; untracked files are not part of it).
// Deleted and added files with the same content are paired as renames.
func (r *repo) worktreePairs(ctx context.Context, tree *object.Tree, staged bool, prefix string) ([]versionPair, error) {
	s, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	vsIndex, err := r.treeVsIndex(ctx, tree, s, prefix)
	if err != nil {
		return nil, err
	}
	paths := map[string]bool{}
	for _, c := range vsIndex {
		paths[c.path] = true
	}
	wtState := map[string]merkletrie.Action{}
	if !staged {
		vsWorktree, err := r.indexVsWorktree(ctx, s, prefix)
		if err != nil {
			return nil, err
		}
		for _, c := range vsWorktree {
			if c.action != merkletrie.Insert {
				wtState[c.path] = c.action
				paths[c.path] = true
			}
		}
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)

	var pairs []versionPair
	for _, p := range sorted {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		from, err := r.treeVersion(tree, p)
		if err != nil {
			return nil, err
		}
		var to *version
		if e, ok := s.entries[p]; ok {
			switch wtState[p] {
			case merkletrie.Delete:
			case merkletrie.Modify:
				if to, err = r.worktreeVersion(p); err != nil {
					return nil, err
				}
			default:
				if to, err = r.indexVersion(e); err != nil {
					return nil, err
				}
			}
		}
		if from == nil && to == nil {
			continue
		}
		pairs = append(pairs, versionPair{from, to})
	}
	return pairExactRenames(r, tree, s, pairs), nil
}

// treeHash is the hash of the entry at p in tree (zero when absent).
func (r *repo) treeHash(tree *object.Tree, p string) plumbing.Hash {
	if tree == nil {
		return plumbing.ZeroHash
	}
	e, err := tree.FindEntry(p)
	if err != nil {
		return plumbing.ZeroHash
	}
	return e.Hash
}

// pairExactRenames turns a deleted file and an added index entry with the same blob into a
// rename. Only the index side has a known hash without reading the file, so an added file
// counts when its worktree content is the staged one.
func pairExactRenames(r *repo, tree *object.Tree, s *snapshot, pairs []versionPair) []versionPair {
	deleted := map[plumbing.Hash]int{}
	for i, p := range pairs {
		if p.to == nil && p.from != nil {
			if h := r.treeHash(tree, p.from.path); !h.IsZero() {
				if _, dup := deleted[h]; !dup {
					deleted[h] = i
				}
			}
		}
	}
	if len(deleted) == 0 {
		return pairs
	}
	drop := map[int]bool{}
	for i, p := range pairs {
		if p.from != nil || p.to == nil {
			continue
		}
		e, ok := s.entries[p.to.path]
		if !ok {
			continue
		}
		if j, ok := deleted[e.Hash]; ok && !drop[j] {
			pairs[i].from = pairs[j].from
			drop[j] = true
			delete(deleted, e.Hash)
		}
	}
	out := pairs[:0]
	for i, p := range pairs {
		if !drop[i] {
			out = append(out, p)
		}
	}
	return out
}

// ignoreMatcher reads the worktree's .gitignore files and the repository's info/exclude.
func (r *repo) ignoreMatcher() gitignore.Matcher {
	ps, _ := gitignore.ReadPatterns(r.wt, nil)
	for _, dir := range []string{r.common, r.gitDir} {
		if dir == "" {
			continue
		}
		b, err := readSmall(dir+"/info/exclude", 1<<20)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimRight(line, "\r")
			if line != "" && !strings.HasPrefix(line, "#") {
				ps = append(ps, gitignore.ParsePattern(line, nil))
			}
		}
		break
	}
	return gitignore.NewMatcher(ps)
}
