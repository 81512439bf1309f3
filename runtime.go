// Package codemode puts "code mode" in front of any tool set: instead of every tool schema, the
// model sees two tools, exec and wait, and writes a small JavaScript or TypeScript program that
// searches, describes and calls a hidden per-run catalog from a QuickJS sandbox compiled to
// WebAssembly.
//
// A Runtime is created once per process. For each agent run, Activate turns the run's effective
// tools into a Surface: the tools the model sees, and a handle that executes the model's exec,
// wait and direct tool calls for that run (Handle, or Exec and Wait). See the package examples
// and docs/semantics.md for the contract; ids such as (X7) or (W3) in doc comments are its
// anchors. The gateway package adds the tool sources the binary has: MCP servers, the built-in
// workspace tools, plugins, and serving over MCP.
package codemode

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/admission"
	"github.com/codemode-go/codemode/internal/catalog"
	"github.com/codemode-go/codemode/internal/dispatch"
	"github.com/codemode-go/codemode/internal/durable"
	"github.com/codemode-go/codemode/internal/namespace"
	"github.com/codemode-go/codemode/internal/quickjs"
	"github.com/codemode-go/codemode/internal/results"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/sandbox"
	"github.com/codemode-go/codemode/internal/search/embed"
	"github.com/codemode-go/codemode/internal/swarm"
)

// Options configure a Runtime. The zero value is ready to use: code mode on with the default
// limits, every tool allowed, the engine found or fetched as Engine describes.
type Options struct {
	// CodeMode is the code-mode switch and its limits (timeouts, memory, output, snapshots,
	// search). nil means config.DefaultCodeMode(): on, with the default limits. To change a
	// limit, start from config.DefaultCodeMode(); a zero limit means its default, Enabled false
	// exposes every tool directly (A4), and an out-of-range limit makes New fail naming it.
	CodeMode *config.CodeMode
	// Policy filters the tools of every run and names the direct-only tools.
	Policy Policy
	// Hooks run before every nested tool call, every direct tool call and every exec/wait
	// (the exec's event carries toolKind "code_mode_exec"). They may block a call or rewrite its
	// input.
	Hooks []api.BeforeToolCallHook
	// Approvals says which calls need a person's decision (rules by catalog id, after the hooks).
	// A nested call that needs one waits without blocking the cell; see Approver and
	// Surface.Decide.
	Approvals api.Approvals
	// Approver asks a person (a terminal prompt, an MCP client's elicitation). nil means the
	// embedder decides: exec and wait return waiting with reason "approval" and the calls in
	// pendingApprovals, and Surface.Decide settles each; direct calls then get the rules'
	// fallback.
	Approver api.Approver
	// Trajectory receives a record of every exec, wait, direct and nested call, approval and
	// progress update (E2), unsanitized: the gateway's audit log (serve.trajectory) and
	// `codemode agent --transcript` write them as bounded, redacted JSON Lines that
	// `codemode trace` prints.
	Trajectory api.Trajectory
	// Resources reaches MCP resources and prompts for MCP.<server>.resources and .prompts.
	Resources api.Resources
	// Logger receives operational logs (warnings about the tool set, an unavailable engine).
	// nil discards them.
	Logger *slog.Logger
	// Engine says where the QuickJS WebAssembly module comes from. With code mode enabled, New
	// fails when the module cannot be loaded, unless Engine.AllowMissing.
	Engine Engine
	// HotRuns bounds the suspended runs whose VM stays alive, so that wait continues it in place
	// (about 40 µs) instead of restoring its snapshot (about 0.6 ms), and exec → waiting skips the
	// snapshot. 0 means DefaultHotRuns; a negative value turns hot VMs off. Behaviour is the same
	// either way: the least recently suspended VM is snapshotted and closed when the bounds are
	// reached.
	HotRuns int
	// HotMemoryBytes bounds the memory those VMs hold, counted as their linear memories'
	// capacity (0: DefaultHotMemoryBytes).
	HotMemoryBytes int64
	// Suspended bounds the suspended runs in all, per principal and per session, in runs and in
	// bytes (W5), so no client or tenant can use up the store for the others. With a RunStore
	// the figures are the fleet's (every process must be given the same ones).
	Suspended SuspendedLimits
	// Admission, when set, bounds the VMs that run at once, for a runtime that many sessions
	// share (a server): at most MaxRunning compute at a time (4 × cores by default), their guest
	// heaps never exceed MemoryBudgetBytes (half the physical memory by default), MaxQueued
	// more wait their turn, fairly between sessions and principals, and a cell idle on timers or
	// nested calls gives its CPU share back while it waits. A refused exec or wait fails with
	// code "overloaded" (a refused wait leaves its run suspended). Zero fields are derived from
	// the machine; nil means no admission control.
	Admission *config.Admission
	// RunStore, when set, keeps suspended runs in a store shared by every runtime given it
	// (OpenRunStore: runStore.redis in the configuration; NewMemoryRunStore: one process), so
	// that a wait on any of them resumes a run any of them started, and a restart loses none. nil
	// keeps them in this runtime's memory. The runtime does not close it. The same store keeps
	// the values cells save with results.save, so they survive restarts too.
	RunStore *RunStore
	// Swarm, when enabled, gives cells agents.run, phase and log to start child agents
	// (tools.swarm: limits, the children's tools, their model). nil or not Enabled leaves cells
	// without them: code mode alone never exposes agents.*. Zero limits mean their defaults.
	Swarm *config.Swarm
	// Agents runs the child agents. nil: the built-in loop of `codemode agent` against
	// Swarm.Model, when the program links package agentloop (New fails with ErrNoAgentLoop
	// otherwise).
	Agents AgentRunner

	// resultLimits bound the values cells save (runtime.results; set by ConfigOptions).
	resultLimits results.Limits
	// admitter replaces the admission controller (tests).
	admitter admitter
}

