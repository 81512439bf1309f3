package enginefetch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestEndToEndWithoutEngine is issue 13's promise: `go install …/cmd/codemode@latest` and
// `go get github.com/codemode-go/codemode` work with no QuickJS module in the source tree, no npm
// or node, and an empty cache. It copies the tracked files of this module (the module zip a user
// would get, without the gitignored engine), builds the CLI and a small library program against
// the copy with HOME and XDG_CACHE_HOME pointing at empty directories and a PATH holding only the
// Go tool, and runs a cell with each. It first checks that the same binary fails closed when
// fetching is off.
func TestEndToEndWithoutEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the module from a copy and fetches the engine from the npm registry")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	goBin, _ = filepath.EvalSymlinks(goBin)
	root := goEnv(t, goBin, "GOMOD")
	if root == "" || root == os.DevNull {
		t.Fatal("not inside the module")
	}
	root = filepath.Dir(root)
	pin := readPin(t, filepath.Join(root, "internal", "quickjs", "assets", "quickjs-wasi.json"))
	checkRegistry(t, pin)

	tmp := t.TempDir()
	mod := filepath.Join(tmp, "codemode")
	copyModule(t, root, mod)
	if _, err := os.Stat(filepath.Join(mod, "internal", "quickjs", "assets", "quickjs.wasm")); err == nil {
		t.Fatal("the copy holds the engine: the test would prove nothing")
	}

	env := cleanEnv(t, goBin, tmp)
	run := func(dir string, extraEnv []string, name string, args ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = dir, append(env(), extraEnv...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		err := cmd.Run()
		t.Logf("%s %s: %v, %s", filepath.Base(name), strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond))
		if errb.Len() > 0 {
			t.Logf("stderr:\n%s", errb.String())
		}
		return out.String(), err
	}

	cli := filepath.Join(tmp, "bin", "codemode")
	if out, err := run(mod, nil, goBin, "build", "-o", cli, "./cmd/codemode"); err != nil {
		t.Fatalf("go build ./cmd/codemode: %v\n%s", err, out)
	}
	cache := filepath.Join(tmp, "cache")
	cached := CachePath(filepath.Join(cache, "codemode", "engine"), pin)

	// Fetching off, nothing cached: every exec fails closed.
	out, err := run(tmp, []string{"XDG_CACHE_HOME=" + cache, "CODEMODE_QUICKJS_FETCH=0"}, cli, "exec", "--code", "return 1+1")
	if err == nil || !strings.Contains(out, `"runtime_unavailable"`) {
		t.Fatalf("without an engine and with fetching off: err=%v\n%s", err, out)
	}
	if _, err := os.Stat(cached); err == nil {
		t.Fatal("fetching was off but the engine was cached")
	}

	// First use fetches, verifies and caches the engine.
	out, err = run(tmp, []string{"XDG_CACHE_HOME=" + cache}, cli, "exec", "--code", "return 1+1")
	if err != nil || !strings.Contains(out, `"value":2`) {
		t.Fatalf("codemode exec: err=%v\n%s", err, out)
	}
	checkCached(t, cached, pin)

	// A library program, built against the copy through a replace directive, with its own
	// empty cache.
	prog := filepath.Join(tmp, "libprog")
	src, err := os.ReadFile(filepath.Join("testdata", "libprog", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go [0-9.]+$`).Find(readFile(t, filepath.Join(root, "go.mod")))
	gomod := "module example.com/libprog\n\n" + string(goLine) + "\n\nrequire github.com/codemode-go/codemode v0.0.0-00010101000000-000000000000\n\nreplace github.com/codemode-go/codemode => " + mod + "\n"
	writeFiles(t, prog, map[string][]byte{"main.go": src, "go.mod": []byte(gomod), "go.sum": readFile(t, filepath.Join(root, "go.sum"))})
	bin := filepath.Join(tmp, "bin", "libprog")
	if out, err := run(prog, nil, goBin, "build", "-o", bin, "."); err != nil {
		t.Fatalf("go build libprog: %v\n%s", err, out)
	}
	cache2 := filepath.Join(tmp, "cache2")
	out, err = run(tmp, []string{"XDG_CACHE_HOME=" + cache2}, bin)
	if err != nil || !strings.Contains(out, `"value":42`) {
		t.Fatalf("libprog: err=%v\n%s", err, out)
	}
	checkCached(t, CachePath(filepath.Join(cache2, "codemode", "engine"), pin), pin)
}

func goEnv(t *testing.T, goBin, key string) string {
	t.Helper()
	out, err := exec.Command(goBin, "env", key).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}

func readPin(t *testing.T, file string) Pin {
	t.Helper()
	var p Pin
	if err := json.Unmarshal(readFile(t, file), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkRegistry skips the test when the registry cannot be reached; any answer but the tarball
// is a failure (a wrong pin, most likely).
func checkRegistry(t *testing.T, pin Pin) {
	t.Helper()
	reg, _ := RegistryFromEnv()
	u, err := pin.tarballURL(reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodHead, u.String(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Skipf("npm registry unreachable, cannot test fetching the engine: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		t.Skipf("npm registry unavailable (%s), cannot test fetching the engine", resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD %s: %s", u.Redacted(), resp.Status)
	}
}

// copyModule copies the files git would put in a commit (tracked, plus new files not ignored).
func copyModule(t *testing.T, root, dst string) {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (the test needs the git checkout)", err)
	}
	for name := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		writeFiles(t, dst, map[string][]byte{name: b})
	}
}

func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cleanEnv is the environment of a user without npm, node, an engine or a cache. The Go build
// and module caches are kept (they only make the build faster; they never hold the engine).
func cleanEnv(t *testing.T, goBin, tmp string) func() []string {
	t.Helper()
	// PATH holds the go tool alone (a link to it; go finds its GOROOT through the link).
	pathDir := filepath.Join(tmp, "path")
	if err := os.MkdirAll(pathDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(goBin, filepath.Join(pathDir, "go")); err != nil {
		t.Fatal(err)
	}
	keep := map[string]string{
		"GOROOT":      goEnv(t, goBin, "GOROOT"),
		"GOCACHE":     goEnv(t, goBin, "GOCACHE"),
		"GOMODCACHE":  goEnv(t, goBin, "GOMODCACHE"),
		"GOPATH":      goEnv(t, goBin, "GOPATH"),
		"GOPROXY":     goEnv(t, goBin, "GOPROXY"),
		"GOSUMDB":     goEnv(t, goBin, "GOSUMDB"),
		"GOFLAGS":     "-mod=mod",
		"GOTOOLCHAIN": "local",
		"GOWORK":      "off",
		"CGO_ENABLED": "0",
		"HOME":        filepath.Join(tmp, "home"),
		"PATH":        pathDir,
	}
	for _, tool := range []string{"npm", "node", "npx"} {
		if _, err := os.Stat(filepath.Join(pathDir, tool)); err == nil {
			t.Fatalf("%s is on the test's PATH", tool)
		}
	}
	var base []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		upper := strings.ToUpper(k)
		if _, ok := keep[k]; ok || strings.HasPrefix(upper, "CODEMODE_") || strings.HasPrefix(upper, "NPM_CONFIG_") ||
			strings.HasPrefix(upper, "XDG_") || strings.HasPrefix(k, "GO") || k == "PATH" || k == "HOME" {
			continue
		}
		base = append(base, kv)
	}
	// The registry the test checked is the one the programs fetch from.
	if reg, src := RegistryFromEnv(); src != "the default" {
		base = append(base, EnvRegistry+"="+reg)
	}
	return func() []string {
		env := append([]string(nil), base...)
		for k, v := range keep {
			env = append(env, k+"="+v)
		}
		return env
	}
}

func checkCached(t *testing.T, file string, pin Pin) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the engine was not cached: %v", err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != pin.WasmSHA256 {
		t.Fatalf("cached engine %s does not match the pin", file)
	}
}
