// Package confine resolves the paths a cell names against a root directory — the workspace —
// and refuses those that lead out of it: ".." escapes, absolute paths elsewhere, and paths
// whose existing prefix resolves through a symlink to a place outside the root. The built-in
// file tools and the git plugin confine their path inputs with it; messages call the root
// "the workspace".
//
// The check is made on the file system as it is when the path is resolved. Callers that then
// access files must not follow symlinks out of the root on their own (the built-in tools go
// through an os.Root, the git plugin through a file system bound to the worktree), so that a
// symlink swapped in after the check cannot lead outside either.
package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// MaxPathBytes bounds a path a caller may name.
const MaxPathBytes = 4096

// Root is a directory paths are confined to.
type Root struct {
	Abs  string // the directory as configured, absolute and clean
	Real string // Abs with every symlink resolved
}

// New returns the root for dir ("" is the current directory; a relative path is relative to
// it), which must be an existing directory. Errors start with "workspace".
func New(dir string) (Root, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Root{}, fmt.Errorf("workspace %q: %v", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Root{}, fmt.Errorf("workspace %s: %s", abs, Describe(err))
	}
	fi, err := os.Stat(real)
	if err != nil {
		return Root{}, fmt.Errorf("workspace %s: %s", abs, Describe(err))
	}
	if !fi.IsDir() {
		return Root{}, fmt.Errorf("workspace %s is not a directory", abs)
	}
	return Root{Abs: abs, Real: real}, nil
}

// Path is a path inside the root, in two forms.
type Path struct {
	// Show is the path as the caller named it, cleaned and relative to the root with forward
	// slashes ("." for the root). Results and messages use it.
	Show string
	// Rel is the path with every symlink of its existing prefix resolved, relative to Real in
	// OS form ("." for the root). File system calls use it.
	Rel string
}

// Lexical cleans p and makes it relative to the root (OS form, "." for the root), refusing
// paths that leave it without looking at the file system: ".." escapes and absolute paths
// outside the root (as configured or resolved).
func (r Root) Lexical(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	if len(p) > MaxPathBytes {
		return "", fmt.Errorf("path is %d bytes long (limit %d)", len(p), MaxPathBytes)
	}
	c := filepath.Clean(p)
	if filepath.IsAbs(c) {
		for _, base := range []string{r.Abs, r.Real} {
			if rel, ok := Within(base, c); ok {
				return rel, nil
			}
		}
		return "", fmt.Errorf("%s is outside the workspace", p)
	}
	if c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the workspace", p)
	}
	return c, nil
}

// Resolve turns a caller's path into a Path for file system access. The longest existing
// prefix of the path is resolved with filepath.EvalSymlinks and must stay inside the root; the
// rest (names that do not exist yet) is appended unchanged. A component that exists but cannot
// be examined is an error, and so is a dangling symlink, since what it would lead to cannot be
// checked.
func (r Root) Resolve(p string) (Path, error) { return r.resolve(p, false) }

// Check is Resolve for a path that names something that need not exist now, such as a
// repository path only history has: a component that cannot be examined (a file where history
// had a directory) ends the walk like a missing one instead of failing it. What exists is
// confined the same way.
func (r Root) Check(p string) (Path, error) { return r.resolve(p, true) }

func (r Root) resolve(p string, lenient bool) (Path, error) {
	lex, err := r.Lexical(p)
	if err != nil {
		return Path{}, err
	}
	show := filepath.ToSlash(lex)
	cur := filepath.Join(r.Real, lex)
	var rest []string
	for {
		_, err := os.Lstat(cur)
		if err == nil {
			break
		}
		missing := errors.Is(err, fs.ErrNotExist)
		if !missing && (!lenient || cur == r.Real) {
			return Path{}, &PathError{Path: show, Err: err}
		}
		if cur == r.Real {
			return Path{}, fmt.Errorf("the workspace %s no longer exists", r.Abs)
		}
		rest = append(rest, filepath.Base(cur))
		cur = filepath.Dir(cur)
	}
	real, err := filepath.EvalSymlinks(cur)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Path{}, fmt.Errorf("%s goes through a symlink whose target does not exist", show)
		}
		return Path{}, &PathError{Path: show, Err: err}
	}
	rel, ok := Within(r.Real, real)
	if !ok {
		return Path{}, fmt.Errorf("%s resolves outside the workspace (through a symlink)", show)
	}
	for i := len(rest) - 1; i >= 0; i-- {
		rel = filepath.Join(rel, rest[i])
	}
	return Path{Show: show, Rel: rel}, nil
}

// Within returns target relative to base when target is base or below it.
func Within(base, target string) (string, bool) {
	rel, err := filepath.Rel(base, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// PathError is a file system error about a path as the caller named it. Its message does not
// show the host path; Unwrap gives the underlying error for errors.Is.
type PathError struct {
	Path string // as shown to the caller
	Err  error
}

func (e *PathError) Error() string { return e.Path + ": " + Describe(e.Err) }
func (e *PathError) Unwrap() error { return e.Err }

// Describe is a short description of a file system error, without the host paths the os
// package puts in its messages.
func Describe(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, syscall.ENOTDIR):
		return "not a directory"
	case errors.Is(err, syscall.EISDIR):
		return "is a directory"
	case errors.Is(err, syscall.ELOOP):
		return "too many levels of symlinks"
	case strings.Contains(err.Error(), "path escapes from parent"):
		return "resolves outside the workspace"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}