// SuspendedLimits bound suspended runs. A run counts against its session
// (api.RunContext.SessionKey) and its principal (RunContext.Principal, or the session key when
// there is none). Zero fields mean no bound, except MaxRuns (0: 1024); ConfigOptions fills them
// from the configuration (runtime.suspended, whose unset figures follow the memory budget).
type SuspendedLimits struct {
	// MaxRuns bounds the suspended runs in all (with a shared store: fleet-wide).
	MaxRuns int
	// MaxRunsPerPrincipal bounds one principal's suspended runs.
	MaxRunsPerPrincipal int
	// MaxRunsPerSession bounds one session's suspended runs.
	MaxRunsPerSession int
	// MaxBytes bounds what all suspended runs' snapshots take.
	MaxBytes int64
	// MaxBytesPerPrincipal bounds one principal's snapshots.
	MaxBytesPerPrincipal int64
	// MaxBytesPerSession bounds one session's snapshots.
	MaxBytesPerSession int64
}

// storeLimits maps the limits onto the run stores'.
func (l SuspendedLimits) storeLimits() runstore.Limits {
	return runstore.Limits{Runs: l.MaxRuns, PrincipalRuns: l.MaxRunsPerPrincipal, SessionRuns: l.MaxRunsPerSession,
		Bytes: l.MaxBytes, PrincipalBytes: l.MaxBytesPerPrincipal, SessionBytes: l.MaxBytesPerSession}
}

// suspendedFromConfig is runtime.suspended with its derived figures filled in.
func suspendedFromConfig(cfg *config.Config) SuspendedLimits {
	s := cfg.Runtime.Suspended.Resolve(admission.Derive(cfg).MemoryBudget)
	return SuspendedLimits{MaxRuns: s.MaxRuns, MaxRunsPerPrincipal: s.MaxRunsPerPrincipal, MaxRunsPerSession: s.MaxRunsPerSession,
		MaxBytes: s.MaxBytes, MaxBytesPerPrincipal: s.MaxBytesPerPrincipal, MaxBytesPerSession: s.MaxBytesPerSession}
}

// Defaults of the hot VM bounds.
const (
	DefaultHotRuns        = 64
	DefaultHotMemoryBytes = 256 << 20
)

// ConfigOptions maps a configuration file (the `codemode` command's JSON5 file) onto Options:
// code mode and its limits, the tool policy, the engine's compilation cache and the limits of
// suspended runs and saved results. The caller adds what a file cannot hold (hooks, a logger, a
// run store) and, for a runtime many sessions share, Admission (the gateway passes
// runtime.admission: a process-wide budget).
func ConfigOptions(cfg *config.Config) Options {
	cm := cfg.Tools.CodeMode
	cm.Languages = append([]string(nil), cm.Languages...)
	t := cfg.Tools
	sw := t.Swarm
	sw.Tools.Allow, sw.Tools.Deny = slices.Clone(sw.Tools.Allow), slices.Clone(sw.Tools.Deny)
	return Options{
		Swarm:    &sw,
		CodeMode: &cm,
		Policy: Policy{
			Allow: slices.Clone(t.Allow), Deny: slices.Clone(t.Deny), DisableTools: t.DisableTools,
			DirectOnly: slices.Clone(t.DirectOnly), SandboxAllowsMCP: t.Sandbox.AllowsBundleMCP(),
		},
		Approvals:    api.Approvals{Rules: slices.Clone(t.Approvals.Rules), ExemptReadOnly: t.Approvals.ExemptReadOnly},
		Engine:       Engine{CompileCacheDir: cfg.Runtime.CompileCacheDir, NoCompileCache: !cfg.Runtime.CompileCache},
		Suspended:    suspendedFromConfig(cfg),
		resultLimits: resultLimitsFromConfig(cfg.Runtime.Results),
	}
}

