package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientInfo is what we tell servers in initialize.
var clientInfo = &mcp.Implementation{Name: "codemode", Version: "0.1.0"}

// server is one enabled upstream server and its supervisor.
type server struct {
	m    *Manager
	name string
	cfg  config.MCPServer
	log  *slog.Logger
	http *http.Transport // HTTP servers: one pool per server, across reconnects
	red  *redactor       // removes the URL's credentials from errors

	ready     chan struct{} // closed after the first attempt ends (or on stop)
	readyOnce sync.Once
	kick      chan kick     // a call found a session broken
	refresh   chan struct{} // tools/list_changed arrived

	// rawSchemas keeps the last raw schemas seen per tool, for list pages the SDK serves from
	// its cache (no bytes on the wire). Only the supervisor goroutine touches it.
	rawSchemas map[string]rawTool

	// progress routes the server's notifications/progress to the call that asked for them.
	progMu   sync.Mutex
	progress map[string]func(*mcp.ProgressNotificationParams)
	progSeq  int64

	cside clientSide   // server-to-client traffic (clientside.go)
	feat  featureState // prompts and resources (features.go)

	mu       sync.Mutex
	state    State
	since    time.Time
	sess     *session
	tools    []*api.Tool
	lastErr  error
	restarts int
}

// kick reports that a call found sess unusable, and why.
type kick struct {
	sess *session
	err  error
}

// session is one live connection.
type session struct {
	cs     *mcp.ClientSession
	tr     *tapTransport
	proc   *process // stdio only
	ctx    context.Context
	cancel context.CancelFunc // cancels in-flight calls when the session is retired
	done   chan struct{}      // closed when the connection has ended
	endErr error              // why (valid after done)
	// features are the session's prompts and resources (features.go).
	features atomic.Pointer[features]
}

func newServer(m *Manager, name string, sc config.MCPServer) *server {
	s := &server{m: m, name: name, cfg: sc, log: m.log.With("mcpServer", name),
		ready: make(chan struct{}), kick: make(chan kick, 1), refresh: make(chan struct{}, 1),
		state: StateConnecting, since: time.Now(), red: newRedactor(sc.URL)}
	s.feat.changed = make(chan struct{}, 1)
	if !sc.Stdio() {
		s.http = http.DefaultTransport.(*http.Transport).Clone()
	}
	return s
}

func (s *server) markReady() { s.readyOnce.Do(func() { close(s.ready) }) }

func (s *server) setState(st State, err error, tools []*api.Tool, sess *session) {
	err = s.red.scrub(err)
	s.mu.Lock()
	if tools == nil && (st == StateConnecting || st == StateFailed) {
		// While the server reconnects its tools stay in the catalog, so MCP.<server>.<tool>
		// stays defined and fails with a catchable error that names the server and its state.
		tools = s.tools
	}
	changed := !sameTools(s.tools, tools)
	if s.state != st {
		s.since = time.Now()
	}
	s.state, s.tools, s.sess = st, tools, sess
	if err != nil {
		s.lastErr = err
	}
	s.mu.Unlock()
	if changed {
		s.m.notify()
	}
}

func sameTools(a, b []*api.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// live returns the current session or a clear error.
func (s *server) live() (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != nil {
		return s.sess, nil
	}
	switch {
	case s.state == StateStopped:
		return nil, fmt.Errorf("MCP server %s is not connected: stopped", s.name)
	case s.lastErr != nil:
		return nil, fmt.Errorf("MCP server %s is not connected (%s; reconnecting): %v", s.name, s.state, s.lastErr)
	default:
		return nil, fmt.Errorf("MCP server %s is not connected: still connecting", s.name)
	}
}

// run is the supervisor: connect, serve, reconnect with backoff, until the manager stops.
func (s *server) run() {
	defer s.m.wg.Done()
	ctx := s.m.ctx
	backoff := s.m.opts.backoffMin
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			break
		}
		s.mu.Lock()
		if attempt > 0 {
			s.restarts++
		}
		s.mu.Unlock()
		s.setState(StateConnecting, nil, nil, nil)
		sess, tools, err := s.connect(ctx)
		err = s.red.scrub(err)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			s.setState(StateFailed, err, nil, nil)
			s.markReady()
			s.log.Warn("MCP server failed to connect", "err", err, "retryIn", backoff.String())
		} else {
			s.setState(StateReady, nil, tools, sess)
			s.markReady()
			s.log.Info("MCP server ready", "tools", len(tools))
			began := time.Now()
			reason := s.red.scrub(s.serve(ctx, sess))
			s.retire(sess)
			if ctx.Err() != nil {
				break
			}
			if time.Since(began) >= 10*time.Second {
				backoff = s.m.opts.backoffMin
			}
			s.setState(StateFailed, reason, nil, nil)
			s.log.Warn("MCP server disconnected", "err", reason, "retryIn", backoff.String())
		}
		// Equal jitter: half fixed, half random, so a fleet of gateways does not retry in step.
		d := backoff/2 + rand.N(backoff/2+1)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		backoff = min(2*backoff, s.m.opts.backoffMax)
	}
	s.setState(StateStopped, nil, nil, nil)
	s.markReady()
	if s.http != nil {
		s.http.CloseIdleConnections()
	}
	s.log.Info("MCP server stopped")
}

