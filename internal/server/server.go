// Package server is `codemode serve`: an MCP server whose tools are the code-mode surface (exec,
// wait and the direct-only tools) in front of the gateway's tool sources. Any MCP client — Claude,
// Codex, Cursor — then gets code mode over every configured MCP server and built-in tool.
//
// Over HTTP (HTTPHandler) the listener is guarded (Host, Origin, bearer token), serves MCP at
// /mcp and /healthz, /readyz, /metrics beside it. Over stdio (Run) a malformed or oversized
// line gets a JSON-RPC error and the session goes on (see stdio.go). Either way each client
// session is the scope of its suspended runs and closing it drops them (session.go); tools
// exposed directly pass upstream MCP results and definitions through byte for byte
// (passthrough.go).
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/gateway"
	"github.com/codemode-go/codemode/internal/progress"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server serves one gateway over MCP.
type Server struct {
	g       *gateway.Gateway
	log     *slog.Logger
	sdkLog  *slog.Logger
	version string // serverInfo.version

	// profiles are the principals' policies, each with its MCP server; "" is the gateway's own
	// (see principal.go).
	profiles map[string]*profile
	calls    atomic.Int64

	sess     *sessions
	posts    *posts
	states   *stateSigner
	parks    *parkings // sessionless clients' calls waiting for answers (parking.go)
	metrics  *metrics
	debug    debugFlags
	draining atomic.Bool // SIGTERM: not ready, finishing what runs (health.go)
}

// Options configure New; the zero value is fine.
type Options struct {
	Logger *slog.Logger
	// Admission reports the admission controller's state for /metrics (may be nil).
	Admission func() (running, queued int, rejected uint64)
	// StateKey signs multi round-trip request states (serve.http.requestStateKey): replicas that
	// share it accept each other's. nil: a random key of this process.
	StateKey []byte
	// Version is reported to clients in serverInfo ("" means "dev").
	Version string
}

// New creates the MCP server and registers the current surface.
func New(g *gateway.Gateway, log *slog.Logger) *Server {
	return NewWithOptions(g, Options{Logger: log})
}

// NewWithOptions is New with options.
func NewWithOptions(g *gateway.Gateway, o Options) *Server {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	version := o.Version
	if version == "" {
		version = "dev"
	}
	s := &Server{g: g, log: log, version: version, sess: newSessions(), posts: newPosts(), states: newStateSigner(o.StateKey), debug: debugFromEnv(log)}
	s.parks = newParkings(s)
	s.metrics = newMetrics(metricSources{
		suspendedRuns:  func() int { return g.RT.Stats().SuspendedRuns },
		suspendedBytes: func() int { return g.RT.Stats().SuspendedBytes },
		upstreams:      g.MCPStatus, admission: o.Admission,
		store: storeSources(g),
	})
	if s.debug.transport {
		s.sdkLog = log
	}
	s.newProfiles(g.Cfg)
	s.watchUpdates()
	s.refresh()
	return s
}

// MCP returns the underlying SDK server of the gateway's own policy (the one stdio and
// unauthenticated clients get).
func (s *Server) MCP() *mcp.Server { return s.profileFor("").srv }

// Trajectory returns the api.Trajectory that counts nested tool calls in /metrics; pass it to the
// runtime (gateway.Options.Trajectory) through a TrajectoryRelay when the server is made later.
func (s *Server) Trajectory() api.Trajectory { return s.metrics }

// TrajectoryRelay forwards to a trajectory set after the runtime was created.
type TrajectoryRelay struct {
	to atomic.Pointer[api.Trajectory]
}

// Set the target.
func (r *TrajectoryRelay) Set(t api.Trajectory) { r.to.Store(&t) }

// Record implements api.Trajectory.
func (r *TrajectoryRelay) Record(ev api.TrajectoryEvent) {
	if t := r.to.Load(); t != nil {
		(*t).Record(ev)
	}
}

// ToolCount is the number of model-visible tools now served with the gateway's own policy.
func (s *Server) ToolCount() int {
	surf := s.profileFor("").current()
	if surf == nil {
		return 0
	}
	return len(surf.ToolNames())
}

func (p *profile) current() *codemode.Surface {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.surface
}