func resultLimitsFromConfig(r config.Results) results.Limits {
	return results.Limits{MaxEntriesPerRun: r.MaxEntriesPerRun, MaxBytesPerRun: r.MaxBytesPerRun,
		MaxBytesPerOwner: r.MaxBytesPerSession, MaxBytes: r.MaxBytes, TTL: time.Duration(r.TTLSeconds) * time.Second}
}

// Policy is the tool policy applied to every run before code mode sees the tools (A3).
type Policy struct {
	// Allow, when non-nil, is the only set of tools a run may use: tool names or catalog ids
	// ("read", "native:core:*", "mcp:github:*") with '*' and '?' globs. An empty, non-nil slice
	// gives runs no tools (and code mode then stays inactive, A7).
	Allow []string
	// Deny removes matching tools; it wins over Allow.
	Deny []string
	// DisableTools gives runs no tools at all (A7).
	DisableTools bool
	// DirectOnly names tools (by name or catalog id) that stay visible to the model under code
	// mode because their results cannot cross the JSON bridge (images, screens). A tool can also
	// declare itself direct-only (api.Tool.DirectOnly). Entries that match no tool of a run are
	// reported by Surface.Warnings.
	DirectOnly []string
	// SandboxAllowsMCP lets runs marked Sandboxed reach MCP tools (the contract's
	// tools.sandbox.tools.alsoAllow: ["bundle-mcp"], C4).
	SandboxAllowsMCP bool
}

// Engine locates the QuickJS WebAssembly module: the npm package quickjs-wasi at the version
// pinned in this module, checked against its pinned hashes before use. The first that applies
// wins: Wasm, WasmFile, $CODEMODE_QUICKJS_WASM, the module embedded by `make`, the download cache,
// a download from the npm registry ($CODEMODE_NPM_REGISTRY, npm_config_registry, or
// registry.npmjs.org) unless NoFetch or CODEMODE_QUICKJS_FETCH=0.
type Engine struct {
	// Wasm is the module's bytes (offline use, tests).
	Wasm []byte
	// WasmFile is a path to the module (offline use).
	WasmFile string
	// Dir is where a downloaded module is cached ("" means <user cache dir>/codemode/engine).
	Dir string
	// NoFetch never downloads: without a module at hand every exec fails with
	// runtime_unavailable.
	NoFetch bool
	// CompileCacheDir is wazero's compilation cache ("" means <user cache dir>/codemode/wazero).
	CompileCacheDir string
	// NoCompileCache compiles the module in memory on every start (≈600 ms instead of ≈18 ms).
	NoCompileCache bool
	// AllowMissing lets New succeed when the module cannot be loaded: code mode then fails
	// closed — the model still sees only exec and wait, every exec fails with
	// runtime_unavailable, and Runtime.Err says why. For a server that must start to report its
	// state (codemode serve does); a program that cannot work without the sandbox leaves it off
	// and checks New's error.
	AllowMissing bool
}

// Runtime is the process-wide code-mode runtime: the compiled QuickJS module, the template VM,
// the catalog cache and the store of suspended runs. It is safe for concurrent use.
type Runtime struct {
	opts Options
	cm   config.CodeMode
	// embedder is the optional dense-retrieval client for tool search (issue 23), or nil.
	embedder *embed.Client
	log      *slog.Logger
	engine   *sandbox.Engine
	// engineErr is why the sandbox cannot run: every exec then fails with runtime_unavailable
	// (fail closed, never a fallback to direct tools).
	engineErr error
	mod       *quickjs.Module
	store     runstore.Backend
	durable   *durable.Runs // nil without Options.RunStore
	catalogs  *catalogCache
	counters  *runCounters
	gate      *dispatch.Gate
	// swarm runs the children of agents.run (nil: off); swarmCfg is its configuration.
	swarm    *swarm.Runtime
	swarmCfg config.Swarm
	// results keeps what cells save (results.*) and oversized final values, per run scope.
	results results.Store
	// adm hands out the slots of running VMs (Options.Admission); nil without admission control.
	// admc is the controller behind it, for Stats.
	adm  admitter
	admc *admission.Controller
	// namespaces is the plugin namespace registry (N1); plugins the added plugins.
	namespaces *namespace.Registry
	plugins    plugins
	warned     sync.Map // warnings already logged (string → struct{})
}