// minListInterval spaces a server's tools/list refetches. A server may send
// notifications/tools/list_changed as fast as it can write: one storm caused 14,370 refetches
// and 1.3 cores of load in 29 s. Notifications that arrive within the interval are coalesced
// into one refetch at its end, so a storm costs at most one list per interval.
const minListInterval = time.Second

// serve waits until the session ends, refreshing tools when the server says they changed.
// It returns why the session ended (nil when the manager stopped).
func (s *server) serve(ctx context.Context, sess *session) error {
	var last time.Time
	var later *time.Timer // a refetch deferred to the end of the interval
	var laterC <-chan time.Time
	defer func() {
		if later != nil {
			later.Stop()
		}
	}()
	for {
		refetch := false
		select {
		case <-ctx.Done():
			return nil
		case <-sess.done:
			if sess.endErr != nil {
				return fmt.Errorf("connection closed: %w", sess.endErr)
			}
			return errors.New("connection closed by the server")
		case k := <-s.kick:
			if k.sess == sess {
				return fmt.Errorf("connection lost: %w", k.err)
			}
		case <-s.refresh:
			switch wait := s.m.opts.listInterval - time.Since(last); {
			case laterC != nil: // already due at the end of the interval
			case wait > 0:
				later = time.NewTimer(wait)
				laterC = later.C
			default:
				refetch = true
			}
		case <-laterC:
			later, laterC, refetch = nil, nil, true
		}
		if !refetch {
			continue
		}
		last = time.Now()
		rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout())
		tools, err := s.listTools(rctx, sess)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if isConnError(err) {
				return fmt.Errorf("refreshing tools: %w", err)
			}
			s.log.Warn("MCP server tools/list failed; keeping the previous tools", "err", s.red.scrub(err))
			continue
		}
		s.mu.Lock()
		same := sameDefinitions(s.tools, tools)
		s.mu.Unlock()
		if same {
			continue // nothing changed: the catalogs built on these tools stay valid
		}
		s.setState(StateReady, nil, tools, sess)
		s.log.Info("MCP server tools changed", "tools", len(tools))
	}
}

// sameDefinitions reports whether two listings define the same tools, in the same order.
func sameDefinitions(a, b []*api.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Name != y.Name || x.Label != y.Label || x.Description != y.Description ||
			!bytes.Equal(x.InputSchema, y.InputSchema) || !bytes.Equal(x.OutputSchema, y.OutputSchema) ||
			!bytes.Equal(x.Annotations, y.Annotations) || !bytes.Equal(x.Wire, y.Wire) {
			return false
		}
	}
	return true
}

// connect makes one connection attempt and lists the tools, within the server's timeout.
func (s *server) connect(parent context.Context) (*session, []*api.Tool, error) {
	ctx, cancel := context.WithTimeout(parent, s.cfg.Timeout())
	defer cancel()
	tr, proc, err := s.transport(ctx)
	if err != nil {
		return nil, nil, err
	}
	tr.notify, tr.request = s.tapNotify, s.tapRequest
	opts := &mcp.ClientOptions{
		// We serve no roots; elicitation and sampling are forwarded (clientside.go).
		Capabilities: &mcp.ClientCapabilities{},
		// Every connection delivers progress in order itself: tapConn for stdio, the SSE tee
		// for streamable HTTP (capture.go).
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case s.refresh <- struct{}{}:
			default:
			}
		},
	}
	s.addClientFeatures(opts)
	client := mcp.NewClient(clientInfo, opts)
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		// The SDK does not close the connection on every failure path: do it ourselves.
		tr.closeConn()
		proc.stop()
		if ctx.Err() != nil && parent.Err() == nil {
			err = fmt.Errorf("no answer to initialize within %v", s.cfg.Timeout())
		}
		return nil, nil, err
	}
	sess := &session{cs: cs, tr: tr, proc: proc, done: make(chan struct{})}
	sess.ctx, sess.cancel = context.WithCancel(parent)
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		sess.endErr = cs.Wait()
		close(sess.done)
	}()
	tools, err := s.listTools(ctx, sess)
	if err != nil {
		s.retire(sess)
		if ctx.Err() != nil && parent.Err() == nil {
			err = fmt.Errorf("no answer to tools/list within %v", s.cfg.Timeout())
		}
		return nil, nil, fmt.Errorf("tools/list: %w", err)
	}
	s.startFeatures(ctx, sess)
	return sess, tools, nil
}

// retire ends a session: in-flight calls are cancelled, the connection closed, the process
// group killed and the connection's goroutines awaited.
func (s *server) retire(sess *session) {
	sess.cancel()
	s.mu.Lock()
	if s.sess == sess {
		s.sess = nil
	}
	s.mu.Unlock()
	_ = sess.cs.Close()
	sess.tr.closeConn()
	sess.proc.stop()
	<-sess.done
	if s.http != nil {
		s.http.CloseIdleConnections()
	}
}

