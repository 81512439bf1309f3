package enginefetch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestGetGood(t *testing.T) { // a verified download is returned and cached; the next Get is a cache hit
	noLeaks(t)
	tgz := goodTarball(t)
	reg := newRegistry(t, tgz)
	o := reg.options(t, pinFor(tgz, fakeWasm))
	var logs bytes.Buffer
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	b, err := Get(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, fakeWasm) {
		t.Fatal("wrong module bytes")
	}
	if n := strings.Count(logs.String(), "fetching it once from the npm registry"); n != 1 || strings.Count(logs.String(), "\n") != 1 {
		t.Fatalf("want one log line for the download, got:\n%s", logs.String())
	}
	cached := CachePath(o.Dir, o.Pin)
	if want := filepath.Join(o.Dir, "quickjs-wasi-3.7.0", "quickjs.wasm"); cached != want {
		t.Fatalf("cache path %s, want %s", cached, want)
	}
	if !bytes.Equal(readFile(t, cached), fakeWasm) {
		t.Fatal("cache holds other bytes")
	}
	if got := files(t, o.Dir); len(got) != 1 {
		t.Fatalf("cache dir holds %v, want only the module (no temp files)", got)
	}
	reg.mu.Lock()
	reg.status = http.StatusInternalServerError // a cache hit must not need the registry
	reg.mu.Unlock()
	for _, noFetch := range []bool{false, true} {
		o.NoFetch = noFetch
		if b, err := Get(context.Background(), o); err != nil || !bytes.Equal(b, fakeWasm) {
			t.Fatalf("cache hit (NoFetch=%v): %v", noFetch, err)
		}
	}
	if n := reg.hits.Load(); n != 1 {
		t.Fatalf("%d downloads, want 1", n)
	}
	if strings.Count(logs.String(), "\n") != 1 {
		t.Fatalf("a cache hit logged:\n%s", logs.String())
	}
}

func TestGetRefused(t *testing.T) { // every bad answer is an error and leaves nothing in the cache
	good := goodTarball(t)
	other := tarball(t, entry{name: WasmEntry, body: []byte("\x00asm other")})
	defer func(n int64) { maxUnpacked = n }(maxUnpacked)
	maxUnpacked = 1 << 20
	cases := []struct {
		name   string
		served []byte
		status int
		pin    Pin
		want   string
	}{
		{"tarball hash differs", other, 200, pinFor(good, fakeWasm), "integrity mismatch"},
		{"wasm hash differs", good, 200, pinFor(good, []byte("another module")), "pin file is inconsistent"},
		{"registry 404", good, 404, pinFor(good, fakeWasm), "answered 404"},
		{"garbage", []byte("this is not gzip"), 200, pinFor([]byte("this is not gzip"), fakeWasm), "not gzip"},
		{"truncated gzip", good[:len(good)/2], 200, pinFor(good[:len(good)/2], fakeWasm), "corrupt"},
		{"no module", tarball(t, entry{name: "package/index.js", body: []byte("x")}), 200, Pin{}, "has no package/quickjs.wasm"},
		{"dot-dot path", tarball(t, entry{name: "package/../../evil", body: []byte("x")}, entry{name: WasmEntry, body: fakeWasm}), 200, Pin{}, "unsafe path"},
		{"dot-dot module", tarball(t, entry{name: "../package/quickjs.wasm", body: fakeWasm}), 200, Pin{}, "unsafe path"},
		{"absolute path", tarball(t, entry{name: "/package/quickjs.wasm", body: fakeWasm}), 200, Pin{}, "unsafe path"},
		{"backslash path", tarball(t, entry{name: `package\..\..\evil`, body: fakeWasm}), 200, Pin{}, "unsafe path"},
		{"symlink module", tarball(t, entry{name: WasmEntry, typ: '2'}), 200, Pin{}, "not a regular file"},
		{"duplicate module", tarball(t, entry{name: WasmEntry, body: fakeWasm}, entry{name: WasmEntry, body: fakeWasm}), 200, Pin{}, "twice"},
		{"huge module", tarball(t, entry{name: WasmEntry, size: MaxWasmBytes + 1}), 200, Pin{}, "limit"},
		{"bomb", tarball(t, entry{name: "package/zeros", body: make([]byte, 2<<20)}, entry{name: WasmEntry, body: fakeWasm}), 200, Pin{}, "unpacks to more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			noLeaks(t)
			pin := c.pin
			if pin == (Pin{}) {
				// Extraction checks are a second line behind the integrity check: pin the hostile
				// tarball itself to reach them.
				pin = pinFor(c.served, fakeWasm)
			}
			reg := newRegistry(t, c.served)
			reg.status = c.status
			o := reg.options(t, pin)
			b, err := Get(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if b != nil {
				t.Fatal("bytes returned with an error")
			}
			if got := files(t, o.Dir); len(got) != 0 {
				t.Fatalf("cache holds %v after a refused fetch", got)
			}
		})
	}
}