// New creates a Runtime. With code mode enabled it loads and compiles the QuickJS module (found
// or fetched as Engine describes) and fails if that is impossible, unless Engine.AllowMissing
// (then every exec fails with runtime_unavailable and Err says why). It fails for invalid
// options, naming the field.
func New(ctx context.Context, opts Options) (*Runtime, error) {
	cm := config.DefaultCodeMode()
	if opts.CodeMode != nil {
		cm = withDefaultLimits(*opts.CodeMode)
		if err := cm.Validate(); err != nil {
			return nil, err
		}
	}
	opts.CodeMode = &cm
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := checkApprovals(opts.Approvals); err != nil {
		return nil, err
	}
	rt := &Runtime{opts: opts, cm: cm, log: log,
		store:    runstore.NewWithLimits(cm.SnapshotTTL(), opts.Suspended.storeLimits()),
		catalogs: newCatalogCache(16), counters: newRunCounters(4096),
		gate: &dispatch.Gate{Hooks: opts.Hooks, Approvals: opts.Approvals, Approver: opts.Approver,
			DefaultTimeout: cm.SnapshotTTL(), Trajectory: opts.Trajectory},
		namespaces: namespace.NewRegistry()}
	if opts.Admission != nil {
		c := admission.New(admission.FromSettings(*opts.Admission, cm))
		quickjs.SetMemoryPoolSize(c.MaxRunning())
		rt.adm, rt.admc = controllerAdmitter{c}, c
	}
	if opts.admitter != nil {
		rt.adm = opts.admitter
	}
	if opts.RunStore != nil && opts.RunStore.d != nil {
		rt.durable = durable.New(opts.RunStore.d, log, cm.SnapshotTTL())
	}
	rt.results = results.NewMemory(opts.resultLimits)
	if rs, ok := opts.RunStore.durable().(interface {
		ResultStore(results.Limits) results.Store
	}); ok {
		rt.results = rs.ResultStore(opts.resultLimits) // shared and restart-durable, like the runs
	}
	sw, swCfg, err := newSwarm(&opts)
	if err != nil {
		return nil, err
	}
	if sw != nil && cm.Enabled {
		rt.swarm, rt.swarmCfg = sw, swCfg
		rt.opts.Agents = opts.Agents // the built-in runner, when newSwarm chose it
	}
	if cm.SearchEmbeddings != nil {
		c, err := newEmbedder(*cm.SearchEmbeddings)
		if err != nil {
			return nil, fmt.Errorf("tools.codeMode.searchEmbeddings: %w", err)
		}
		rt.embedder = c
	}
	if cm.Enabled {
		rt.loadEngine(ctx)
		if rt.engineErr != nil && !opts.Engine.AllowMissing {
			return nil, fmt.Errorf("code mode engine unavailable: %w (Options.Engine says where the QuickJS module comes from; set Engine.AllowMissing to start anyway, with every exec failing)", rt.engineErr)
		}
	}
	if rt.engine != nil && rt.durable != nil {
		rt.engine.SetOwner(rt.durable.Owner())
	}
	return rt, nil
}

// newEmbedder makes the tool-search embeddings client from its configuration.
func newEmbedder(c config.SearchEmbeddings) (*embed.Client, error) {
	key := ""
	if !c.APIKey.IsZero() {
		k, err := c.APIKey.Resolve()
		if err != nil {
			return nil, fmt.Errorf("apiKey: %w", err)
		}
		key = k
	}
	dir := c.CacheDir
	if dir == "" {
		if base, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(base, "codemode", "embeddings")
		}
	}
	return embed.New(embed.Config{URL: c.URL, Model: c.Model, APIKey: key,
		QueryTimeout: time.Duration(c.QueryTimeoutMs) * time.Millisecond, CacheDir: dir})
}