// refresh re-activates every profile's surface from the gateway's current tools and updates
// their tool lists (clients get notifications/tools/list_changed).
func (s *Server) refresh() {
	all := s.g.Tools()
	for _, p := range s.profiles {
		s.refreshProfile(p, all)
	}
}

func (s *Server) refreshProfile(p *profile, all []*api.Tool) {
	rc := api.RunContext{AgentID: "mcp", DisableTools: p.noTools()}
	surf := s.g.RT.Activate(rc, p.tools(all))
	if p.name != "" {
		var err error
		if surf, err = surf.WithApprovals(p.approvals(s.g.Cfg.Tools.Approvals)); err != nil {
			s.log.Error("refusing the tool surface of a principal: its approval rules are invalid", "principal", p.name, "err", err)
			return
		}
	}
	if err := surf.CheckPayload(surf.ToolNames()); err != nil {
		// Never expected (Activate builds the list), but never serve a list that fails it.
		s.log.Error("refusing the tool surface", "principal", p.name, "err", err)
		return
	}
	s.setTools(p, surf)
	p.agg.refresh(surf) // the upstreams' prompts and resources this policy sees (aggregate.go)
}

// setTools serves surf's tools on the profile's MCP server.
func (s *Server) setTools(p *profile, surf *codemode.Surface) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.surface = surf
	next := map[string]bool{}
	tools := surf.Tools()
	wire := map[string]json.RawMessage{}
	for _, t := range tools {
		next[t.Name] = true
		if len(t.Wire) > 0 {
			wire[t.Name] = t.Wire
		}
	}
	var gone []string
	for n := range p.names {
		if !next[n] {
			gone = append(gone, n)
		}
	}
	if len(gone) > 0 {
		p.srv.RemoveTools(gone...)
	}
	added := map[string]bool{}
	for _, t := range tools {
		if s.addTool(p, surf, t) {
			added[t.Name] = true
		} else {
			delete(wire, t.Name)
		}
	}
	p.names, p.wire = added, wire
	if p.name == "" {
		s.debug.logSurface(s.log, surf)
	}
}

// addTool registers one tool. The SDK panics on a tool whose input schema is not an object
// schema; an upstream server's tool is untrusted, so it is registered with a permissive schema
// instead (clients still see the upstream's own definition through the passthrough), and any
// other refusal skips the tool with a log line rather than taking the server down.
func (s *Server) addTool(p *profile, surf *codemode.Surface, t codemode.ModelTool) (ok bool) {
	mt := &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: objectSchema(t.InputSchema)}
	if isObjectSchema(t.OutputSchema) {
		mt.OutputSchema = t.OutputSchema
	}
	if surf.Active() && (t.Name == "exec" || t.Name == "wait") {
		mt.Annotations = controlAnnotations(surf, t.Name)
	} else if len(t.Annotations) > 0 {
		var a mcp.ToolAnnotations
		if json.Unmarshal(t.Annotations, &a) == nil {
			mt.Annotations = &a
		}
	}
	defer func() {
		if r := recover(); r != nil {
			s.log.Warn("tool not served: the MCP SDK refused its definition", "tool", t.Name, "err", fmt.Sprint(r))
			ok = false
		}
	}()
	p.srv.AddTool(mt, s.handler(p, t.Name, t.ID))
	return true
}

// controlAnnotations are exec's and wait's honest hints: a cell may call any catalog tool, so
// they are read-only only if every catalog tool declares itself read-only (MCP tools never
// count as read-only), and they reach the open world (MCP servers, web fetch).
func controlAnnotations(surf *codemode.Surface, name string) *mcp.ToolAnnotations {
	readOnly := surf.Catalog().ReadOnly
	destructive, open := !readOnly, true
	title := "Run a code-mode cell"
	if name == "wait" {
		title = "Continue a waiting code-mode run"
	}
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: readOnly, DestructiveHint: &destructive,
		IdempotentHint: false, OpenWorldHint: &open}
}

// protocolStateless is the first protocol version without sessions (SEP-2575).
const protocolStateless = "2026-07-28"

// codeSessionEnded is the JSON-RPC error of a call on a session that ended.
const codeSessionEnded = -32004

