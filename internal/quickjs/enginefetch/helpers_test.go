package enginefetch

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeWasm stands for the module: enginefetch never interprets it.
var fakeWasm = append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Repeat([]byte("quickjs"), 1000)...)

type entry struct {
	name string
	body []byte
	typ  byte  // tar.TypeReg when 0
	size int64 // header size when not len(body); the body is then left out
}

// tarball builds a gzipped npm-style tarball.
func tarball(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: e.typ, ModTime: time.Unix(499162500, 0)}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeDir {
			h.Size, h.Linkname = 0, "../../etc/passwd"
		}
		if e.size != 0 {
			h.Size = e.size
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.size != 0 {
			// A header that lies about its size: stop here, the archive ends mid-member.
			zw.Close()
			return buf.Bytes()
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

// goodTarball is shaped like the real package.
func goodTarball(t testing.TB) []byte {
	return tarball(t,
		entry{name: "package/package.json", body: []byte(`{"name":"quickjs-wasi"}`)},
		entry{name: "package/dist/index.js", body: []byte("export {}")},
		entry{name: WasmEntry, body: fakeWasm},
	)
}

// pinFor pins a tarball and a module (the test's pin, injected through Options).
func pinFor(tgz, wasm []byte) Pin {
	s512 := sha512.Sum512(tgz)
	s256 := sha256.Sum256(wasm)
	return Pin{Package: "quickjs-wasi", Version: "3.7.0",
		Integrity:  "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
		WasmSHA256: hex.EncodeToString(s256[:])}
}

// registry is an httptest npm registry serving one tarball at the path npm uses.
type registry struct {
	*httptest.Server
	hits   atomic.Int32
	mu     sync.Mutex
	body   []byte
	status int
	gate   chan struct{} // when set, requests wait for it to close
}

func newRegistry(t testing.TB, body []byte) *registry {
	r := &registry{body: body, status: http.StatusOK}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/quickjs-wasi/-/quickjs-wasi-3.7.0.tgz" {
			http.NotFound(w, req)
			return
		}
		r.hits.Add(1)
		r.mu.Lock()
		body, status, gate := r.body, r.status, r.gate
		r.mu.Unlock()
		if gate != nil {
			<-gate
		}
		w.WriteHeader(status)
		w.Write(body)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *registry) options(t testing.TB, pin Pin) Options {
	c := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(c.CloseIdleConnections)
	return Options{Pin: pin, Dir: t.TempDir(), Registry: r.URL, Client: c}
}

// files lists every file under dir (the cache must hold nothing after a refused fetch).
func files(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// noLeaks fails when goroutines started during the test outlive it.
func noLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func readFile(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
