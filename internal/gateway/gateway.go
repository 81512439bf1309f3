// Package gateway assembles a running codemode process from a configuration: the code-mode
// Runtime, the built-in tools and the upstream MCP servers. The serve, exec and tools commands
// all start here, so they see the same tools.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/agentloop"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/builtin"
	gitplugin "github.com/codemode-go/codemode/internal/plugins/git"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/runstore/redisstore"
	"github.com/codemode-go/codemode/internal/upstream"
)

// Gateway is a configured runtime with its tool sources.
type Gateway struct {
	RT  *codemode.Runtime
	Cfg *config.Config
	log *slog.Logger

	mu      sync.Mutex
	natives []*api.Tool
	mcp     *upstream.Manager // nil without MCP servers
	changed chan struct{}
	stop    context.CancelFunc
	// store is the shared run store built from runStore (nil: runs stay in the process).
	store runstore.Durable
	owned bool // Close closes store
}

// Options for Open.
type Options struct {
	Logger *slog.Logger
	// Trajectory receives every call's record (codemode.Options.Trajectory).
	Trajectory api.Trajectory
	// Hooks run before every call (codemode.Options.Hooks).
	Hooks []api.BeforeToolCallHook
	// Approver asks a person about calls that need approval (codemode.Options.Approver).
	Approver api.Approver
	// Extra native tools (tests, embedders).
	Tools []*api.Tool
	// Plugins are started in order by Open and stopped by Close; their tools follow the core
	// tools and the bundled plugins enabled by the configuration (K1), with Owner set to the
	// plugin id.
	Plugins []api.Plugin
	Wasm    []byte
	// ReadyTimeout bounds how long Open waits for MCP servers to connect before serving what is
	// ready (the rest join through Changed). Zero means 20 s.
	ReadyTimeout time.Duration
	// RunStore replaces the store runStore.redis would build (tests, embedders); Close leaves it
	// open.
	RunStore runstore.Durable
	// Agents runs the child agents of agents.run when tools.swarm is on (codemode agent: its
	// own model). nil: the built-in loop against tools.swarm.model, or — without one — no
	// agents.* at all.
	Agents codemode.AgentRunner
}

// Open starts the runtime and the tool sources described by cfg.
func Open(ctx context.Context, cfg *config.Config, opts Options) (*Gateway, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{Cfg: cfg, log: log, changed: make(chan struct{}, 1)}
	natives, err := builtinTools(cfg)
	if err != nil {
		return nil, err
	}
	g.natives = append(natives, opts.Tools...)
	ro := codemode.ConfigOptions(cfg)
	// Admission control for every exec and wait of the process (runtime.admission).
	adm := cfg.Runtime.Admission
	ro.Admission = &adm
	ro.Logger = log
	ro.Trajectory = opts.Trajectory
	ro.Hooks = opts.Hooks
	ro.Approver = opts.Approver
	ro.Engine.Wasm = opts.Wasm
	// Fail closed but start: every exec reports runtime_unavailable and /readyz says why.
	ro.Engine.AllowMissing = true
	g.store = opts.RunStore
	if g.store == nil && cfg.RunStore.Redis != nil {
		redisstore.RouteClientLogs(log)
		pub, err := codemode.OpenRunStore(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		g.store, g.owned = runstore.Private(pub), true
	}
	if g.store != nil {
		ro.RunStore = runstore.Public(g.store).(*codemode.RunStore)
	}
	if err := swarmRunner(&ro, opts.Agents, log); err != nil {
		if g.owned {
			_ = g.store.Close()
		}
		return nil, err
	}
	if len(cfg.MCP.Servers) > 0 {
		g.mcp = upstream.New(ctx, cfg, log)
		ro.Resources = g.mcp
	}
	rt, err := codemode.New(ctx, ro)
	if err != nil {
		if g.mcp != nil {
			g.mcp.Close()
		}
		if g.owned {
			_ = g.store.Close()
		}
		return nil, err
	}
	g.RT = rt
	plugins := append(bundledPlugins(cfg), opts.Plugins...) // bundled plugins first (K1)
	for _, p := range plugins {
		if err := rt.AddPlugin(ctx, p); err != nil {
			g.Close()
			return nil, fmt.Errorf("gateway: %w", err)
		}
	}
	if g.mcp != nil {
		wait := opts.ReadyTimeout
		if wait == 0 {
			wait = 20 * time.Second
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		_ = g.mcp.WaitReady(wctx) // servers still connecting join later through Changed
		cancel()
		fctx, stop := context.WithCancel(context.Background())
		g.stop = stop
		go g.forward(fctx)
	}
	return g, nil
}

// forward turns the MCP manager's change signals into the gateway's.
func (g *Gateway) forward(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.mcp.Changed():
			g.notify()
		}
	}
}

