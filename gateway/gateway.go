// Package gateway is what the codemode binary runs, as a library: code mode in front of a set of
// tool sources — the built-in workspace tools, plugins (the git plugin among them), MCP servers
// and your own tools — configured with the same [config.Config] as `codemode serve` and served
// over MCP the same way.
//
// Open starts everything the configuration names: the code-mode runtime (with admission control
// and, with runStore.redis, the shared run store), the built-in tools over cfg.Workspace, the
// bundled plugins that cfg.Plugins enables, and a connection to every MCP server in
// cfg.MCP.Servers (stdio processes with a minimal environment, or streamable HTTP), with the
// same limits and hygiene as the binary. Then either:
//
//   - embed code mode in your own agent loop: Surface gives each run its model-facing tools
//     (exec, wait and the direct-only tools) and handles the model's calls; or
//   - serve it over MCP: ServeStdio, or Serve with any go-sdk transport.
//
// Start from config.Default() (code mode on, the built-in tools, no MCP servers) or
// config.Load(path), and change what you need; see the package examples.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	igateway "github.com/codemode-go/codemode/internal/gateway"
	"github.com/codemode-go/codemode/internal/server"
	"github.com/codemode-go/codemode/internal/trajectory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options are what a configuration file cannot hold. The zero value is fine.
type Options struct {
	// Logger receives operational logs: MCP servers connecting and failing, tool-set warnings,
	// an unavailable engine. nil discards them.
	Logger *slog.Logger
	// Tools are your program's own tools, beside the built-in ones: catalogued as
	// native:app:<name> unless they set Owner.
	Tools []*api.Tool
	// Plugins are started in order after the bundled plugins the configuration enables, and
	// stopped by Close.
	Plugins []api.Plugin
	// Hooks run before every nested tool call, direct tool call and exec/wait; they may block a
	// call or rewrite its input.
	Hooks []api.BeforeToolCallHook
	// Approver asks a person about calls that need approval (tools.approvals in the
	// configuration). nil: calls served over MCP are put to the client's person through MCP
	// elicitation (or get each rule's fallback); runs you drive through Surface return waiting
	// with reason "approval", to settle with Surface.Decide.
	Approver api.Approver
	// Trajectory receives a record of every call (exec, wait, direct and nested calls,
	// approvals, progress), beside the audit log the configuration may name (serve.trajectory).
	Trajectory api.Trajectory
	// ReadyTimeout bounds how long Open waits for MCP servers to connect before it returns with
	// the ones that are ready; the others join as they connect (Changed). 0 means 20 seconds.
	ReadyTimeout time.Duration
	// Version is reported to MCP clients in serverInfo ("" means "dev").
	Version string
	// Agents runs the child agents cells start with agents.run when tools.swarm is on. nil: the
	// built-in loop against tools.swarm.model (the gateway then calls that model itself), or —
	// when the configuration names no model — no agents.* at all.
	Agents codemode.AgentRunner
}

// Gateway is a running configuration: a code-mode runtime and its tool sources. It is safe for
// concurrent use.
type Gateway struct {
	g     *igateway.Gateway
	srv   *server.Server
	log   *slog.Logger
	audit *trajectory.Writer // serve.trajectory, when configured
}