// withDefaultLimits fills the zero fields of a code-mode configuration made in Go with the
// defaults, so a literal that sets one limit keeps the others (Enabled stays as given).
func withDefaultLimits(c config.CodeMode) config.CodeMode {
	d := config.DefaultCodeMode()
	fill := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	fill64 := func(v *int64, def int64) {
		if *v == 0 {
			*v = def
		}
	}
	if c.Runtime == "" {
		c.Runtime = d.Runtime
	}
	if c.Mode == "" {
		c.Mode = d.Mode
	}
	if c.Languages == nil {
		c.Languages = d.Languages
	}
	fill(&c.TimeoutMs, d.TimeoutMs)
	fill64(&c.MemoryLimitBytes, d.MemoryLimitBytes)
	fill(&c.MaxOutputBytes, d.MaxOutputBytes)
	fill64(&c.MaxSnapshotBytes, d.MaxSnapshotBytes)
	fill(&c.MaxPendingToolCalls, d.MaxPendingToolCalls)
	fill(&c.SnapshotTTLSeconds, d.SnapshotTTLSeconds)
	fill(&c.SearchDefaultLimit, d.SearchDefaultLimit)
	fill(&c.MaxSearchLimit, d.MaxSearchLimit)
	return c
}

func (rt *Runtime) loadEngine(ctx context.Context) {
	e := rt.opts.Engine
	mo := quickjs.ModuleOptions{Wasm: e.Wasm, WasmFile: e.WasmFile, EngineDir: e.Dir, NoFetch: e.NoFetch,
		CacheDir: e.CompileCacheDir, DisableCache: e.NoCompileCache, Logger: rt.log}
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
	if n := rt.opts.HotRuns; n >= 0 {
		if n == 0 {
			n = DefaultHotRuns
		}
		bytes := rt.opts.HotMemoryBytes
		if bytes <= 0 {
			bytes = DefaultHotMemoryBytes
		}
		eng.SetHotCache(sandbox.NewHotCache(n, bytes))
	}
	rt.mod, rt.engine = mod, eng
}

// checkApprovals rejects rules with invalid patterns, fallbacks or timeouts.
func checkApprovals(a api.Approvals) error {
	for i, r := range a.Rules {
		if _, err := path.Match(r.Match, ""); err != nil || r.Match == "" {
			return fmt.Errorf("approvals: rule %d: %q is not a valid pattern", i, r.Match)
		}
		if r.Fallback != "" && r.Fallback != api.FallbackDeny && r.Fallback != api.FallbackAllow {
			return fmt.Errorf("approvals: rule %d (%s): fallback %q is neither %q nor %q", i, r.Match, r.Fallback, api.FallbackDeny, api.FallbackAllow)
		}
		if r.Timeout < 0 {
			return fmt.Errorf("approvals: rule %d (%s): negative timeout", i, r.Match)
		}
	}
	return nil
}

// Err reports why the sandbox is unavailable, or nil. With code mode disabled it is always nil.
func (rt *Runtime) Err() error {
	if !rt.cm.Enabled {
		return nil
	}
	if rt.engineErr == nil && rt.engine == nil {
		return errors.New("code mode runtime is closed")
	}
	return rt.engineErr
}

// CodeMode returns a copy of the code-mode settings in use.
func (rt *Runtime) CodeMode() config.CodeMode {
	c := rt.cm
	c.Languages = append([]string(nil), c.Languages...)
	return c
}

// CancelRun drops a suspended run and cancels its pending calls (W7). It reports whether the run
// existed.
func (rt *Runtime) CancelRun(runID string) bool {
	if d := rt.durable; d != nil {
		ok, err := d.Cancel(runID)
		if err != nil {
			rt.log.Warn("run store: cannot cancel a run", "run", runID, "err", err)
		}
		return ok
	}
	return rt.store.Cancel(runID)
}

// EndSession drops every suspended run of a session and forgets its telemetry counters (W7). It
// returns the number of runs dropped.
func (rt *Runtime) EndSession(sessionKey string) int {
	rt.counters.forgetSession(sessionKey)
	if rt.results != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := rt.results.DropSession(ctx, sessionKey); err != nil {
			rt.log.Warn("result store: cannot drop a session's results", "session", sessionKey, "err", err)
		}
		cancel()
	}
	if d := rt.durable; d != nil {
		n, err := d.EndSession(sessionKey)
		if err != nil {
			rt.log.Warn("run store: cannot cancel a session's runs", "session", sessionKey, "err", err)
		}
		return n
	}
	return rt.store.CancelSession(sessionKey)
}

