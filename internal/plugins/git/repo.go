package git

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/codemode-go/codemode/internal/confine"
	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// Bounds of the repository layer.
const (
	// largeObjectBytes: objects above it are streamed from disk by go-git instead of being
	// decompressed into memory and cached.
	largeObjectBytes = 1 << 20
	// objectCacheBytes is each call's object cache (go-git's storage is not safe for
	// concurrent use, so every call opens its own).
	objectCacheBytes = 32 << 20
	maxRevBytes      = 256
)

// layout is where the repository lives, fixed when it is first located.
type layout struct {
	wsAbs    string // the workspace as configured, absolute
	wsReal   string // the workspace with symlinks resolved
	worktree string // the worktree root (real path)
	gitDir   string // the repository's git directory (real path)
	common   string // the common git directory of a linked worktree, or ""
	// scope is the workspace relative to the worktree root, slash-separated ("" when the
	// workspace is the worktree root). Results are confined to it.
	scope string
	// packs remembers which pack files passed the delta-chain check (packcheck.go).
	packs packChecks
}

// plugin is the state the tools share.
type plugin struct {
	opts Options

	once sync.Once
	lay  *layout
	err  error
}

// notRepoError says the workspace is not inside a git repository.
type notRepoError struct{ ws string }

func (e *notRepoError) Error() string {
	return fmt.Sprintf("the workspace %s is not inside a git repository (no .git in it or its parent directories when the gateway started; restart it after `git init`)", e.ws)
}

// locate finds the repository once. Locating it again on later calls would let a `.git` file
// written into the workspace afterwards redirect the tools to any repository on the machine.
func (p *plugin) locate() (*layout, error) {
	p.once.Do(func() { p.lay, p.err = findLayout(p.opts.Workspace) })
	return p.lay, p.err
}

func findLayout(ws string) (*layout, error) {
	root, err := confine.New(ws)
	if err != nil {
		return nil, fmt.Errorf("git: %w", err)
	}
	lay := &layout{wsAbs: root.Abs, wsReal: root.Real}
	for dir := root.Real; ; {
		fi, err := os.Lstat(filepath.Join(dir, ".git"))
		if err == nil {
			lay.worktree = dir
			if err := lay.readDotGit(filepath.Join(dir, ".git"), fi); err != nil {
				return nil, err
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("git: %s: %v", filepath.Join(dir, ".git"), confine.Describe(err))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil, &notRepoError{ws: root.Abs}
		}
		dir = parent
	}
	rel, err := filepath.Rel(lay.worktree, root.Real)
	if err != nil {
		return nil, err
	}
	if rel != "." {
		lay.scope = filepath.ToSlash(rel)
	}
	// Open once to report a broken repository at start rather than on every call.
	r, err := lay.open()
	if err != nil {
		return nil, err
	}
	r.close()
	return lay, nil
}

// readDotGit resolves .git: a directory, or a file `gitdir: <path>` (linked worktrees and
// submodules), whose git directory may name a common directory in its `commondir` file.
func (l *layout) readDotGit(dotGit string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		l.gitDir = dotGit
	case fi.Mode().IsRegular():
		b, err := readSmall(dotGit, 4096)
		if err != nil {
			return fmt.Errorf("git: %s: %v", dotGit, err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
		if !ok {
			return fmt.Errorf("git: %s is a file without a `gitdir:` line", dotGit)
		}
		target = strings.TrimSpace(target)
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(dotGit), target)
		}
		l.gitDir = target
	default:
		return fmt.Errorf("git: %s is neither a directory nor a file", dotGit)
	}
	real, err := filepath.EvalSymlinks(l.gitDir)
	if err != nil {
		return fmt.Errorf("git: git directory %s: %v", l.gitDir, confine.Describe(err))
	}
	l.gitDir = real
	b, err := readSmall(filepath.Join(l.gitDir, "commondir"), 4096)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("git: %s: %v", filepath.Join(l.gitDir, "commondir"), err)
	default:
		common := strings.TrimSpace(string(b))
		if !filepath.IsAbs(common) {
			common = filepath.Join(l.gitDir, common)
		}
		if l.common, err = filepath.EvalSymlinks(common); err != nil {
			return fmt.Errorf("git: common git directory %s: %v", common, confine.Describe(err))
		}
	}
	return nil
}

