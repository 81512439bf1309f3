package git

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// go-git resolves a deltified object by recursion — the base of a delta, then its base, … —
// with no depth limit and no cycle check: a pack of two objects whose REF deltas name each other
// (about 100 bytes) made git_show recurse until "fatal error: stack overflow" took the whole
// gateway down, and a long OFS delta chain does the same. A workspace repository is not trusted,
// so every pack is checked before go-git reads it: each delta chain must reach a whole object
// within maxDeltaDepth steps and never loop. The check reads each object's header once (a few
// bytes at the offset the pack index gives) and is remembered per pack file (name, size, mtime).
//
// Alternates (objects/info/alternates) are not followed: go-git looks a missing object up in
// each alternate's own alternates, recursively, and an alternates file naming its own object
// directory recursed until the stack overflowed (1 GB of RSS in two minutes).

// maxDeltaDepth bounds a delta chain. git itself packs at most 4095 deep (pack-objects --depth);
// its default is 50.
const maxDeltaDepth = 4095

// Pack object types with a base.
const (
	objOFSDelta = 6
	objREFDelta = 7
)

// packChecks remembers the verdict on each pack file.
type packChecks struct {
	mu   sync.Mutex
	seen map[string]packStamp // pack name → the file it was checked as
}

type packStamp struct {
	size  int64
	mtime time.Time
	err   error
}

// check verifies every pack of the object directory on fs (a git directory).
func (c *packChecks) check(fs billy.Filesystem) error {
	dg := dotgit.New(fs)
	packs, err := dg.ObjectPacks()
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, h := range packs {
		if err := c.checkPack(fs, dg, h); err != nil {
			return err
		}
	}
	return nil
}

func (c *packChecks) checkPack(fs billy.Filesystem, dg *dotgit.DotGit, h plumbing.Hash) error {
	name := fs.Join("objects", "pack", "pack-"+h.String()+".pack")
	st, err := fs.Stat(name)
	if err != nil {
		return err
	}
	stamp := packStamp{size: st.Size(), mtime: st.ModTime()}
	c.mu.Lock()
	prev, ok := c.seen[name]
	c.mu.Unlock()
	if ok && prev.size == stamp.size && prev.mtime.Equal(stamp.mtime) {
		return prev.err
	}
	stamp.err = verifyPack(dg, h)
	if stamp.err != nil {
		stamp.err = fmt.Errorf("git: pack-%s.pack is corrupt or hostile: %w", h, stamp.err)
	}
	c.mu.Lock()
	if c.seen == nil {
		c.seen = map[string]packStamp{}
	}
	c.seen[name] = stamp
	c.mu.Unlock()
	return stamp.err
}

// verifyPack checks the delta chains of one pack.
func verifyPack(dg *dotgit.DotGit, h plumbing.Hash) error {
	idxFile, err := dg.ObjectPackIdx(h)
	if err != nil {
		return err
	}
	idx := idxfile.NewMemoryIndex()
	err = idxfile.NewDecoder(idxFile).Decode(idx)
	idxFile.Close()
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	pack, err := dg.ObjectPack(h)
	if err != nil {
		return err
	}
	defer pack.Close()
	ra, ok := pack.(io.ReaderAt)
	if !ok {
		return errors.New("the pack file cannot be read at offsets")
	}
	entries, err := idx.Entries()
	if err != nil {
		return err
	}
	base := map[int64]int64{} // delta offset → base offset (-1: a whole object, or one elsewhere)
	var offsets []int64
	for {
		e, err := entries.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		b, err := baseOf(ra, int64(e.Offset), idx)
		if err != nil {
			return fmt.Errorf("object %s at offset %d: %w", e.Hash, e.Offset, err)
		}
		base[int64(e.Offset)] = b
		offsets = append(offsets, int64(e.Offset))
	}
	entries.Close()
	// Each chain is walked once: depth memoizes what is known, onPath finds loops.
	depth := make(map[int64]int, len(offsets))
	for _, start := range offsets {
		var path []int64
		onPath := map[int64]bool{}
		d := 0
		for off := start; ; {
			if known, ok := depth[off]; ok {
				d = known
				break
			}
			b, ok := base[off]
			if !ok || b < 0 {
				d = 0 // a whole object, or a base this pack's index does not list (not followed)
				depth[off] = 0
				break
			}
			if onPath[off] {
				return fmt.Errorf("the delta at offset %d is its own base, through %d others", off, len(path)-1)
			}
			onPath[off] = true
			path = append(path, off)
			if len(path) > maxDeltaDepth {
				return fmt.Errorf("a delta chain from offset %d is deeper than %d", start, maxDeltaDepth)
			}
			off = b
		}
		for i := len(path) - 1; i >= 0; i-- {
			d++
			depth[path[i]] = d
		}
		if d > maxDeltaDepth {
			return fmt.Errorf("a delta chain from offset %d is deeper than %d", start, maxDeltaDepth)
		}
	}
	return nil
}

// baseOf reads the object header at off and returns the offset of its delta base, or -1 for a
// whole object or a base the index does not list.
func baseOf(ra io.ReaderAt, off int64, idx *idxfile.MemoryIndex) (int64, error) {
	var hdr [32]byte
	n, err := ra.ReadAt(hdr[:], off)
	if n == 0 && err != nil {
		return 0, err
	}
	b := hdr[:n]
	i := 0
	next := func() (byte, bool) {
		if i >= len(b) {
			return 0, false
		}
		i++
		return b[i-1], true
	}
	c, ok := next()
	if !ok {
		return 0, io.ErrUnexpectedEOF
	}
	typ := (c >> 4) & 7
	for c&0x80 != 0 { // the rest of the size
		if c, ok = next(); !ok {
			return 0, errors.New("truncated header")
		}
	}
	switch typ {
	case objOFSDelta:
		c, ok := next()
		if !ok {
			return 0, errors.New("truncated delta offset")
		}
		rel := int64(c & 0x7f)
		for c&0x80 != 0 {
			if c, ok = next(); !ok || rel > 1<<55 {
				return 0, errors.New("bad delta offset")
			}
			rel = (rel+1)<<7 | int64(c&0x7f)
		}
		if rel <= 0 || rel > off {
			return 0, fmt.Errorf("delta base offset %d is outside the pack", off-rel)
		}
		return off - rel, nil
	case objREFDelta:
		if i+20 > len(b) {
			return 0, errors.New("truncated base hash")
		}
		var h plumbing.Hash
		copy(h[:], b[i:i+20])
		o, err := idx.FindOffset(h)
		if err != nil {
			return -1, nil // go-git does not look elsewhere for it: the read fails, no recursion
		}
		return o, nil
	case 0, 5:
		return 0, fmt.Errorf("invalid object type %d", typ)
	}
	return -1, nil
}

// noAlternates is a git directory's file system with objects/info/alternates hidden.
type noAlternates struct{ billy.Filesystem }

func isAlternates(name string) bool {
	return strings.TrimPrefix(strings.ReplaceAll(name, "\\", "/"), "/") == "objects/info/alternates"
}

func (f noAlternates) Open(name string) (billy.File, error) {
	if isAlternates(name) {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	return f.Filesystem.Open(name)
}

func (f noAlternates) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	if isAlternates(name) {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	return f.Filesystem.OpenFile(name, flag, perm)
}

func (f noAlternates) Stat(name string) (os.FileInfo, error) {
	if isAlternates(name) {
		return nil, &os.PathError{Op: "stat", Path: name, Err: os.ErrNotExist}
	}
	return f.Filesystem.Stat(name)
}
