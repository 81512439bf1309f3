package quickjs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/codemode-go/codemode/internal/quickjs/enginefetch"
)

// realWasm is the embedded module (the tests of this package need `make wasm` anyway).
func realWasm(t *testing.T) []byte {
	t.Helper()
	b := embeddedWasm()
	if len(b) == 0 {
		t.Fatal("QuickJS module not embedded (run `make wasm`)")
	}
	return b
}

// isolate clears the environment Load reads and restores the test hooks afterwards.
func isolate(t *testing.T) {
	for _, k := range []string{EnvWasmPath, EnvFetch, enginefetch.EnvRegistry, "npm_config_registry", "NPM_CONFIG_REGISTRY"} {
		t.Setenv(k, "")
	}
	emb, pin := embeddedWasm, testPin
	t.Cleanup(func() { embeddedWasm, testPin = emb, pin })
}

// withoutEmbedded pretends the binary was built without `make` (the `go install` case).
func withoutEmbedded() { embeddedWasm = func() []byte { return nil } }

// fakeRegistry serves a tarball holding wasm, and pins it through testPin.
type fakeRegistry struct {
	*httptest.Server
	hits atomic.Int32
}

// fakeTarball is built once: gzip under -race costs a noticeable fraction of a second.
var fakeTarball = sync.OnceValue(func() []byte {
	wasm := embeddedWasm()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "package/quickjs.wasm", Mode: 0o644, Size: int64(len(wasm)), Typeflag: tar.TypeReg})
	tw.Write(wasm)
	tw.Close()
	zw.Close()
	return buf.Bytes()
})

func newFakeRegistry(t *testing.T, wasm []byte, status int) *fakeRegistry {
	t.Helper()
	tgz := fakeTarball()
	s512, s256 := sha512.Sum512(tgz), sha256.Sum256(wasm)
	testPin = &PackageInfo{Package: "quickjs-wasi", Version: "3.7.0",
		Integrity: "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), WasmSHA256: hex.EncodeToString(s256[:])}
	r := &fakeRegistry{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		if req.URL.Path != "/quickjs-wasi/-/quickjs-wasi-3.7.0.tgz" {
			http.NotFound(w, req)
			return
		}
		w.WriteHeader(status)
		w.Write(tgz)
	}))
	t.Cleanup(r.Close)
	return r
}

func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "quickjs.wasm")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadOrder(t *testing.T) { // bytes → file → $CODEMODE_QUICKJS_WASM → embedded → cache → fetch
	wasm := realWasm(t)
	cases := []struct {
		name string
		// setup returns the options and whether the registry may be asked.
		setup     func(t *testing.T, reg *fakeRegistry) ModuleOptions
		source    string
		downloads int32
	}{
		{"bytes before everything", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			t.Setenv(EnvWasmPath, "/nonexistent")
			return ModuleOptions{Wasm: wasm, WasmFile: "/nonexistent"}
		}, "ModuleOptions.Wasm", 0},
		{"file before the environment", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			t.Setenv(EnvWasmPath, "/nonexistent")
			return ModuleOptions{WasmFile: writeTemp(t, wasm)}
		}, "quickjs.wasm", 0},
		{"environment before embedded", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			p := writeTemp(t, wasm)
			t.Setenv(EnvWasmPath, p)
			return ModuleOptions{}
		}, "quickjs.wasm", 0},
		{"embedded before cache and fetch", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			return ModuleOptions{EngineDir: t.TempDir(), Registry: reg.URL}
		}, "embedded", 0},
		{"cache before fetch", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			withoutEmbedded()
			dir := t.TempDir()
			p := enginefetch.CachePath(dir, Pinned())
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, wasm, 0o644)
			return ModuleOptions{EngineDir: dir, Registry: reg.URL}
		}, "engine cache or download", 0},
		{"fetch last", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			withoutEmbedded()
			return ModuleOptions{EngineDir: t.TempDir(), Registry: reg.URL}
		}, "engine cache or download", 1},
		{"fetch through $CODEMODE_NPM_REGISTRY", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			withoutEmbedded()
			t.Setenv(enginefetch.EnvRegistry, reg.URL)
			return ModuleOptions{EngineDir: t.TempDir()}
		}, "engine cache or download", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			isolate(t)
			reg := newFakeRegistry(t, wasm, http.StatusOK)
			opts := c.setup(t, reg)
			m, err := Load(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close(context.Background())
			if !strings.Contains(m.Source, c.source) {
				t.Fatalf("source %q, want %q", m.Source, c.source)
			}
			if got := reg.hits.Load(); got != c.downloads {
				t.Fatalf("%d downloads, want %d", got, c.downloads)
			}
			vm, err := m.NewVM(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer vm.Close()
			if got := evalString(t, vm, "String(1 + 1)"); got != "2" {
				t.Fatal(got)
			}
			if c.downloads > 0 {
				cached, err := os.ReadFile(enginefetch.CachePath(opts.EngineDir, Pinned()))
				if err != nil || !bytes.Equal(cached, wasm) {
					t.Fatalf("not cached: %v", err)
				}
			}
		})
	}
}