func readSmall(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// repo is one call's view of the repository.
type repo struct {
	*layout
	r  *gogit.Repository
	wt billy.Filesystem // the worktree, bound to its root
	st *filesystem.Storage
}

// open opens the repository for one call. The worktree file system is bound to its root: a
// symlink in the worktree cannot lead the tools elsewhere. The git directories use billy's
// chroot file system, as go-git's PlainOpen does: go-git reopens pack files by the name the
// file system gave them, which only the chroot file system keeps relative (with the bound one
// a linked worktree's large objects resolve to the wrong directory). Paths that climb out of
// a chroot are refused by billy.
func (l *layout) open() (*repo, error) {
	var dot billy.Filesystem = osfs.New(l.gitDir)
	if l.common != "" {
		dot = dotgit.NewRepositoryFilesystem(dot, osfs.New(l.common))
	}
	// A hostile repository must not make go-git recurse without end (packcheck.go): no
	// alternates, and every pack's delta chains checked before go-git reads them.
	dot = noAlternates{dot}
	if err := l.packs.check(dot); err != nil {
		return nil, fmt.Errorf("git: cannot read the repository at %s: %v", l.worktree, strings.TrimPrefix(err.Error(), "git: "))
	}
	// KeepDescriptors: pack files stay open for the call instead of being reopened for every
	// object (a 100-commit log took 5× longer); close releases them.
	st := filesystem.NewStorageWithOptions(dot, cache.NewObjectLRU(objectCacheBytes),
		filesystem.Options{LargeObjectThreshold: largeObjectBytes, KeepDescriptors: true})
	wt := osfs.New(l.worktree, osfs.WithBoundOS())
	r, err := gogit.Open(st, wt)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("git: cannot open the repository at %s: %v", l.worktree, err)
	}
	return &repo{layout: l, r: r, wt: wt, st: st}, nil
}

// close releases the call's open pack files.
func (r *repo) close() { _ = r.st.Close() }

// open locates (once) and opens the repository for a call of tool.
func (p *plugin) open(tool string) (*repo, error) {
	l, err := p.locate()
	if err != nil {
		return nil, fmt.Errorf("%s: %s", tool, strings.TrimPrefix(err.Error(), "git: "))
	}
	r, err := l.open()
	if err != nil {
		return nil, fmt.Errorf("%s: %s", tool, strings.TrimPrefix(err.Error(), "git: "))
	}
	return r, nil
}

// openPath opens the repository for a call of tool and turns the call's path into a
// repository path (repoPath). Callers close the repository.
func (p *plugin) openPath(tool, name string) (*repo, string, error) {
	r, err := p.open(tool)
	if err != nil {
		return nil, "", err
	}
	rp, err := r.repoPath(tool, name)
	if err != nil {
		r.close()
		return nil, "", err
	}
	return r, rp, nil
}

// repoPath turns a caller's path (relative to the workspace, or absolute inside it) into a
// slash-separated path relative to the worktree root ("" for the whole repository). It
// refuses `..` escapes, absolute paths outside the workspace, and paths whose existing prefix
// resolves through a symlink to a place outside the workspace (confine.Root.Check: the path
// need not exist in the worktree, only in history). The path is a tree path, as in git: a
// symlink inside the workspace is not resolved.
func (l *layout) repoPath(tool, p string) (string, error) {
	cp, err := confine.Root{Abs: l.wsAbs, Real: l.wsReal}.Check(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	if cp.Show == "." {
		return l.scope, nil
	}
	return path.Join(l.scope, cp.Show), nil
}

// show turns a repository path into the path shown to the caller (relative to the workspace);
// ok is false for paths outside the workspace.
func (l *layout) show(repoPath string) (string, bool) {
	if l.scope == "" {
		return repoPath, true
	}
	rest, ok := strings.CutPrefix(repoPath, l.scope+"/")
	return rest, ok
}

// inScope reports whether a repository path lies under prefix ("" matches everything).
func inScope(prefix, p string) bool {
	return prefix == "" || p == prefix || strings.HasPrefix(p, prefix+"/")
}

// resolve turns a revision (hash, short hash, branch or tag name, HEAD~n, …) into a commit.
func (r *repo) resolve(tool, rev string) (*object.Commit, error) {
	if rev == "" {
		rev = "HEAD"
	}
	if len(rev) > maxRevBytes {
		return nil, fmt.Errorf("%s: revision is %d bytes long (limit %d)", tool, len(rev), maxRevBytes)
	}
	if strings.HasPrefix(rev, "-") || strings.ContainsAny(rev, "\x00\n\r") {
		return nil, fmt.Errorf("%s: %q is not a revision", tool, rev)
	}
	h, err := r.r.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		if rev == "HEAD" {
			if _, herr := r.r.Head(); errors.Is(herr, plumbing.ErrReferenceNotFound) {
				return nil, fmt.Errorf("%s: the repository has no commits yet", tool)
			}
		}
		return nil, fmt.Errorf("%s: unknown revision %q (use a commit hash, a branch or tag name, or HEAD~n)", tool, rev)
	}
	c, err := r.r.CommitObject(*h)
	if err != nil {
		return nil, fmt.Errorf("%s: revision %q is not a commit: %v", tool, rev, err)
	}
	return c, nil
}