// bundledPlugins are the plugins the configuration enables.
func bundledPlugins(cfg *config.Config) []api.Plugin {
	var out []api.Plugin
	if cfg.Plugins.Git.Enabled {
		out = append(out, gitplugin.Plugin(gitplugin.Options{Workspace: cfg.Workspace}))
	}
	return out
}

// ReloadPlugins applies the `plugins` section of a new configuration while the gateway runs
// (`codemode serve` on SIGHUP): bundled plugins newly enabled are added, those disabled are
// removed (their namespaces cleared, their calls in suspended runs failing cleanly), and clients
// are told the tool list changed. It returns what it did, e.g. ["+git"] or ["-git"].
func (g *Gateway) ReloadPlugins(ctx context.Context, cfg *config.Config) ([]string, error) {
	want := map[string]api.Plugin{}
	for _, p := range bundledPlugins(cfg) {
		want[p.ID] = p
	}
	have := map[string]bool{}
	for _, id := range g.RT.Plugins() {
		have[id] = true
	}
	var changes []string
	var errs []error
	for _, id := range []string{gitplugin.PluginID} { // the bundled plugins; an embedder's stay
		switch p, on := want[id]; {
		case on && !have[id]:
			if err := g.RT.AddPlugin(ctx, p); err != nil {
				errs = append(errs, err)
				continue
			}
			changes = append(changes, "+"+id)
		case !on && have[id]:
			if err := g.RT.RemovePlugin(ctx, id); err != nil {
				errs = append(errs, err)
			}
			changes = append(changes, "-"+id)
		}
	}
	if len(changes) > 0 {
		g.notify()
	}
	return changes, errors.Join(errs...)
}

// MCPStatus reports the upstream MCP servers (nil without any).
func (g *Gateway) MCPStatus() []upstream.ServerStatus {
	if g.mcp == nil {
		return nil
	}
	return g.mcp.Status()
}

// Upstreams is the connection manager of the upstream MCP servers (nil without any).
func (g *Gateway) Upstreams() *upstream.Manager { return g.mcp }

// AdmissionStats reports the admission controller: VMs running, calls queued, calls refused.
func (g *Gateway) AdmissionStats() (running, queued int, rejected uint64) {
	a := g.RT.Stats().Admission
	return a.Running, a.Queued, a.Rejected
}

// Tools returns the effective tools in source order: core and plugin tools, then MCP tools.
func (g *Gateway) Tools() []*api.Tool {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*api.Tool, 0, len(g.natives))
	out = append(out, g.natives...)
	if g.mcp != nil {
		out = append(out, g.mcp.Tools()...)
	}
	return out
}

// Surface activates code mode for one run.
func (g *Gateway) Surface(rc api.RunContext, client []*api.Tool) *codemode.Surface {
	tools := g.Tools()
	tools = append(tools, client...)
	return g.RT.Activate(rc, tools)
}

// Changed is signalled (coalesced) when the set of tools changes, e.g. an MCP server connected
// or announced tools/list_changed.
func (g *Gateway) Changed() <-chan struct{} { return g.changed }

func (g *Gateway) notify() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// Close stops everything: suspended runs, the runtime, and every MCP server process.
func (g *Gateway) Close() error {
	if g.stop != nil {
		g.stop()
	}
	err := g.RT.Close()
	if g.mcp != nil {
		if cerr := g.mcp.Close(); err == nil {
			err = cerr
		}
	}
	if g.owned {
		_ = g.store.Close() // the runs stay in Redis for the other replicas
	}
	return err
}

// SharedRunStore reports whether suspended runs live in a store other processes share.
func (g *Gateway) SharedRunStore() bool { return g.store != nil }

// RunStore is the shared run store, or nil (runs in the process).
func (g *Gateway) RunStore() runstore.Durable { return g.store }

// builtinTools returns the built-in native tools enabled by cfg.
func builtinTools(cfg *config.Config) ([]*api.Tool, error) {
	return builtin.Tools(cfg)
}

// swarmRunner gives the runtime its children's runner when tools.swarm is on: the caller's, or
// the built-in loop against tools.swarm.model. Without either the swarm stays off (a gateway
// never calls a model nobody configured) and says so once.
func swarmRunner(ro *codemode.Options, runner codemode.AgentRunner, log *slog.Logger) error {
	sw := ro.Swarm
	if sw == nil || !sw.Enabled {
		ro.Swarm = nil
		return nil
	}
	if runner == nil && sw.Model != nil {
		r, err := agentloop.New(*sw.Model, log) // the library's own way to the built-in loop
		if err != nil {
			return fmt.Errorf("tools.swarm.model: %w", err)
		}
		runner = r
	}
	if runner == nil {
		log.Info("tools.swarm is enabled but names no model (tools.swarm.model): cells get no agents.run")
		ro.Swarm = nil
		return nil
	}
	ro.Agents = runner
	return nil
}
