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
	"log/slog"
	"os"
	"path/filepath"

	"github.com/codemode-go/codemode/internal/quickjs/enginefetch"
	"github.com/codemode-go/codemode/internal/wasmkill"
	"github.com/tetratelabs/wazero"
)

//go:embed assets
var assets embed.FS

// PackageInfo is the pinned npm package the module comes from (assets/quickjs-wasi.json).
type PackageInfo = enginefetch.Pin

// Pinned returns the package pin compiled into this binary.
func Pinned() PackageInfo {
	if testPin != nil {
		return *testPin
	}
	var p PackageInfo
	b, err := assets.ReadFile("assets/quickjs-wasi.json")
	if err == nil {
		_ = json.Unmarshal(b, &p)
	}
	return p
}

// ErrUnavailable wraps every reason the module cannot be loaded. Callers fail closed on it.
var ErrUnavailable = errors.New("QuickJS WebAssembly runtime unavailable")

// ModuleOptions configure Load. The zero value finds the pinned module (see Load), fetching it on
// first use when the binary was built without it, and uses the on-disk compilation cache in the
// user cache directory.
type ModuleOptions struct {
	// Wasm is the module itself, used as given (tests, embedders that ship their own copy).
	Wasm []byte
	// WasmFile is a module file, used as given when Wasm is empty.
	WasmFile string
	// EngineDir is where a fetched module is cached; "" means <user cache dir>/codemode/engine.
	EngineDir string
	// NoFetch never downloads the module: without bytes, a file, an embedded module or a verified
	// cached copy, Load fails. $CODEMODE_QUICKJS_FETCH=0 does the same.
	NoFetch bool
	// Registry is the npm registry to fetch from; "" means $CODEMODE_NPM_REGISTRY, then
	// $npm_config_registry, then https://registry.npmjs.org/.
	Registry string
	// Logger receives one line when the module is fetched, and cache warnings; nil discards them.
	Logger *slog.Logger
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
	// Source says where the bytes came from: "embedded", a file, the engine cache… (for logs).
	Source string
	cache  wazero.CompilationCache
	// killable is false only for Uninstrumented modules.
	killable bool
}

// Load finds, instruments and compiles the QuickJS module. The module is the first of: opts.Wasm,
// opts.WasmFile, the file named by $CODEMODE_QUICKJS_WASM, the module embedded by `make`, a
// verified copy in the engine cache, a verified download of the pinned npm tarball (unless
// NoFetch or $CODEMODE_QUICKJS_FETCH=0). Errors wrap ErrUnavailable and say what to do.
func Load(ctx context.Context, opts ModuleOptions) (*Module, error) {
	wasm, source, err := moduleBytes(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		return nil, fmt.Errorf("%w: module (%s) is not WebAssembly", ErrUnavailable, source)
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
	return &Module{runtime: rt, compiled: compiled, Hash: sha256.Sum256(wasm), Version: Pinned().Version, Source: source, cache: cache, killable: !opts.Uninstrumented}, nil
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