func TestGetTamperedCache(t *testing.T) { // a cached file that fails its hash is never used
	cases := []struct {
		name    string
		content []byte
		noFetch bool
		want    string // error for NoFetch
	}{
		{"refetched", append(bytes.Clone(fakeWasm), 'x'), false, ""},
		{"empty refetched", []byte{}, false, ""},
		{"refused offline", []byte("\x00asm evil"), true, "does not match the pinned sha256"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			noLeaks(t)
			tgz := goodTarball(t)
			reg := newRegistry(t, tgz)
			o := reg.options(t, pinFor(tgz, fakeWasm))
			o.NoFetch = c.noFetch
			cached := CachePath(o.Dir, o.Pin)
			os.MkdirAll(filepath.Dir(cached), 0o755)
			if err := os.WriteFile(cached, c.content, 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := Get(context.Background(), o)
			if c.noFetch {
				if err == nil || !strings.Contains(err.Error(), c.want) || b != nil {
					t.Fatalf("err = %v, want %q", err, c.want)
				}
				if reg.hits.Load() != 0 {
					t.Fatal("NoFetch downloaded")
				}
				return
			}
			if err != nil || !bytes.Equal(b, fakeWasm) {
				t.Fatalf("%v", err)
			}
			if !bytes.Equal(readFile(t, cached), fakeWasm) {
				t.Fatal("the tampered file was not replaced")
			}
			if reg.hits.Load() != 1 {
				t.Fatalf("%d downloads", reg.hits.Load())
			}
		})
	}
}

func TestGetNoFetch(t *testing.T) { // nothing cached and fetching off: an error, no request
	noLeaks(t)
	tgz := goodTarball(t)
	reg := newRegistry(t, tgz)
	o := reg.options(t, pinFor(tgz, fakeWasm))
	o.NoFetch = true
	if _, err := Get(context.Background(), o); err == nil || !strings.Contains(err.Error(), "no verified copy at "+o.Dir) {
		t.Fatalf("err = %v", err)
	}
	if reg.hits.Load() != 0 {
		t.Fatal("NoFetch downloaded")
	}
}

func TestGetConcurrentFirstUse(t *testing.T) { // 16 goroutines, one download, all succeed
	noLeaks(t)
	tgz := goodTarball(t)
	reg := newRegistry(t, tgz)
	gate := make(chan struct{})
	reg.gate = gate
	o := reg.options(t, pinFor(tgz, fakeWasm))
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			var b []byte
			b, errs[i] = Get(context.Background(), o)
			if errs[i] == nil && !bytes.Equal(b, fakeWasm) {
				errs[i] = errors.New("wrong bytes")
			}
		})
	}
	// Hold the one download until it has been asked for, so the others pile up behind it.
	for reg.hits.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(gate)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("goroutine %d: %v", i, err)
		}
	}
	if got := reg.hits.Load(); got != 1 {
		t.Fatalf("%d downloads, want 1", got)
	}
}