func (s *Server) handler(p *profile, name, toolID string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		surf := p.current()
		if surf == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "no tool surface is served"}
		}
		post := s.posts.of(req)
		id := identity{prof: p}
		if post != nil {
			id = post.id
		}
		// A session with an id (HTTP) or one Run serves (stdio) scopes the call; the ephemeral
		// session of a stateless HTTP request does not.
		var st *session
		if ss := req.Session; ss != nil && (ss.ID() != "" || s.sess.known(ss)) {
			if st = s.session(ss, id); st == nil {
				return nil, &jsonrpc.Error{Code: codeSessionEnded, Message: "the MCP session has ended"}
			}
		}
		// The call ends when its session ends (W7), when the HTTP request that carries it goes
		// away (the client dropped the connection), or when the client cancels it.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if st != nil {
			defer context.AfterFunc(st.ctx, cancel)()
		}
		if post != nil {
			defer post.attach(cancel)()
		}
		if ss := req.Session; ss != nil {
			ctx = progress.With(ctx, progressSink(ctx, ss, req.Params.GetProgressToken()))
			ctx = s.callContext(ctx, req)
		}
		conv := conversationKey(req.Params.Meta)
		if conv == "" && post != nil {
			conv = post.conv
		}
		rc := runContext(id, st, conv)
		run := surf.ForRun(rc)
		callID := fmt.Sprintf("%s-%d", name, s.calls.Add(1))
		start := time.Now()
		if surf.Active() && (name == "exec" || name == "wait") {
			if err := p.enter(id.principal); err != nil {
				s.log.Info("call refused: the principal's maxRunning is reached", "principal", id.principal, "tool", name, "maxRunning", p.cfg.MaxRunning)
				out := api.ExecResult{Status: api.StatusFailed, Code: api.CodeOverloaded,
					Error: fmt.Sprintf("%s already runs %d execs and waits at once (serve.principals maxRunning): retry when one ends", describePrincipal(id), p.cfg.MaxRunning)}
				s.metrics.observe(name, id.label(), out, time.Since(start))
				return execResult(out), nil
			}
			defer p.leave(id.principal)
			// A retry carrying answers continues the run it names; its arguments are the first
			// call's and run nothing again.
			var out api.ExecResult
			var ask *mcp.CallToolResult
			retry := req.Params.RequestState != ""
			if retry {
				out, ask = s.retryCall(ctx, run, req, st, callID)
			} else {
				var res codemode.CallResult
				if res, ask = s.handle(ctx, req, st, run, callID, name, req.Params.Arguments); ask == nil {
					out = *res.Exec
				}
			}
			if ask == nil {
				out, ask = s.settleApprovals(ctx, run, req, st, callID, out, retry)
			}
			if ask != nil {
				// The client is asked (an approval, an upstream's question): the call goes on
				// when it answers.
				s.metrics.observe(name, id.label(), api.ExecResult{Status: api.StatusWaiting}, time.Since(start))
				return ask, nil
			}
			s.metrics.observe(name, id.label(), out, time.Since(start))
			s.debug.logResult(s.log, name, callID, rc.Principal, out)
			return execResult(out), nil
		}
		var res codemode.CallResult
		var ask *mcp.CallToolResult
		if req.Params.RequestState != "" {
			res, ask = s.retryDirect(ctx, req, run)
		} else {
			res, ask = s.handle(ctx, req, st, run, callID, name, req.Params.Arguments)
		}
		if ask != nil {
			return ask, nil
		}
		s.metrics.toolCall("direct", toolID, res.IsError())
		if res.Err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: res.Err.Error()}}}, nil
		}
		return passResult(ctx, res.Tool)
	}
}

// handle runs one call of a request. The call of a sessionless client that can answer an
// upstream's questions is parked (parking.go): ask is then an input-required result when an
// upstream asked the client something before the call ended.
func (s *Server) handle(ctx context.Context, req *mcp.CallToolRequest, st *session, run *codemode.Surface, callID, name string, args json.RawMessage) (res codemode.CallResult, ask *mcp.CallToolResult) {
	if p := s.parks.forCall(ctx, req, st, scopeKey(run.RunContext()), name, args); p != nil {
		return p.run(ctx, func(ctx context.Context) codemode.CallResult { return run.Handle(ctx, callID, name, args) })
	}
	return run.Handle(ctx, callID, name, args), nil
}