// transport builds the transport of one attempt.
func (s *server) transport(ctx context.Context) (*tapTransport, *process, error) {
	if d := s.m.opts.dial; d != nil {
		t, err := d(ctx, s.name, s.cfg)
		if err != nil {
			return nil, nil, err
		}
		if t != nil {
			return &tapTransport{inner: t, wrap: true}, nil, nil
		}
	}
	if s.cfg.Stdio() {
		proc, ct, err := s.startCommand()
		if err != nil {
			return nil, nil, err
		}
		return &tapTransport{inner: ct, wrap: true, started: proc.started}, proc, nil
	}
	u, err := url.Parse(s.cfg.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("bad URL: %w", err)
	}
	headers := http.Header{}
	for k, v := range s.cfg.Headers {
		headers.Set(k, v)
	}
	ht := &mcp.StreamableClientTransport{
		Endpoint: s.cfg.URL,
		HTTPClient: &http.Client{Transport: &httpTap{base: s.http, origin: u, headers: headers,
			lim: newNotificationLimiter(), notify: s.tapNotify, request: s.tapRequest}},
		MaxEventSize: maxLineKeep,
	}
	return &tapTransport{inner: ht}, nil, nil
}

// isConnError reports whether err means the session can no longer be used.
func isConnError(err error) bool {
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) || errors.Is(err, io.EOF) {
		return true
	}
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne)
}

// callCtx bounds a request by the server's timeout and the session's life, and attaches a
// capture for its raw result.
func (s *server) callCtx(ctx context.Context, sess *session) (context.Context, *capture, func()) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout())
	stop := context.AfterFunc(sess.ctx, cancel)
	cp := &capture{}
	return withCapture(ctx, cp), cp, func() {
		stop()
		cancel()
		sess.tr.release(cp)
	}
}

// callError turns a failed request into an error that names the server and says what to do,
// without the URL's credentials.
func (s *server) callError(parent, ctx context.Context, sess *session, what string, err error) error {
	return s.red.scrub(s.callError1(parent, ctx, sess, what, err))
}

func (s *server) callError1(parent, ctx context.Context, sess *session, what string, err error) error {
	switch {
	case parent.Err() != nil:
		return fmt.Errorf("MCP server %s: %s: %w", s.name, what, parent.Err())
	case s.m.ctx.Err() != nil:
		return fmt.Errorf("MCP server %s: %s: the MCP manager is shutting down", s.name, what)
	case sess.ctx.Err() != nil:
		return fmt.Errorf("MCP server %s: %s: the connection was lost during the call; reconnecting", s.name, what)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("MCP server %s: %s: timed out after %v", s.name, what, s.cfg.Timeout())
	case isConnError(err):
		select {
		case s.kick <- kick{sess, err}:
		default:
		}
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("MCP server %s: %s: the server closed the connection during the call (it may have crashed); reconnecting", s.name, what)
		}
		return fmt.Errorf("MCP server %s: %s: connection lost (%v); reconnecting", s.name, what, err)
	}
	return fmt.Errorf("MCP server %s: %s: %w", s.name, what, err)
}

// request runs one non-list request and returns its raw result (or the SDK's value re-encoded).
func (s *server) request(parent context.Context, sess *session, method string, do func(context.Context) (any, error)) (json.RawMessage, error) {
	ctx, cp, done := s.callCtx(parent, sess)
	defer done()
	defer s.track(parent)()
	res, err := do(ctx)
	if err != nil {
		return nil, s.callError(parent, ctx, sess, method, err)
	}
	raw, tooBig := cp.get()
	if tooBig {
		return nil, fmt.Errorf("MCP server %s: %s: %w", s.name, method, errTooBig)
	}
	if raw == nil {
		if raw, err = s.marshalResult(method, res); err != nil {
			return nil, err
		}
	}
	return withoutHopMembers(raw), nil
}

func (s *server) marshalResult(method string, v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %s: %w", s.name, method, err)
	}
	if len(b) > maxResultBytes {
		return nil, fmt.Errorf("MCP server %s: %s: %w", s.name, method, errTooBig)
	}
	return b, nil
}

// paginate calls page with successive cursors until there is none, a cursor repeats, the
// number of pages reaches maxListPages or the items reach maxToolsPerServer… for lists other
// than tools the same bounds apply.
func (s *server) paginate(parent context.Context, sess *session, method string, page func(ctx context.Context, cursor string) (next string, items int, err error)) error {
	ctx, _, done := s.callCtx(parent, sess)
	defer done()
	seen := map[string]bool{}
	cursor := ""
	for range maxListPages {
		next, n, err := page(ctx, cursor)
		if err != nil {
			return s.callError(parent, ctx, sess, method, err)
		}
		if next == "" || seen[next] || n >= maxToolsPerServer {
			return nil
		}
		seen[next] = true
		cursor = next
	}
	return nil
}
