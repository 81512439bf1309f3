// Package upstream keeps connections to upstream MCP servers (docs/semantics.md M1): stdio servers the
// gateway starts as child processes and streamable HTTP servers. It turns their tools into api.Tool
// values (source "mcp", owner = server name) and reaches their resources and prompts.
//
// Each enabled server has one supervisor goroutine that connects, lists tools, refreshes them
// on notifications/tools/list_changed, and reconnects with jittered exponential backoff
// (200 ms doubling to 30 s) when the session dies. One broken server never blocks the others:
// calls to a server that is down fail at once with "MCP server <name> is not connected: …".
//
// Everything a server says about itself is untrusted: names, descriptions, schemas, tool counts
// and result sizes are bounded (see limits.go), tool annotations are ignored (ReadOnly is always
// false) and structuredContent is validated against the tool's outputSchema.
//
// Schemas keep the server's own key order: the SDK decodes them into maps, so the raw bytes are
// captured below the SDK (see capture.go) and the SDK's value is only a fallback.
package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// State is a server's connection state.
type State string

const (
	// StateConnecting: a connection attempt is in progress.
	StateConnecting State = "connecting"
	// StateReady: the session is up and its tools are listed.
	StateReady State = "ready"
	// StateFailed: the last attempt failed or the session died; a retry is scheduled.
	StateFailed State = "failed"
	// StateStopped: the manager is closed, or the server is disabled in the configuration.
	StateStopped State = "stopped"
)

// ServerStatus describes one configured server.
type ServerStatus struct {
	Name    string
	Enabled bool
	State   State
	// Tools is the number of tools currently offered (0 unless ready).
	Tools int
	// LastError is why the last attempt failed or the last session ended ("" if none).
	LastError string
	// Restarts counts connection attempts after the first one; for a stdio server each one
	// started a new process.
	Restarts int
	// Since is when State last changed.
	Since time.Time
}

// Manager owns the connections to every configured MCP server. It is safe for concurrent use.
type Manager struct {
	log     *slog.Logger
	opts    options
	ctx     context.Context
	cancel  context.CancelFunc
	servers []*server // enabled servers, sorted by name
	byName  map[string]*server
	status  []ServerStatus // disabled servers, reported as stopped
	changed chan struct{}
	wg      sync.WaitGroup

	hookMu   sync.Mutex
	updated  func(server, uri string) // OnResourceUpdated
	logLevel string                   // SetLogLevel

	closeOnce sync.Once
}

// options are knobs for tests; the zero value means production defaults.
type options struct {
	// dial, when set and returning a non-nil transport, replaces the transport built from the
	// configuration (tests use in-memory transports).
	dial           func(ctx context.Context, name string, sc config.MCPServer) (mcp.Transport, error)
	backoffMin     time.Duration
	backoffMax     time.Duration
	terminateGrace time.Duration // how long a stdio server may take to exit after stdin closes
	listInterval   time.Duration // between tools/list refetches (minListInterval)
}

func (o *options) fill() {
	if o.listInterval <= 0 {
		o.listInterval = minListInterval
	}
	if o.backoffMin <= 0 {
		o.backoffMin = 200 * time.Millisecond
	}
	if o.backoffMax <= 0 {
		o.backoffMax = 30 * time.Second
	}
	if o.terminateGrace <= 0 {
		o.terminateGrace = time.Second
	}
}

// New starts connecting to every enabled server in cfg.MCP.Servers in the background: it does
// not wait for any of them (see WaitReady). logger receives each stdio server's stderr lines and
// every status change; nil discards them. Cancelling ctx stops reconnecting and closes the
// sessions as Close does; Close must still be called to wait for the child processes.
func New(ctx context.Context, cfg *config.Config, logger *slog.Logger) *Manager {
	return newManager(ctx, cfg, logger, options{})
}

func newManager(ctx context.Context, cfg *config.Config, logger *slog.Logger, opts options) *Manager {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts.fill()
	m := &Manager{log: logger, opts: opts, byName: map[string]*server{}, changed: make(chan struct{}, 1)}
	m.ctx, m.cancel = context.WithCancel(ctx)
	if cfg == nil {
		return m
	}
	now := time.Now()
	for _, name := range cfg.MCP.ServerNames() {
		sc := cfg.MCP.Servers[name]
		if sc.Disabled {
			m.status = append(m.status, ServerStatus{Name: name, State: StateStopped, Since: now})
			continue
		}
		if sc.TimeoutMs <= 0 {
			sc.TimeoutMs = 60000
		}
		s := newServer(m, name, sc)
		m.servers = append(m.servers, s)
		m.byName[name] = s
	}
	for _, s := range m.servers {
		m.wg.Add(1)
		go s.run()
	}
	return m
}

