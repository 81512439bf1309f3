package builtin

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// workspace is the root directory of the file tools.
type workspace struct {
	abs  string // the configured root, absolute and clean
	real string // abs with symlinks resolved; all access goes through an os.Root opened here
}

func newWorkspace(dir string) (*workspace, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("builtin: workspace %q: %v", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("builtin: workspace %s: %v", abs, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("builtin: workspace %s: %v", abs, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("builtin: workspace %s is not a directory", abs)
	}
	return &workspace{abs: abs, real: real}, nil
}

// open opens the workspace root. Callers close it.
func (w *workspace) open(tool string) (*os.Root, error) {
	r, err := os.OpenRoot(w.real)
	if err != nil {
		return nil, fmt.Errorf("%s: the workspace is not accessible: %v", tool, errText(err))
	}
	return r, nil
}

// wsPath is a path inside the workspace, in two forms.
type wsPath struct {
	// show is the path as the caller named it, cleaned and relative to the workspace root with
	// forward slashes ("." for the root). Results and error messages use it.
	show string
	// rel is the path with every symlink of its existing prefix resolved, relative to the
	// resolved root in OS form ("." for the root). File system calls use it.
	rel string
}

// lexical cleans p and makes it relative to the root, refusing paths that leave it without
// looking at the file system: ".." escapes and absolute paths outside the root.
func (w *workspace) lexical(tool, p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%s: path %q contains a NUL byte", tool, p)
	}
	if len(p) > 4096 {
		return "", fmt.Errorf("%s: path is %d bytes long (limit 4096)", tool, len(p))
	}
	c := filepath.Clean(p)
	if filepath.IsAbs(c) {
		for _, base := range []string{w.abs, w.real} {
			if rel, ok := within(base, c); ok {
				return rel, nil
			}
		}
		return "", fmt.Errorf("%s: %s is outside the workspace", tool, p)
	}
	if c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s: %s is outside the workspace", tool, p)
	}
	return c, nil
}

// resolve turns a caller's path into a wsPath. The longest existing prefix of the path is
// resolved with filepath.EvalSymlinks and must stay inside the workspace; the rest (names that
// do not exist yet) is appended unchanged. A dangling symlink is refused, since what it would
// create cannot be checked.
func (w *workspace) resolve(tool, p string) (wsPath, error) {
	lex, err := w.lexical(tool, p)
	if err != nil {
		return wsPath{}, err
	}
	show := filepath.ToSlash(lex)
	cur := filepath.Join(w.real, lex)
	var rest []string
	for {
		_, err := os.Lstat(cur)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return wsPath{}, pathErr(tool, show, err)
		}
		if cur == w.real {
			return wsPath{}, fmt.Errorf("%s: the workspace %s no longer exists", tool, w.abs)
		}
		rest = append(rest, filepath.Base(cur))
		cur = filepath.Dir(cur)
	}
	real, err := filepath.EvalSymlinks(cur)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return wsPath{}, fmt.Errorf("%s: %s goes through a symlink whose target does not exist", tool, show)
		}
		return wsPath{}, pathErr(tool, show, err)
	}
	rel, ok := within(w.real, real)
	if !ok {
		return wsPath{}, fmt.Errorf("%s: %s resolves outside the workspace (through a symlink)", tool, show)
	}
	for i := len(rest) - 1; i >= 0; i-- {
		rel = filepath.Join(rel, rest[i])
	}
	return wsPath{show: show, rel: rel}, nil
}