// Stats is a point-in-time view of the runtime's resources.
type Stats struct {
	// SuspendedRuns is the number of runs waiting for `wait`.
	SuspendedRuns int
	// SuspendedBytes is what they count against the byte limits (Options.Suspended): their
	// snapshots, and for a hot run the most its snapshot can take once evicted.
	SuspendedBytes int
	// HotRuns is how many of them keep a live VM, so that wait continues them in place.
	HotRuns int
	// HotBytes is the memory those VMs hold (their linear memories' capacity).
	HotBytes int64
	// HotEvictions counts the VMs snapshotted and closed to stay within HotRuns and
	// HotMemoryBytes.
	HotEvictions int64
	// RunStore counts what happened with a shared run store (Options.RunStore); zero without one.
	RunStore RunStoreStats
	// Admission is the state of admission control (Options.Admission); zero without it.
	Admission AdmissionStats
}

// AdmissionStats is the state of admission control.
type AdmissionStats struct {
	// Running is the number of VMs computing now, of at most MaxRunning.
	Running, MaxRunning int
	// Queued is the number of execs and waits waiting for a slot.
	Queued int
	// Rejected counts the execs and waits refused with code "overloaded" since the start.
	Rejected uint64
}

// RunStoreStats are counters of a runtime's use of a shared run store, since it started.
type RunStoreStats struct {
	// Takeovers counts waits that resumed a run from a replica that stopped (its wait died
	// midway, or its calls in flight had no live owner).
	Takeovers uint64
	// ReissuedCalls counts replay-safe calls of a stopped replica issued again; LostCalls the
	// others, which settled in their cell as lost_on_replica.
	ReissuedCalls, LostCalls uint64
	// BusyWaits counts waits answered "busy": another wait held the run (lease contention).
	BusyWaits uint64
	// WriteFailures counts writes the store refused or could not take (unreachable, full).
	WriteFailures uint64
}

// Stats reports the runtime's resources.
func (rt *Runtime) Stats() Stats {
	st := Stats{SuspendedRuns: rt.store.Len(), SuspendedBytes: rt.store.Bytes()}
	if d := rt.durable; d != nil {
		// This process's share: the runs whose latest VM it holds.
		ds := d.Stats()
		st.SuspendedRuns, st.SuspendedBytes = ds.Runs, ds.Bytes
		st.RunStore = RunStoreStats{Takeovers: ds.Takeovers, ReissuedCalls: ds.Reissued, LostCalls: ds.Lost,
			BusyWaits: ds.Busy, WriteFailures: ds.WriteFailures}
	}
	if eng := rt.engine; eng != nil && eng.HotCache() != nil {
		h := eng.HotCache().Stats()
		st.HotRuns, st.HotBytes, st.HotEvictions = h.Runs, h.Bytes, h.Evicted
	}
	if c := rt.admc; c != nil {
		st.Admission.Running, st.Admission.Queued, st.Admission.Rejected = c.Stats()
		st.Admission.MaxRunning = c.MaxRunning()
	}
	return st
}

// Drain prepares a graceful stop with a shared run store (Options.RunStore): it waits until the
// nested calls this process still runs for suspended runs have finished and their results are
// stored, so that no other process has to count them lost, or until ctx ends. Call it after the
// last exec and wait returned, before Close. Without a shared store it returns at once (the runs
// end with the process).
func (rt *Runtime) Drain(ctx context.Context) error {
	if rt.durable == nil {
		return nil
	}
	return rt.durable.Drain(ctx)
}

// Close drops suspended runs, stops the added plugins and releases the module. Execs after Close
// fail with runtime_unavailable.
func (rt *Runtime) Close() error {
	rt.store.Close()
	if rt.durable != nil {
		rt.durable.Close() // the records stay in the store for the other processes
	}
	if rt.swarm != nil {
		// The runs are gone and their children cancelled: give them a moment to record how
		// they ended (and to leave the engine) before it closes.
		rt.swarm.Idle(2 * time.Second)
	}
	err := rt.stopPlugins(context.Background())
	if rt.mod != nil {
		err = errors.Join(err, rt.mod.Close(context.Background()))
		rt.mod, rt.engine = nil, nil
	}
	return err
}

// warnOnce logs a warning about the tool set the first time it is seen: a gateway activates the
// same tool set for every request and must not repeat itself.
func (rt *Runtime) warnOnce(msg string) {
	if _, dup := rt.warned.LoadOrStore(msg, struct{}{}); !dup {
		rt.log.Warn(msg)
	}
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