// Tools returns the current tools of every ready server, in server-name order and then in each
// server's own order. The slice is new; the tools are shared and must not be modified.
func (m *Manager) Tools() []*api.Tool {
	var out []*api.Tool
	for _, s := range m.servers {
		s.mu.Lock()
		out = append(out, s.tools...)
		s.mu.Unlock()
	}
	return out
}

// WaitReady blocks until every enabled server has connected or failed at least once, or ctx
// ends (then it returns ctx.Err()). Failures are not errors here: see Status.
func (m *Manager) WaitReady(ctx context.Context) error {
	for _, s := range m.servers {
		select {
		case <-s.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Status reports every configured server, sorted by name.
func (m *Manager) Status() []ServerStatus {
	out := make([]ServerStatus, 0, len(m.servers)+len(m.status))
	out = append(out, m.status...)
	for _, s := range m.servers {
		s.mu.Lock()
		st := ServerStatus{Name: s.name, Enabled: true, State: s.state, Tools: len(s.tools),
			Restarts: s.restarts, Since: s.since}
		if s.lastErr != nil {
			st.LastError = s.lastErr.Error()
		}
		s.mu.Unlock()
		out = append(out, st)
	}
	sortStatus(out)
	return out
}

func sortStatus(st []ServerStatus) {
	for i := 1; i < len(st); i++ { // insertion sort: a handful of servers
		for j := i; j > 0 && st[j].Name < st[j-1].Name; j-- {
			st[j], st[j-1] = st[j-1], st[j]
		}
	}
}

// Changed is signalled (coalesced, never blocking the sender) whenever a server's tool list may
// have changed: it connected, sent tools/list_changed, reconnected, failed or stopped.
func (m *Manager) Changed() <-chan struct{} { return m.changed }

func (m *Manager) notify() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// Close disconnects every server, ends every child process and its process group, and waits
// for all of it. It is idempotent.
func (m *Manager) Close() error {
	m.closeOnce.Do(func() {
		m.cancel()
		m.wg.Wait()
		m.notify()
	})
	return nil
}

// lookup returns the named server's live session, or an error that names the server.
func (m *Manager) lookup(name string) (*server, *session, error) {
	s := m.byName[name]
	if s == nil {
		return nil, nil, fmt.Errorf("unknown MCP server %q", name)
	}
	sess, err := s.live()
	return s, sess, err
}

// ListResources returns {"resources":[…]} with every page of the server's resources/list.
func (m *Manager) ListResources(ctx context.Context, server string) (json.RawMessage, error) {
	s, sess, err := m.lookup(server)
	if err != nil {
		return nil, err
	}
	var items []*mcp.Resource
	err = s.paginate(ctx, sess, "resources/list", func(ctx context.Context, cursor string) (string, int, error) {
		res, err := sess.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return "", 0, err
		}
		items = append(items, res.Resources...)
		return res.NextCursor, len(items), nil
	})
	if err != nil {
		return nil, err
	}
	if items == nil {
		items = []*mcp.Resource{}
	}
	return s.marshalResult("resources/list", struct {
		Resources []*mcp.Resource `json:"resources"`
	}{items})
}

// ListPrompts returns {"prompts":[…]} with every page of the server's prompts/list.
func (m *Manager) ListPrompts(ctx context.Context, server string) (json.RawMessage, error) {
	s, sess, err := m.lookup(server)
	if err != nil {
		return nil, err
	}
	var items []*mcp.Prompt
	err = s.paginate(ctx, sess, "prompts/list", func(ctx context.Context, cursor string) (string, int, error) {
		res, err := sess.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return "", 0, err
		}
		items = append(items, res.Prompts...)
		return res.NextCursor, len(items), nil
	})
	if err != nil {
		return nil, err
	}
	if items == nil {
		items = []*mcp.Prompt{}
	}
	return s.marshalResult("prompts/list", struct {
		Prompts []*mcp.Prompt `json:"prompts"`
	}{items})
}

// ReadResource returns the server's resources/read result ({contents:[…]}) as the server sent it.
func (m *Manager) ReadResource(ctx context.Context, server, uri string) (json.RawMessage, error) {
	s, sess, err := m.lookup(server)
	if err != nil {
		return nil, err
	}
	return s.request(ctx, sess, "resources/read", func(ctx context.Context) (any, error) {
		return sess.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	})
}

// GetPrompt returns the server's prompts/get result ({description?, messages:[…]}) as the server
// sent it. args is a JSON object of strings, or empty.
func (m *Manager) GetPrompt(ctx context.Context, server, name string, args json.RawMessage) (json.RawMessage, error) {
	var a map[string]string
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, errors.New("prompt arguments must be an object whose values are strings")
		}
	}
	s, sess, err := m.lookup(server)
	if err != nil {
		return nil, err
	}
	return s.request(ctx, sess, "prompts/get", func(ctx context.Context) (any, error) {
		return sess.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: a})
	})
}