// retryDirect is the retry of a direct tool call whose result asked for input (an upstream's
// question, parking.go).
func (s *Server) retryDirect(ctx context.Context, req *mcp.CallToolRequest, run *codemode.Surface) (codemode.CallResult, *mcp.CallToolResult) {
	rt, err := s.states.open(req.Params.RequestState, scopeKey(run.RunContext()))
	if err == nil && rt.Kind != kindElicitation {
		err = errors.New("unknown requestState kind " + quote(rt.Kind))
	}
	var res codemode.CallResult
	var ask *mcp.CallToolResult
	if err == nil {
		res, ask, err = s.parks.resume(ctx, req, rt)
	}
	if err == nil && ask == nil && res.Exec != nil && res.Tool == nil && res.Err == nil {
		err = errors.New("the requestState names an exec or wait")
	}
	if err != nil {
		return codemode.CallResult{Err: fmt.Errorf("cannot continue the call: %w", err)}, nil
	}
	return res, ask
}

// progressSink reports progress to the client that asked for it with a progressToken, keeping
// the values increasing as the protocol requires.
func progressSink(ctx context.Context, ss *mcp.ServerSession, token any) progress.Sink {
	if token == nil {
		return nil
	}
	var mu sync.Mutex
	last := -1.0
	return func(p, total float64, msg string) {
		// Held while sending: nested calls report from several goroutines, and the values must
		// reach the client in the order they were made (issue 21 item 1).
		mu.Lock()
		defer mu.Unlock()
		if p <= last {
			p = last + 1e-6
		}
		last = p
		_ = ss.NotifyProgress(context.WithoutCancel(ctx), &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: total, Message: msg})
	}
}

// execResult renders the CodeModeResult as MCP: the JSON in a text block (what most clients show
// the model), inside the untrusted-content marking when untrusted sources reached the cell
// (issue 22 item 6), and as structured content.
func execResult(res api.ExecResult) *mcp.CallToolResult {
	b, err := json.Marshal(res)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"status": "failed", "error": "cannot encode result: " + err.Error(), "code": api.CodeInternal})
	}
	text := string(b)
	if err == nil {
		text = codemode.CallResult{Exec: &res}.Text()
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: json.RawMessage(b),
		IsError:           res.Status == api.StatusFailed,
	}
}

// Run serves one MCP connection (stdio, or any transport) until it closes or ctx ends,
// refreshing the tool list whenever the gateway's tools change. When it returns, the session's
// calls are cancelled and its suspended runs dropped.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.watch(ctx)
	et := &endTransport{inner: t}
	ss, err := s.MCP().Connect(ctx, et, nil)
	if err != nil {
		return err
	}
	st := s.session(ss, identity{prof: s.profileFor("")})
	if st != nil {
		et.onEnd(func() { s.endSession(ss, st) }) // EOF: cancel in-flight calls now
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-ctx.Done():
		_ = ss.Close()
		<-done
		err = ctx.Err()
	case err = <-done:
	}
	if st != nil {
		s.endSession(ss, st) // now, rather than a moment later from its watcher
	}
	return err
}

// endTransport reports the end of its connection (a failed Read: EOF or a broken pipe) as soon
// as it happens, before the SDK has drained the calls still in flight.
type endTransport struct {
	inner mcp.Transport
	mu    sync.Mutex
	ended bool
	fn    func()
}

func (t *endTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &endConn{Connection: c, t: t}, nil
}

func (t *endTransport) onEnd(fn func()) {
	t.mu.Lock()
	ended := t.ended
	t.fn = fn
	t.mu.Unlock()
	if ended {
		go fn()
	}
}

func (t *endTransport) end() {
	t.mu.Lock()
	fn := t.fn
	first := !t.ended
	t.ended = true
	t.mu.Unlock()
	if first && fn != nil {
		go fn()
	}
}

type endConn struct {
	mcp.Connection
	t *endTransport
}

func (c *endConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err != nil {
		c.t.end()
	}
	return m, err
}

// Handler serves MCP over streamable HTTP with the loopback defaults of HTTPOptions.
func (s *Server) Handler(ctx context.Context) http.Handler {
	return s.HTTPHandler(ctx, HTTPOptions{Loopback: true})
}

// Close ends every session: their calls are cancelled and their suspended runs dropped.
func (s *Server) Close() {
	s.closeSessions()
	s.parks.close()
}

func (s *Server) watch(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.g.Changed():
			s.refresh()
		}
	}
}