func TestLoadFailsClosed(t *testing.T) { // Z2: no engine → ErrUnavailable with a message that says what to do
	wasm := realWasm(t)
	offline := []string{EnvWasmPath, "quickjs-wasi@3.7.0"}
	cases := []struct {
		name  string
		setup func(t *testing.T, reg *fakeRegistry) ModuleOptions
		want  []string
	}{
		{"NoFetch, nothing cached", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			withoutEmbedded()
			return ModuleOptions{EngineDir: t.TempDir(), Registry: reg.URL, NoFetch: true}
		}, append([]string{"fetching it is off", "no verified copy"}, offline...)},
		{"$CODEMODE_QUICKJS_FETCH=0", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			withoutEmbedded()
			t.Setenv(EnvFetch, "0")
			return ModuleOptions{EngineDir: t.TempDir(), Registry: reg.URL}
		}, append([]string{"fetching it is off"}, offline...)},
		{"NoFetch, tampered cache", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			withoutEmbedded()
			dir := t.TempDir()
			p := enginefetch.CachePath(dir, Pinned())
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, append(bytes.Clone(wasm), 0), 0o644)
			return ModuleOptions{EngineDir: dir, Registry: reg.URL, NoFetch: true}
		}, append([]string{"does not match"}, offline...)},
		{"registry down", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			withoutEmbedded()
			reg.Close()
			return ModuleOptions{EngineDir: t.TempDir(), Registry: reg.URL}
		}, append([]string{"fetching it failed", enginefetch.EnvRegistry}, offline...)},
		{"stale embedded module", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			embeddedWasm = func() []byte { return []byte("\x00asm\x01\x00\x00\x00") }
			return ModuleOptions{EngineDir: t.TempDir(), Registry: reg.URL}
		}, []string{"make wasm"}},
		{"missing file", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			return ModuleOptions{WasmFile: filepath.Join(t.TempDir(), "nope.wasm")}
		}, []string{"nope.wasm"}},
		{"huge file", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			p := writeTemp(t, nil)
			os.Truncate(p, enginefetch.MaxWasmBytes+1) // sparse
			t.Setenv(EnvWasmPath, p)
			return ModuleOptions{}
		}, []string{EnvWasmPath, "larger than"}},
		{"file is not wasm", func(t *testing.T, reg *fakeRegistry) ModuleOptions {
			return ModuleOptions{WasmFile: writeTemp(t, []byte("#!/bin/sh"))}
		}, []string{"not WebAssembly"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			isolate(t)
			reg := newFakeRegistry(t, wasm, http.StatusOK)
			testPin = nil // the real pin: the fake tarball must not be what rescues these
			opts := c.setup(t, reg)
			m, err := Load(context.Background(), opts)
			if err == nil {
				m.Close(context.Background())
				t.Fatal("loaded")
			}
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("not ErrUnavailable: %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if reg.hits.Load() != 0 && c.name != "registry down" {
				t.Errorf("%d downloads", reg.hits.Load())
			}
		})
	}
}

func TestLoadCancelled(t *testing.T) { // a caller that gives up gets its context error, wrapped
	isolate(t)
	reg := newFakeRegistry(t, realWasm(t), http.StatusOK)
	withoutEmbedded()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Load(ctx, ModuleOptions{EngineDir: t.TempDir(), Registry: reg.URL})
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("%v", err)
	}
}

func TestFetchOff(t *testing.T) {
	for v, off := range map[string]bool{"0": true, "false": true, "OFF": true, " no ": true, "": false, "1": false, "yes": false} {
		if fetchOff(v) != off {
			t.Errorf("fetchOff(%q) = %v", v, !off)
		}
	}
}

func TestPinMatchesEmbedded(t *testing.T) { // the pin's wasmSha256 is the module `make wasm` verified
	p := Pinned()
	if got := sha256.Sum256(realWasm(t)); hex.EncodeToString(got[:]) != p.WasmSHA256 {
		t.Fatalf("embedded module sha256 %x, pin %s", got, p.WasmSHA256)
	}
}
