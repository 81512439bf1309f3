package git

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/merkletrie"
)

// treeChanges lists the changes from tree a to tree b (a nil tree is empty) under the path
// prefix (repository path, "" for all), with renames detected.
func (r *repo) treeChanges(ctx context.Context, a, b *object.Tree, prefix string) (object.Changes, error) {
	if a == nil {
		a = &object.Tree{}
	}
	if b == nil {
		b = &object.Tree{}
	}
	all, err := object.DiffTreeWithOptions(ctx, a, b, nil)
	if err != nil {
		if errors.Is(err, object.ErrCanceled) || errors.Is(err, merkletrie.ErrCanceled) {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	changes := all[:0]
	for _, c := range all {
		if inScope(prefix, c.From.Name) || inScope(prefix, c.To.Name) {
			// A side outside the prefix becomes absent: a rename into the prefix shows as
			// an addition, and nothing outside the workspace is named.
			if !inScope(prefix, c.From.Name) {
				c.From = object.ChangeEntry{}
			}
			if !inScope(prefix, c.To.Name) {
				c.To = object.ChangeEntry{}
			}
			changes = append(changes, c)
		}
	}
	changes, err = r.detectRenames(changes)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(changes, func(i, j int) bool { return changeName(changes[i]) < changeName(changes[j]) })
	return changes, nil
}

// detectRenames pairs deleted and added files. Content similarity reads every candidate, and
// go-git re-reads each added file for every deleted one, so it runs only when that work fits
// renameBudget; otherwise only exact renames (same blob) are paired.
func (r *repo) detectRenames(changes object.Changes) (object.Changes, error) {
	var added, deleted int
	var addedBytes, deletedBytes int64
	for _, c := range changes {
		switch {
		case c.From.Name == "" && c.To.Name != "":
			added++
			addedBytes += r.blobSize(c.To.TreeEntry)
		case c.To.Name == "" && c.From.Name != "":
			deleted++
			deletedBytes += r.blobSize(c.From.TreeEntry)
		}
	}
	if added == 0 || deleted == 0 {
		return changes, nil
	}
	exactOnly := max(added, deleted) > renameLimit ||
		int64(deleted)*addedBytes+deletedBytes > renameBudget
	opts := &object.DiffTreeOptions{DetectRenames: true, RenameScore: 50, RenameLimit: renameLimit, OnlyExactRenames: exactOnly}
	out, err := object.DetectRenames(slices.Clone(changes), opts)
	if err != nil && !exactOnly {
		// Similarity hashing gives up on some files (go-git's index of a file with too many
		// distinct blocks is "full"): keep the exact renames rather than fail the call.
		opts.OnlyExactRenames = true
		out, err = object.DetectRenames(changes, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("rename detection: %v", err)
	}
	return out, nil
}

// blobSize is a blob's size from its object header, or a large number when it cannot be read
// (so that the budget check errs on the side of exact renames only).
func (r *repo) blobSize(e object.TreeEntry) int64 {
	if e.Mode != filemode.Regular && e.Mode != filemode.Executable {
		return 0
	}
	obj, err := r.r.Storer.EncodedObject(plumbing.BlobObject, e.Hash)
	if err != nil {
		return renameBudget
	}
	return obj.Size()
}

func changeName(c *object.Change) string {
	if c.To.Name != "" {
		return c.To.Name
	}
	return c.From.Name
}

// commitChanges lists what commit c changed against its first parent (everything it holds, for
// a root commit) under prefix, renames detected.
func (r *repo) commitChanges(ctx context.Context, c *object.Commit, prefix string) (object.Changes, error) {
	from, err := parentTree(c)
	if err != nil {
		return nil, err
	}
	to, err := commitTree(c)
	if err != nil {
		return nil, err
	}
	return r.treeChanges(ctx, from, to, prefix)
}

// versionPairs gives the old and new version of each change.
func (r *repo) versionPairs(changes object.Changes) ([]versionPair, error) {
	pairs := make([]versionPair, 0, len(changes))
	for _, c := range changes {
		from, to, err := r.changeVersions(c)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, versionPair{from, to})
	}
	return pairs, nil
}

// commitTree returns a commit's tree.
func commitTree(c *object.Commit) (*object.Tree, error) {
	t, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("tree of commit %s: %v", c.Hash, err)
	}
	return t, nil
}

// parentTree returns the tree of a commit's first parent, or nil for a root commit.
func parentTree(c *object.Commit) (*object.Tree, error) {
	if c.NumParents() == 0 {
		return nil, nil
	}
	p, err := c.Parent(0)
	if err != nil {
		return nil, fmt.Errorf("parent of commit %s: %v", c.Hash, err)
	}
	return commitTree(p)
}
