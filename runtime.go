// Package codemode puts "code mode" in front of any tool set: instead of every tool schema, the
// model sees two tools, exec and wait, and writes a small JavaScript or TypeScript program that
// searches, describes and calls a hidden per-run catalog from a QuickJS sandbox compiled to
// WebAssembly.
//
// A Runtime is created once per process. For each model request, Activate turns the run's
// effective tools into a Surface: the tools the model sees and the catalog behind exec. Exec and
// Wait run cells and return the CodeModeResult union.
//
//	rt, _ := codemode.New(ctx, codemode.Options{Config: cfg})
//	defer rt.Close()
//	s := rt.Activate(api.RunContext{SessionKey: "s1"}, tools)
//	res := s.Exec(ctx, "call_1", json.RawMessage(`{"code":"return ALL_TOOLS.length"}`))
package codemode

import (
	"container/list"
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/catalog"
	"github.com/codemode-go/codemode/internal/quickjs"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/sandbox"
)

// Options configure a Runtime. Nil fields take defaults.
type Options struct {
	// Config is the parsed configuration; nil means config.Default() (code mode on).
	Config *config.Config
	// Hooks run before every nested tool call and before exec/wait themselves (E1, X5).
	Hooks []api.BeforeToolCallHook
	// Approvals decides approval-gated calls (after hooks).
	Approvals api.ApprovalPolicy
	// Observer receives a record of every nested call (E2).
	Observer api.Observer
	// Resources reaches MCP resources and prompts (set by the MCP layer).
	Resources Resources
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// Wasm overrides the QuickJS module bytes (tests).
	Wasm []byte
	// Admission, when set, bounds the execs and waits running VMs at once in the process:
	// every exec and wait queues for a slot and fails with code "overloaded" when refused.
	Admission Admission
}

// Admission hands out slots for running VMs, fairly between sessions (see internal/admission).
type Admission interface {
	Acquire(ctx context.Context, session string) (release func(), err error)
}

// Resources reaches MCP resources and prompts for MCP.<server>.resources/prompts.
type Resources interface {
	ListResources(ctx context.Context, server string) (json.RawMessage, error)
	ReadResource(ctx context.Context, server, uri string) (json.RawMessage, error)
	ListPrompts(ctx context.Context, server string) (json.RawMessage, error)
	GetPrompt(ctx context.Context, server, name string, args json.RawMessage) (json.RawMessage, error)
}

// Runtime is the process-wide code-mode runtime: the compiled QuickJS module, the template VM,
// the catalog cache and the store of suspended runs. It is safe for concurrent use.
type Runtime struct {
	opts   Options
	cfg    *config.Config
	cm     config.CodeMode
	log    *slog.Logger
	engine *sandbox.Engine
	// engineErr is why the sandbox cannot run: every exec then fails with runtime_unavailable
	// (fail closed, never a fallback to direct tools).
	engineErr error
	mod       *quickjs.Module
	store     runstore.Backend
	catalogs  *catalogCache
}

// New creates a Runtime. It loads and compiles the QuickJS module when code mode is enabled; if
// that fails, New still succeeds and every exec fails with runtime_unavailable (fail closed).
func New(ctx context.Context, opts Options) (*Runtime, error) {
	cfg := opts.Config
	if cfg == nil {
		cfg = config.Default()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rt := &Runtime{opts: opts, cfg: cfg, cm: cfg.Tools.CodeMode, log: log,
		store: runstore.NewWithLimits(cfg.Tools.CodeMode.SnapshotTTL(), runstore.Limits{
			MaxRunsPerSession: cfg.Runtime.Suspended.MaxRunsPerSession, MaxBytes: cfg.Runtime.Suspended.MaxBytes,
			MaxBytesPerSession: cfg.Runtime.Suspended.MaxBytesPerSession}),
		catalogs: newCatalogCache(16)}
	if rt.cm.Enabled {
		rt.loadEngine(ctx)
	}
	return rt, nil
}

func (rt *Runtime) loadEngine(ctx context.Context) {
	mo := quickjs.ModuleOptions{Wasm: rt.opts.Wasm}
	if !rt.cfg.Runtime.CompileCache {
		mo.DisableCache = true
	} else if dir, err := rt.cfg.Runtime.CompileCachePath(); err == nil {
		mo.CacheDir = dir
	}
	mod, err := quickjs.Load(ctx, mo)
	if err != nil {
		rt.engineErr = err
		rt.log.Error("code mode runtime unavailable", "err", err)
		return
	}
	eng, err := sandbox.NewEngine(ctx, mod)
	if err != nil {
		mod.Close(ctx)
		rt.engineErr = err
		rt.log.Error("code mode runtime unavailable", "err", err)
		return
	}
	rt.mod, rt.engine = mod, eng
}

// Err reports why the sandbox is unavailable, or nil.
func (rt *Runtime) Err() error { return rt.engineErr }

// Config returns the configuration in use.
func (rt *Runtime) Config() *config.Config { return rt.cfg }

// CancelRun drops a suspended run and its pending calls (W7).
func (rt *Runtime) CancelRun(runID string) bool { return rt.store.Cancel(runID) }

// EndSession drops every suspended run of a session (W7).
func (rt *Runtime) EndSession(sessionKey string) int { return rt.store.CancelSession(sessionKey) }

// SuspendedRuns is the number of runs waiting for `wait`.
func (rt *Runtime) SuspendedRuns() int { return rt.store.Len() }

// SuspendedBytes is the total size of stored snapshots.
func (rt *Runtime) SuspendedBytes() int { return rt.store.Bytes() }

// Close drops suspended runs and releases the module.
func (rt *Runtime) Close() error {
	rt.store.Close()
	if rt.mod != nil {
		return rt.mod.Close(context.Background())
	}
	return nil
}

// catalogCache keeps built catalogs and their VM templates for tool sets seen recently: building
// hints, search indexes and installing ALL_TOOLS happen once per tool-set version. It is an LRU of
// 16 entries (a template is a few MB), so a gateway whose tool set keeps changing stays bounded.
type catalogCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *cachedCatalog, most recent first
	byKey map[string]*list.Element
}

type cachedCatalog struct {
	key      string
	cat      *catalog.Catalog
	tmplOnce sync.Once
	tmpl     *sandbox.Template
	tmplErr  error
}

func newCatalogCache(n int) *catalogCache {
	return &catalogCache{max: n, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *catalogCache) get(key string, build func() *catalog.Catalog) *cachedCatalog {
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
		cc := el.Value.(*cachedCatalog)
		c.mu.Unlock()
		return cc
	}
	c.mu.Unlock()
	cc := &cachedCatalog{key: key, cat: build()}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok { // built concurrently
		return el.Value.(*cachedCatalog)
	}
	c.byKey[key] = c.order.PushFront(cc)
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cachedCatalog).key)
	}
	return cc
}
