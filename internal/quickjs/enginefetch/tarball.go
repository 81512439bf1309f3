package enginefetch

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// Bounds on what a registry can make us read. The real tarball is ≈0.6 MB, 1.6 MB unpacked, with
// a 0.6 MB module; the bounds leave room for growth and nothing for a bomb.
const (
	MaxTarballBytes  = 32 << 20
	MaxUnpackedBytes = 128 << 20
	MaxWasmBytes     = 32 << 20
)

// WasmEntry is the one tarball member we take.
const WasmEntry = "package/quickjs.wasm"

var errTooLarge = errors.New("more data than allowed")

// maxUnpacked is MaxUnpackedBytes, lowered by tests so a bomb is cheap to build.
var maxUnpacked int64 = MaxUnpackedBytes

// limitedReader is io.LimitReader that fails instead of pretending the stream ended, so a bomb is
// reported as one rather than as a corrupt archive.
type limitedReader struct {
	r io.Reader
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// extractWasm returns the content of package/quickjs.wasm from a gzipped npm tarball.
func extractWasm(tgz []byte) ([]byte, error) {
	m, err := extractMembers(tgz, []string{WasmEntry}, MaxWasmBytes)
	if err != nil {
		return nil, err
	}
	return m[WasmEntry], nil
}

// extractMembers returns the content of the named members of a gzipped npm tarball. Callers
// verify the tarball's integrity first; the checks here are a second line, for a pin that is
// wrong or a tarball that is hostile anyway: every member name must be a plain relative path, the
// members must each be one regular file within maxEach bytes, every one must be present, and the
// unpacked stream must stay within MaxUnpackedBytes. Nothing is ever written to disk under a
// member's name.
func extractMembers(tgz []byte, names []string, maxEach int64) (map[string][]byte, error) {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	got := make(map[string][]byte, len(names))
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, fmt.Errorf("tarball is not gzip: %v", err)
	}
	zr.Multistream(false)
	tr := tar.NewReader(&limitedReader{r: zr, n: maxUnpacked})
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, tarError(err)
		}
		if name := strings.TrimSuffix(hdr.Name, "/"); !fs.ValidPath(name) || strings.Contains(name, `\`) {
			return nil, fmt.Errorf("tarball member %q has an unsafe path", hdr.Name)
		}
		if !want[hdr.Name] {
			continue
		}
		if got[hdr.Name] != nil {
			return nil, fmt.Errorf("tarball has %s twice", hdr.Name)
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("tarball member %s is not a regular file", hdr.Name)
		}
		if hdr.Size <= 0 || hdr.Size > maxEach {
			return nil, fmt.Errorf("tarball member %s has size %d (limit %d bytes)", hdr.Name, hdr.Size, maxEach)
		}
		b := make([]byte, hdr.Size)
		if _, err := io.ReadFull(tr, b); err != nil {
			return nil, tarError(err)
		}
		got[hdr.Name] = b
	}
	for _, n := range names {
		if got[n] == nil {
			return nil, fmt.Errorf("tarball has no %s", n)
		}
	}
	return got, nil
}

func tarError(err error) error {
	if errors.Is(err, errTooLarge) {
		return fmt.Errorf("tarball unpacks to more than %d bytes", maxUnpacked)
	}
	return fmt.Errorf("tarball is corrupt: %v", err)
}