// within returns target relative to base when target is base or below it.
func within(base, target string) (string, bool) {
	rel, err := filepath.Rel(base, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// joinShow joins a shown path and a slash-separated suffix.
func joinShow(show, suffix string) string {
	if show == "." {
		return suffix
	}
	if suffix == "" || suffix == "." {
		return show
	}
	return show + "/" + suffix
}

// toolError is an error about one path; it wraps the underlying error for errors.Is.
type toolError struct {
	msg string
	err error
}

func (e *toolError) Error() string { return e.msg }
func (e *toolError) Unwrap() error { return e.err }

// pathErr describes a file system error about the path shown, without the host path.
func pathErr(tool, show string, err error) error {
	return &toolError{msg: tool + ": " + show + ": " + errText(err), err: err}
}

// errText is a short description of a file system error.
func errText(err error) string {
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

// statFile returns the file info of an existing regular file, or an error that says why p is
// not one. exists is false (with a nil error) when nothing is at p.
func statFile(tool string, root *os.Root, p wsPath) (fi fs.FileInfo, exists bool, err error) {
	fi, err = root.Stat(p.rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, pathErr(tool, p.show, err)
	}
	if fi.IsDir() {
		return nil, true, fmt.Errorf("%s: %s is a directory", tool, p.show)
	}
	if !fi.Mode().IsRegular() {
		return nil, true, fmt.Errorf("%s: %s is not a regular file", tool, p.show)
	}
	return fi, true, nil
}

// openRegular opens an existing regular file for reading. The type is checked before the
// file is opened (opening a FIFO would block) and again on the open file.
func openRegular(tool string, root *os.Root, p wsPath) (*os.File, fs.FileInfo, error) {
	check := func(fi fs.FileInfo) error {
		if fi.IsDir() {
			return fmt.Errorf("%s: %s is a directory", tool, p.show)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: %s is not a regular file", tool, p.show)
		}
		return nil
	}
	fi, err := root.Stat(p.rel)
	if err != nil {
		return nil, nil, pathErr(tool, p.show, err)
	}
	if err := check(fi); err != nil {
		return nil, nil, err
	}
	f, err := root.Open(p.rel)
	if err != nil {
		return nil, nil, pathErr(tool, p.show, err)
	}
	if fi, err = f.Stat(); err == nil {
		err = check(fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// readSmallFile reads an existing regular text file of at most limit bytes.
func readSmallFile(tool string, root *os.Root, p wsPath, limit int64) ([]byte, fs.FileInfo, error) {
	f, fi, err := openRegular(tool, root, p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, nil, fmt.Errorf("%s: %s is %d bytes (limit %d)", tool, p.show, fi.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, pathErr(tool, p.show, err)
	}
	if int64(len(data)) > limit {
		return nil, nil, fmt.Errorf("%s: %s is larger than %d bytes", tool, p.show, limit)
	}
	if isBinary(data) {
		return nil, nil, fmt.Errorf("%s: %s is a binary file", tool, p.show)
	}
	return data, fi, nil
}

// isBinary reports whether data looks binary: a NUL byte in its first binarySniff bytes.
func isBinary(data []byte) bool {
	return strings.IndexByte(string(data[:min(len(data), binarySniff)]), 0) >= 0
}

// tempFile is a file written next to its destination, waiting to be renamed over it.
type tempFile struct {
	tmp, dst string // OS-form paths relative to the root
}

// writeTemp writes data to a new temporary file in the directory of dst. mode is the
// permission of the file it replaces; 0 means a new file (created 0666 less the umask), and
// exec adds execute bits where read bits are set.
func writeTemp(root *os.Root, dst string, data []byte, mode fs.FileMode, execBits bool) (*tempFile, error) {
	dir, base := filepath.Split(dst)
	var f *os.File
	var tmp string
	for range 10 {
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		tmp = filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(rnd[:]))
		var err error
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	if f == nil {
		return nil, errors.New("cannot create a temporary file")
	}
	fail := func(err error) (*tempFile, error) {
		f.Close()
		_ = root.Remove(tmp)
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if mode == 0 && execBits {
		if fi, err := f.Stat(); err == nil {
			mode = fi.Mode().Perm()
		}
	}
	if execBits {
		mode |= (mode & 0o444) >> 2
	}
	if mode != 0 {
		if err := f.Chmod(mode.Perm()); err != nil {
			return fail(err)
		}
	}
	if err := f.Close(); err != nil {
		_ = root.Remove(tmp)
		return nil, err
	}
	return &tempFile{tmp: tmp, dst: dst}, nil
}

// commit renames the temporary file over its destination.
func (t *tempFile) commit(root *os.Root) error {
	if err := root.Rename(t.tmp, t.dst); err != nil {
		_ = root.Remove(t.tmp)
		return err
	}
	return nil
}

// discard removes the temporary file.
func (t *tempFile) discard(root *os.Root) { _ = root.Remove(t.tmp) }

// writeAtomic replaces (or creates) dst with data.
func writeAtomic(root *os.Root, dst string, data []byte, mode fs.FileMode) error {
	t, err := writeTemp(root, dst, data, mode, false)
	if err != nil {
		return err
	}
	return t.commit(root)
}