// Open starts the runtime and every tool source cfg names. It fails for a configuration it
// cannot start (a run store it cannot reach, a plugin that fails to start, an audit log it cannot
// open); MCP servers that fail to connect do not stop it — they retry with backoff and Servers
// says how they are doing. Without the QuickJS engine Open still succeeds with code mode failing
// closed (every exec fails with runtime_unavailable); Runtime().Err() says why.
func Open(ctx context.Context, cfg *config.Config, opts Options) (*Gateway, error) {
	if cfg == nil {
		return nil, errors.New("gateway: no configuration (start from config.Default())")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var stateKey []byte
	if k := cfg.Serve.HTTP.RequestStateKey; !k.IsZero() {
		v, err := k.Resolve()
		if err == nil && len(v) < 32 {
			err = errors.New("it must be at least 32 bytes (e.g. `openssl rand -hex 32`)")
		}
		if err != nil {
			return nil, fmt.Errorf("serve.http.requestStateKey: %w", err)
		}
		stateKey = []byte(v)
	}
	gw := &Gateway{log: log}
	relay := &server.TrajectoryRelay{} // the server's metrics, once it exists
	sinks := []api.Trajectory{relay, opts.Trajectory}
	if cfg.Serve.Trajectory != "" {
		w, err := trajectory.Open(cfg.Serve.Trajectory, cfg.Serve.TrajectoryLimits)
		if err != nil {
			return nil, fmt.Errorf("serve.trajectory: %w", err)
		}
		w.AddSecrets(trajectory.ConfigSecrets(cfg)...) // masked wherever they appear (issue 22 item 7)
		gw.audit = w
		sinks = append(sinks, w)
	}
	g, err := igateway.Open(ctx, cfg, igateway.Options{Logger: log, Trajectory: trajectory.Multi(sinks...),
		Hooks: opts.Hooks, Approver: opts.Approver, Tools: opts.Tools, Plugins: opts.Plugins, ReadyTimeout: opts.ReadyTimeout,
		Agents: opts.Agents})
	if err != nil {
		if gw.audit != nil {
			_ = gw.audit.Close()
		}
		return nil, err
	}
	gw.g = g
	gw.srv = server.NewWithOptions(g, server.Options{Logger: log, Admission: g.AdmissionStats, StateKey: stateKey, Version: opts.Version})
	relay.Set(gw.srv.Trajectory())
	return gw, nil
}

// Runtime is the code-mode runtime: plugins (AddPlugin, RemovePlugin), namespaces, suspended
// runs (CancelRun, EndSession) and Stats.
func (g *Gateway) Runtime() *codemode.Runtime { return g.g.RT }

// Config is the configuration the gateway was opened with. Do not modify it.
func (g *Gateway) Config() *config.Config { return g.g.Cfg }

// Tools returns the effective tools in catalog order: the built-in and your own tools, plugin
// tools, then the MCP servers' tools as they are now.
func (g *Gateway) Tools() []*api.Tool { return g.g.Tools() }

// Surface activates code mode for one run of your agent loop: the tools the model sees
// (exec, wait and the direct-only tools when code mode is on) and the handle for the model's
// calls. clientTools are tools the run's client brings along (client:<owner>:<name>). A gateway
// whose MCP servers change their tools (Changed) gives later runs the new set.
func (g *Gateway) Surface(rc api.RunContext, clientTools []*api.Tool) *codemode.Surface {
	return g.g.Surface(rc, clientTools)
}

// Changed is signalled, coalesced, when the tool set changes: an MCP server connected,
// reconnected or announced tools/list_changed, or a plugin came or went.
func (g *Gateway) Changed() <-chan struct{} { return g.g.Changed() }

// ServerStatus is the state of one configured MCP server.
type ServerStatus struct {
	// Name is the server's name in the configuration (mcp.servers.<name>).
	Name string
	// Enabled is false for a server the configuration disables.
	Enabled bool
	// State is "connecting", "ready", "failed" (retrying with backoff) or "stopped" (disabled in
	// the configuration, or the gateway is closed).
	State string
	// Tools is the number of tools the server offers now (0 unless ready).
	Tools int
	// LastError says why the last attempt failed or the last session ended (credentials in URLs
	// redacted).
	LastError string
	// Restarts counts connection attempts after the first; for a stdio server each started a
	// new process.
	Restarts int
	// Since is when State last changed.
	Since time.Time
}

// Servers reports the configured MCP servers, in name order.
func (g *Gateway) Servers() []ServerStatus {
	var out []ServerStatus
	for _, s := range g.g.MCPStatus() {
		out = append(out, ServerStatus{Name: s.Name, Enabled: s.Enabled, State: string(s.State), Tools: s.Tools,
			LastError: s.LastError, Restarts: s.Restarts, Since: s.Since})
	}
	return out
}

// ReloadPlugins applies the plugins section of cfg while the gateway runs (what `codemode serve`
// does on SIGHUP): bundled plugins newly enabled are added, those disabled removed (their calls
// in suspended runs fail cleanly), and clients are told the tool list changed. Other settings
// apply after a restart. It returns what changed, e.g. ["+git"].
func (g *Gateway) ReloadPlugins(ctx context.Context, cfg *config.Config) ([]string, error) {
	return g.g.ReloadPlugins(ctx, cfg)
}

// Readiness is what /readyz reports.
type Readiness struct {
	// Ready is true when the sandbox works (code mode on), every enabled MCP server is
	// connected, the shared run store (if any) takes writes, and the gateway is not draining.
	Ready bool
	// Runtime is "ok", "unavailable" (no engine: every exec fails) or "disabled".
	Runtime string
	// Tools is the number of tools a model sees.
	Tools int
	// Servers are the MCP servers.
	Servers []ServerStatus
	// RunStore is the shared run store's state — "ok", "unreachable", "full", "readonly" or
	// "error" — or "" without one.
	RunStore string
	// Draining is true once Listener.Serve's context ended.
	Draining bool
}

// Readiness reports whether the gateway is ready to serve, and what is not.
func (g *Gateway) Readiness() Readiness {
	r := g.srv.Readiness()
	out := Readiness{Ready: r.Ready, Runtime: r.Runtime, Tools: r.Tools, Servers: g.Servers(), Draining: r.Draining}
	if r.RunStore != nil {
		out.RunStore = r.RunStore.State
	}
	return out
}

// ServeStdio serves MCP on in and out (a client that started this program) until in ends or ctx
// is done, like `codemode serve`: a malformed or oversized line gets a JSON-RPC error and the
// session goes on; when it returns, the session's calls are cancelled and its suspended runs
// dropped. Nothing but MCP messages is written to out.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	err := g.srv.Run(ctx, server.StdioTransport(in, out))
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Serve serves one MCP connection over t (any go-sdk transport: in memory for tests, a
// command's pipes, a custom one) until it closes or ctx is done.
func (g *Gateway) Serve(ctx context.Context, t mcp.Transport) error {
	return g.srv.Run(ctx, t)
}

// Close ends every MCP session, drops this process's suspended runs (with a shared run store
// their records stay for the other processes), stops the plugins and every MCP server process,
// and closes the audit log.
func (g *Gateway) Close() error {
	g.srv.Close()
	err := g.g.Close()
	if g.audit != nil {
		err = errors.Join(err, g.audit.Close())
	}
	return err
}