func TestGetCallerGivesUp(t *testing.T) { // a cancelled caller returns at once; the download goes on for the others
	noLeaks(t)
	tgz := goodTarball(t)
	reg := newRegistry(t, tgz)
	gate := make(chan struct{})
	reg.gate = gate
	o := reg.options(t, pinFor(tgz, fakeWasm))
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := Get(ctx, o); first <- err }()
	for reg.hits.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	second := make(chan error, 1)
	go func() { _, err := Get(context.Background(), o); second <- err }()
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
	close(gate)
	if err := <-second; err != nil {
		t.Fatalf("the other caller lost the shared download: %v", err)
	}
	if reg.hits.Load() != 1 {
		t.Fatalf("%d downloads", reg.hits.Load())
	}
}

func TestWriteAtomicHammer(t *testing.T) { // writers racing on one path never expose a partial file
	file := filepath.Join(t.TempDir(), "d", "quickjs.wasm")
	want := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var bad error
	var mu sync.Mutex
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				b, err := os.ReadFile(file)
				if err == nil && !bytes.Equal(b, want) {
					mu.Lock()
					bad = errors.New("a reader saw a partial file")
					mu.Unlock()
				}
			}
		})
	}
	var writers sync.WaitGroup
	for range 4 {
		writers.Go(func() {
			for range 5 {
				if err := writeAtomic(file, want); err != nil {
					mu.Lock()
					bad = err
					mu.Unlock()
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	if bad != nil {
		t.Fatal(bad)
	}
	if got := files(t, filepath.Dir(file)); len(got) != 1 {
		t.Fatalf("left behind: %v", got)
	}
}

func TestPinChecked(t *testing.T) { // a malformed pin is refused before any path or URL is built from it
	good := pinFor([]byte("t"), []byte("w"))
	cases := []struct {
		name string
		edit func(*Pin)
		want string
	}{
		{"path in name", func(p *Pin) { p.Package = "../../etc" }, "package name"},
		{"upper-case name", func(p *Pin) { p.Package = "QuickJS" }, "package name"},
		{"path in version", func(p *Pin) { p.Version = "1.0.0/../../x" }, "version"},
		{"sha1 integrity", func(p *Pin) { p.Integrity = "sha1-AAAA" }, "sha512"},
		{"two hashes", func(p *Pin) { p.Integrity += " sha1-AAAA" }, "not a base64 sha512"},
		{"short wasm hash", func(p *Pin) { p.WasmSHA256 = "abcd" }, "wasmSha256"},
		{"missing wasm hash", func(p *Pin) { p.WasmSHA256 = "" }, "wasmSha256"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := good
			c.edit(&p)
			_, err := Get(context.Background(), Options{Pin: p, Dir: t.TempDir(), Registry: "http://127.0.0.1:9"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestTarballURL(t *testing.T) { // the registry layout npm uses, with scopes and mirrors under a path
	cases := []struct{ pkg, registry, want string }{
		{"quickjs-wasi", "https://registry.npmjs.org/", "https://registry.npmjs.org/quickjs-wasi/-/quickjs-wasi-3.7.0.tgz"},
		{"quickjs-wasi", "https://registry.npmjs.org", "https://registry.npmjs.org/quickjs-wasi/-/quickjs-wasi-3.7.0.tgz"},
		{"quickjs-wasi", "https://mirror.example/npm/?x=1#f", "https://mirror.example/npm/quickjs-wasi/-/quickjs-wasi-3.7.0.tgz"},
		{"@scope/pkg", "http://127.0.0.1:4873", "http://127.0.0.1:4873/@scope/pkg/-/pkg-3.7.0.tgz"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			u, err := Pin{Package: c.pkg, Version: "3.7.0"}.tarballURL(c.registry)
			if err != nil || u.String() != c.want {
				t.Fatalf("%v %v, want %s", u, err, c.want)
			}
		})
	}
	for _, bad := range []string{"registry.npmjs.org", "file:///etc/passwd", "ftp://x/", "http://user:secret@%zz/"} {
		_, err := Pin{Package: "quickjs-wasi", Version: "3.7.0"}.tarballURL(bad)
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func TestRegistryFromEnv(t *testing.T) { // ours first, then npm's, then the public registry
	cases := []struct {
		ours, npm, want string
	}{
		{"", "", DefaultRegistry},
		{"", "https://npm.corp/", "https://npm.corp/"},
		{"https://mirror/", "https://npm.corp/", "https://mirror/"},
		{"  ", "", DefaultRegistry},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			t.Setenv(EnvRegistry, c.ours)
			t.Setenv("npm_config_registry", c.npm)
			t.Setenv("NPM_CONFIG_REGISTRY", "")
			if got, _ := RegistryFromEnv(); got != c.want {
				t.Fatalf("got %s", got)
			}
		})
	}
}

func TestGetUsesEnvRegistry(t *testing.T) { // CODEMODE_NPM_REGISTRY redirects the download
	noLeaks(t)
	tgz := goodTarball(t)
	reg := newRegistry(t, tgz)
	o := reg.options(t, pinFor(tgz, fakeWasm))
	t.Setenv(EnvRegistry, reg.URL+"/")
	o.Registry = ""
	if _, err := Get(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvRegistry, "not a url")
	o.Dir = t.TempDir()
	if _, err := Get(context.Background(), o); err == nil || !strings.Contains(err.Error(), "$"+EnvRegistry) {
		t.Fatalf("err = %v, want it to name the variable", err)
	}
}

func FuzzExtract(f *testing.F) { // hostile tarballs: an error or a bounded module, never a panic
	f.Add(goodTarball(f))
	f.Add(tarball(f, entry{name: "../x", body: []byte("x")}))
	f.Add([]byte("\x1f\x8b\x08\x00"))
	f.Fuzz(func(t *testing.T, tgz []byte) {
		wasm, err := extractWasm(tgz)
		if err == nil && (len(wasm) == 0 || len(wasm) > MaxWasmBytes) {
			t.Fatalf("accepted a module of %d bytes", len(wasm))
		}
	})
}

// TestGetCrossProcess starts several copies of this test binary that fetch into one cache
// directory at once: each must succeed and the cache must end up holding the verified module.
func TestGetCrossProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	tgz := goodTarball(t)
	reg := newRegistry(t, tgz)
	pin := pinFor(tgz, fakeWasm)
	dir := t.TempDir()
	pinJSON, _ := json.Marshal(pin)
	const n = 4
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "ENGINEFETCH_HELPER=1", "ENGINEFETCH_REGISTRY="+reg.URL, "ENGINEFETCH_DIR="+dir, "ENGINEFETCH_PIN="+string(pinJSON))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("process %d: %v", i, err)
		}
	}
	if !bytes.Equal(readFile(t, CachePath(dir, pin)), fakeWasm) {
		t.Fatal("the cache holds other bytes")
	}
	if got := files(t, dir); len(got) != 1 {
		t.Fatalf("cache dir holds %v", got)
	}
	if h := reg.hits.Load(); h < 1 || h > n {
		t.Fatalf("%d downloads", h)
	}
}

func TestHelperProcess(t *testing.T) {
	if os.Getenv("ENGINEFETCH_HELPER") != "1" {
		t.Skip("helper for TestGetCrossProcess")
	}
	var pin Pin
	if err := json.Unmarshal([]byte(os.Getenv("ENGINEFETCH_PIN")), &pin); err != nil {
		t.Fatal(err)
	}
	b, err := Get(context.Background(), Options{Pin: pin, Dir: os.Getenv("ENGINEFETCH_DIR"), Registry: os.Getenv("ENGINEFETCH_REGISTRY")})
	if err != nil || !bytes.Equal(b, fakeWasm) {
		t.Fatalf("%v", err)
	}
}

// BenchmarkCacheHit is what every start of a binary without the embedded module pays once the
// engine is cached: one read and one sha256 of a module the size of the real one.
func BenchmarkCacheHit(b *testing.B) {
	wasm := bytes.Repeat([]byte{1}, 638148)
	tgz := tarball(b, entry{name: WasmEntry, body: wasm})
	reg := newRegistry(b, tgz)
	o := reg.options(b, pinFor(tgz, wasm))
	if _, err := Get(context.Background(), o); err != nil {
		b.Fatal(err)
	}
	o.NoFetch = true
	b.SetBytes(int64(len(wasm)))
	for b.Loop() {
		if _, err := Get(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
}
