// Package quickjs binds the QuickJS-NG WebAssembly module shipped by the npm package quickjs-wasi
// to Go through wazero.
//
// The module exports the QuickJS C API (JS_* functions taking JSValue as a NaN-boxed i64) plus a
// thin qjs_* layer, and imports a name-keyed host_call trampoline, an interrupt hook and six WASI
// functions. This package knows nothing about code mode: it compiles the module once per process,
// creates isolated VMs (one wazero instance each), captures and restores their linear memory, and
// offers the handful of typed calls the sandbox needs. Everything the guest can reach from here is
// an explicit import in env.go: no filesystem, network, environment or arguments.
package quickjs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/codemode-go/codemode/internal/wasmkill"
	"github.com/tetratelabs/wazero"
)

//go:embed assets
var assets embed.FS

// PackageInfo is the pinned npm package the module comes from (assets/quickjs-wasi.json).
type PackageInfo struct {
	Package   string `json:"package"`
	Version   string `json:"version"`
	Integrity string `json:"integrity"`
}

// Pinned returns the package pin compiled into this binary.
func Pinned() PackageInfo {
	var p PackageInfo
	b, err := assets.ReadFile("assets/quickjs-wasi.json")
	if err == nil {
		_ = json.Unmarshal(b, &p)
	}
	return p
}

// ErrUnavailable wraps every reason the module cannot be loaded. Callers fail closed on it.
var ErrUnavailable = errors.New("QuickJS WebAssembly runtime unavailable")

// EnvWasmPath names an environment variable that overrides the embedded module (for testing a
// different build); the file must still be a quickjs-wasi module.
const EnvWasmPath = "CODEMODE_QUICKJS_WASM"

// ModuleOptions configure Load. The zero value embeds the pinned module and uses the on-disk
// compilation cache in the user cache directory.
type ModuleOptions struct {
	// Wasm overrides the module bytes (tests). Empty means $CODEMODE_QUICKJS_WASM or the embedded file.
	Wasm []byte
	// CacheDir is wazero's compilation cache directory. "" means <user cache dir>/codemode/wazero.
	CacheDir string
	// DisableCache turns the on-disk compilation cache off (every process compiles, ≈600 ms).
	DisableCache bool
	// Uninstrumented skips the hard-kill instrumentation. Only for measuring its cost: VMs of such
	// a module cannot be killed, so a guest ignoring the soft deadline runs forever.
	Uninstrumented bool
	// MaxMemoryBytes caps each VM's linear memory, a backstop behind QuickJS's own allocator limit.
	// Zero means 1 GiB + 64 MiB (the largest memoryLimitBytes plus room for the engine).
	MaxMemoryBytes uint64
}

// Module is the compiled, instrumented QuickJS module shared by every VM of a process.
type Module struct {
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	// Hash identifies the exact module bytes (before instrumentation): snapshots record it and
	// refuse to restore into a different module.
	Hash    [32]byte
	Version string
	cache   wazero.CompilationCache
	// killable is false only for Uninstrumented modules.
	killable bool
}

// Load reads, instruments and compiles the QuickJS module. Errors wrap ErrUnavailable.
func Load(ctx context.Context, opts ModuleOptions) (*Module, error) {
	wasm := opts.Wasm
	if len(wasm) == 0 {
		if p := os.Getenv(EnvWasmPath); p != "" {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, EnvWasmPath, err)
			}
			wasm = b
		} else {
			b, err := assets.ReadFile("assets/quickjs.wasm")
			if err != nil {
				return nil, fmt.Errorf("%w: this binary was built without assets/quickjs.wasm (run `make wasm` before building)", ErrUnavailable)
			}
			wasm = b
		}
	}
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		return nil, fmt.Errorf("%w: module is not WebAssembly", ErrUnavailable)
	}
	instrumented := wasm
	if !opts.Uninstrumented {
		var err error
		if instrumented, err = wasmkill.Instrument(wasm); err != nil {
			return nil, fmt.Errorf("%w: instrumenting module: %v", ErrUnavailable, err)
		}
	}
	maxMem := opts.MaxMemoryBytes
	if maxMem == 0 {
		maxMem = 1<<30 + 64<<20
	}
	pages := uint32((maxMem + 65535) / 65536)
	if pages > 65536 {
		pages = 65536
	}
	cfg := wazero.NewRuntimeConfigCompiler().
		WithMemoryLimitPages(pages).
		WithCloseOnContextDone(false) // the kill flag (wasmkill) is our hard stop: see RATIONALE.md
	var cache wazero.CompilationCache
	if !opts.DisableCache {
		dir := opts.CacheDir
		if dir == "" {
			if base, err := os.UserCacheDir(); err == nil {
				dir = filepath.Join(base, "codemode", "wazero")
			}
		}
		if dir != "" {
			if c, err := wazero.NewCompilationCacheWithDir(dir); err == nil {
				cache = c
				cfg = cfg.WithCompilationCache(c)
			}
			// An unusable cache directory only costs compile time; it is not a reason to fail.
		}
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if err := instantiateHostModules(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("%w: host modules: %v", ErrUnavailable, err)
	}
	compiled, err := rt.CompileModule(ctx, instrumented)
	if err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("%w: compiling module: %v", ErrUnavailable, err)
	}
	if err := checkExports(compiled); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return &Module{runtime: rt, compiled: compiled, Hash: sha256.Sum256(wasm), Version: Pinned().Version, cache: cache, killable: !opts.Uninstrumented}, nil
}

// HashHex is the module hash as hex, for logs and snapshot headers.
func (m *Module) HashHex() string { return hex.EncodeToString(m.Hash[:]) }

// Close releases the runtime and every VM still open.
func (m *Module) Close(ctx context.Context) error {
	err := m.runtime.Close(ctx)
	if m.cache != nil {
		m.cache.Close(ctx)
	}
	return err
}

func checkExports(c wazero.CompiledModule) error {
	fns := c.ExportedFunctions()
	for _, name := range fnNames {
		if _, ok := fns[name]; !ok {
			return fmt.Errorf("module does not export %s: not a quickjs-wasi build this binary supports", name)
		}
	}
	return nil
}
