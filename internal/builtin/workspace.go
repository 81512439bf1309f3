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

	"github.com/codemode-go/codemode/internal/confine"
)

// workspace is the root directory of the file tools. Paths are confined to it by
// confine.Root.Resolve; all access then goes through an os.Root opened on its resolved path.
type workspace struct{ confine.Root }

func newWorkspace(dir string) (*workspace, error) {
	r, err := confine.New(dir)
	if err != nil {
		return nil, fmt.Errorf("builtin: %w", err)
	}
	return &workspace{r}, nil
}

// open opens the workspace root. Callers close it.
func (w *workspace) open(tool string) (*os.Root, error) {
	r, err := os.OpenRoot(w.Real)
	if err != nil {
		return nil, fmt.Errorf("%s: the workspace is not accessible: %v", tool, confine.Describe(err))
	}
	return r, nil
}

// resolve turns a caller's path into a confine.Path (confine.Root.Resolve), errors prefixed
// with the tool's name.
func (w *workspace) resolve(tool, p string) (confine.Path, error) {
	cp, err := w.Resolve(p)
	if err != nil {
		return confine.Path{}, fmt.Errorf("%s: %w", tool, err)
	}
	return cp, nil
}

// openPath resolves a caller's path and opens the workspace root for it. Callers close the
// root.
func (w *workspace) openPath(tool, p string) (*os.Root, confine.Path, error) {
	cp, err := w.resolve(tool, p)
	if err != nil {
		return nil, confine.Path{}, err
	}
	root, err := w.open(tool)
	if err != nil {
		return nil, confine.Path{}, err
	}
	return root, cp, nil
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

// pathErr describes a file system error about the path shown, without the host path; it
// wraps err for errors.Is.
func pathErr(tool, show string, err error) error {
	return fmt.Errorf("%s: %w", tool, &confine.PathError{Path: show, Err: err})
}

// statFile returns the file info of an existing regular file, or an error that says why p is
// not one. exists is false (with a nil error) when nothing is at p.
func statFile(tool string, root *os.Root, p confine.Path) (fi fs.FileInfo, exists bool, err error) {
	fi, err = root.Stat(p.Rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, pathErr(tool, p.Show, err)
	}
	if err := checkRegular(tool, p, fi); err != nil {
		return nil, true, err
	}
	return fi, true, nil
}

// checkRegular says why fi, the file at p, is not a regular file (nil when it is one).
func checkRegular(tool string, p confine.Path, fi fs.FileInfo) error {
	if fi.IsDir() {
		return fmt.Errorf("%s: %s is a directory", tool, p.Show)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %s is not a regular file", tool, p.Show)
	}
	return nil
}

// openRegular opens an existing regular file for reading. The type is checked before the
// file is opened (opening a FIFO would block) and again on the open file.
func openRegular(tool string, root *os.Root, p confine.Path) (*os.File, fs.FileInfo, error) {
	fi, err := root.Stat(p.Rel)
	if err != nil {
		return nil, nil, pathErr(tool, p.Show, err)
	}
	if err := checkRegular(tool, p, fi); err != nil {
		return nil, nil, err
	}
	f, err := root.Open(p.Rel)
	if err != nil {
		return nil, nil, pathErr(tool, p.Show, err)
	}
	if fi, err = f.Stat(); err == nil {
		err = checkRegular(tool, p, fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// readSmallFile reads an existing regular text file of at most limit bytes.
func readSmallFile(tool string, root *os.Root, p confine.Path, limit int64) ([]byte, fs.FileInfo, error) {
	f, fi, err := openRegular(tool, root, p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, nil, fmt.Errorf("%s: %s is %d bytes (limit %d)", tool, p.Show, fi.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, pathErr(tool, p.Show, err)
	}
	if int64(len(data)) > limit {
		return nil, nil, fmt.Errorf("%s: %s is larger than %d bytes", tool, p.Show, limit)
	}
	if isBinary(data) {
		return nil, nil, fmt.Errorf("%s: %s is a binary file", tool, p.Show)
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
