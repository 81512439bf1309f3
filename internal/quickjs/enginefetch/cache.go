package enginefetch

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// DefaultDir is the cache root used when Options.Dir is empty:
// <user cache dir>/codemode/engine ($XDG_CACHE_HOME or ~/.cache on Linux).
func DefaultDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "codemode", "engine"), nil
}

// CachePath is the file a pin's module is cached in under root:
// <root>/quickjs-wasi-3.7.0/quickjs.wasm.
func CachePath(root string, p Pin) string {
	return artifactPath(root, p, "quickjs.wasm")
}

// artifactPath is the file an artifact of a pin is cached in under root.
func artifactPath(root string, p Pin, file string) string {
	return filepath.Join(root, p.cacheName(), file)
}

// safeFileName admits plain file names only (no separators, no dot files).
func safeFileName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '.' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// errMismatch marks a cached file whose hash is not the pinned one.
var errMismatch = errors.New("does not match the pinned sha256")

// readVerified returns the cached module if it exists and hashes to want. A missing file is
// fs.ErrNotExist; a file of the wrong size or content is errMismatch and is never returned.
func readVerified(file string, want [sha256.Size]byte) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() <= 0 || st.Size() > MaxWasmBytes {
		return nil, errMismatch
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxWasmBytes+1))
	if err != nil {
		return nil, err
	}
	if sha256.Sum256(b) != want {
		return nil, errMismatch
	}
	return b, nil
}

// writeAtomic puts b at file through a temporary file in the same directory and a rename, so a
// concurrent reader (another process starting up) sees either no file or the whole file, and
// two writers of the same verified bytes cannot interleave.
func writeAtomic(file string, b []byte) (err error) {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(b); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("rename: %w", err)
	}
	return nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
