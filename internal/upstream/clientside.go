//lint:file-ignore SA1019 logging and sampling are deprecated by SEP-2577 but still forwarded during its deprecation window (issue 21)

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/codemode-go/codemode/internal/relay"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server-to-client traffic (issue 21 item 2). An upstream server may, while it serves a call,
// log (notifications/message), ask the person a question (elicitation/create) or ask for a model
// completion (sampling/createMessage). The gateway declares elicitation (form and URL modes) and
// sampling to every upstream and forwards each to the downstream client the traffic belongs to:
//
//   - a call's context carries its client (relay.From): the MCP server put it there for a direct
//     call, the runtime for a cell's nested call (the exec or wait driving the run);
//   - over streamable HTTP a notification or request the server sends on a call's own SSE stream
//     belongs to that call: the tee under the SDK (capture.go) sees the stream's request context,
//     and for multi round-trip (2026-07-28) servers the SDK asks with the call's context itself;
//   - otherwise (stdio, the standalone SSE stream) the protocol does not say which call it is for,
//     so it goes to the one client whose calls are in flight on that server, and nowhere when
//     calls of several clients are (a log line then goes to the gateway's log, a request is
//     refused): traffic is never guessed onto another client.
//
// Log messages and progress are delivered in the order they were read, before the result that
// follows them (the SDK hands notifications to handlers apart from responses). Elicitation keeps
// the server's own requestedSchema bytes (its property order is the form's field order).

// Bounds on what a server may send toward a client.
const (
	maxLogBytes      = 64 << 10  // one log message's data
	maxLoggerName    = 256       // its logger name
	maxAskBytes      = 256 << 10 // one elicitation or sampling request's params
	maxAskMessage    = 16 << 10  // an elicitation's message
	maxPendingAsks   = 64        // raw requests kept for their handler, per server
	askStashLifetime = time.Minute
)

// downstream is what a relay.Client of the gateway's MCP server (internal/server) does for an
// upstream: it forwards the upstream's log messages and asks the client its questions.
type downstream interface {
	relay.Client
	// Log forwards a notifications/message, subject to the level the client asked for.
	Log(ctx context.Context, p *mcp.LoggingMessageParams) error
	// Elicit asks the person behind the client (elicitation/create).
	Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// CreateMessage asks the client's model for a completion (sampling/createMessage,
	// deprecated by SEP-2577 but still served).
	CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
}

// errNotDownstream is a relay client that forwards nothing (not the MCP server's).
var errNotDownstream = errors.New("the call's client does not take server-to-client traffic")

// inflight is one call a server is serving, with its downstream client.
type inflight struct{ src relay.Source }

// clientSide is a server's state for server-to-client traffic.
type clientSide struct {
	mu    sync.Mutex
	calls map[*inflight]struct{}
	asks  []*stashedAsk
}

// stashedAsk is a server-to-client request as it came off the wire, kept until the SDK hands its
// decoded form to our handler: its raw params and, when the stream told us, its call's client.
type stashedAsk struct {
	method string
	canon  string // the params decoded into the SDK's type and encoded again
	raw    json.RawMessage
	src    relay.Source
	at     time.Time
}

// track registers a call in flight on the server (for traffic the wire does not attribute).
func (s *server) track(ctx context.Context) func() {
	src := relay.SourceFrom(ctx)
	if src == nil {
		return func() {}
	}
	f := &inflight{src: src}
	cs := &s.cside
	cs.mu.Lock()
	if cs.calls == nil {
		cs.calls = map[*inflight]struct{}{}
	}
	cs.calls[f] = struct{}{}
	cs.mu.Unlock()
	return func() {
		cs.mu.Lock()
		delete(cs.calls, f)
		cs.mu.Unlock()
	}
}

// errNoClient and errAmbiguous are why unattributed traffic was not forwarded.
var (
	errNoClient  = errors.New("no client of the gateway has a call in flight on this server")
	errAmbiguous = errors.New("calls of several clients of the gateway are in flight on this server, and the request does not say which one it is for")
)

// soleClient is the one client whose calls are in flight on the server.
func (s *server) soleClient() (relay.Client, error) {
	cs := &s.cside
	cs.mu.Lock()
	srcs := make([]relay.Source, 0, len(cs.calls))
	for f := range cs.calls {
		srcs = append(srcs, f.src)
	}
	cs.mu.Unlock()
	var one relay.Client
	for _, src := range srcs {
		c := src()
		if c == nil {
			continue
		}
		if one != nil && one.ID() != c.ID() {
			return nil, errAmbiguous
		}
		one = c
	}
	if one == nil {
		return nil, errNoClient
	}
	return one, nil
}

// tapNotify receives, in wire order, a notification read from the server; ctx is the request
// context of the HTTP stream it came on (context.Background() when unknown).
func (s *server) tapNotify(ctx context.Context, method string, params json.RawMessage) {
	switch method {
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(params, &p) == nil {
			s.deliverProgress(&p)
		}
	case "notifications/message":
		s.deliverLog(ctx, params)
	}
}

// tapRequest receives, in wire order, a request the server sends to the client.
func (s *server) tapRequest(ctx context.Context, method string, params json.RawMessage) {
	var canon []byte
	switch method {
	case "elicitation/create":
		var p mcp.ElicitParams
		if len(params) > maxAskBytes || json.Unmarshal(params, &p) != nil {
			return
		}
		canon, _ = json.Marshal(&p)
	case "sampling/createMessage":
		var p mcp.CreateMessageParams
		if len(params) > maxAskBytes || json.Unmarshal(params, &p) != nil {
			return
		}
		canon, _ = json.Marshal(&p)
	default:
		return
	}
	a := &stashedAsk{method: method, canon: string(canon), raw: bytes.Clone(params), src: relay.SourceFrom(ctx), at: time.Now()}
	cs := &s.cside
	cs.mu.Lock()
	defer cs.mu.Unlock()
	// Drop stale entries (a request the SDK refused before our handler saw it) and bound the rest.
	keep := cs.asks[:0]
	for _, old := range cs.asks {
		if time.Since(old.at) < askStashLifetime {
			keep = append(keep, old)
		}
	}
	cs.asks = keep
	if len(cs.asks) >= maxPendingAsks {
		cs.asks = cs.asks[1:]
	}
	cs.asks = append(cs.asks, a)
}

// takeAsk finds the wire form of a request our handler received decoded as v. When several
// identical requests are waiting and they belong to different clients, the stream's attribution
// cannot be trusted and only the raw bytes are returned.
func (s *server) takeAsk(method string, v any) (raw json.RawMessage, src relay.Source) {
	canon, err := json.Marshal(v)
	if err != nil {
		return nil, nil
	}
	cs := &s.cside
	cs.mu.Lock()
	defer cs.mu.Unlock()
	at := -1
	same := 0
	for i, a := range cs.asks {
		if a.method == method && a.canon == string(canon) {
			if at < 0 {
				at = i
			}
			same++
		}
	}
	if at < 0 {
		return nil, nil
	}
	a := cs.asks[at]
	cs.asks = append(cs.asks[:at], cs.asks[at+1:]...)
	if same > 1 {
		return a.raw, nil
	}
	return a.raw, a.src
}

// clientFor is the client a request or notification belongs to: the one its context names, the
// one its stream named, or the sole client with calls in flight (guessed: the protocol did not
// say which of its calls it is for).
func (s *server) clientFor(ctx context.Context, src relay.Source) (d downstream, guessed bool, err error) {
	c := relay.From(ctx)
	if c == nil && src != nil {
		c = src()
	}
	if c == nil {
		if c, err = s.soleClient(); err != nil {
			return nil, true, err
		}
		guessed = true
	}
	d, ok := c.(downstream)
	if !ok {
		return nil, guessed, errNotDownstream
	}
	return d, guessed, nil
}

// deliverLog forwards one notifications/message, its data byte for byte.
func (s *server) deliverLog(ctx context.Context, params json.RawMessage) {
	var p struct {
		Level  mcp.LoggingLevel `json:"level"`
		Logger string           `json:"logger"`
		Data   json.RawMessage  `json:"data"`
		Meta   mcp.Meta         `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || p.Level == "" || !knownLevel(p.Level) {
		return
	}
	if len(p.Data) > maxLogBytes {
		s.log.Warn("MCP server log message dropped: too large", "bytes", len(p.Data))
		return
	}
	if len(p.Data) == 0 {
		p.Data = json.RawMessage("null")
	}
	msg := &mcp.LoggingMessageParams{Level: p.Level, Logger: clip(p.Logger, maxLoggerName), Data: p.Data, Meta: p.Meta}
	c, _, err := s.clientFor(ctx, nil)
	if err != nil {
		s.log.Debug("MCP server log message not forwarded", "why", err.Error(), "level", string(p.Level), "data", clip(string(p.Data), 512))
		return
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.Log(lctx, msg); err != nil {
		s.log.Debug("MCP server log message not forwarded", "err", err)
	}
}

func knownLevel(l mcp.LoggingLevel) bool {
	switch l {
	case "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency":
		return true
	}
	return false
}

// elicit is the ElicitationHandler of every upstream connection.
func (s *server) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	raw, src := s.takeAsk("elicitation/create", req.Params)
	c, guessed, err := s.clientFor(ctx, src)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "codemode gateway: cannot forward elicitation/create: " + err.Error()}
	}
	p := *req.Params
	p.Message = clip(p.Message, maxAskMessage)
	if raw != nil {
		// The server's own schema bytes: the property order is the form's field order.
		var w struct {
			Schema json.RawMessage `json:"requestedSchema"`
		}
		if json.Unmarshal(raw, &w) == nil && len(w.Schema) > 0 && string(w.Schema) != "null" {
			p.RequestedSchema = w.Schema
		}
	}
	actx, cancel := s.askCtx(ctx, guessed)
	defer cancel()
	res, err := c.Elicit(actx, &p)
	if err != nil {
		return nil, s.askError("elicitation/create", err)
	}
	return res, nil
}

// sample is the CreateMessageHandler of every upstream connection (sampling is deprecated by
// SEP-2577 and still served for clients that declare it).
func (s *server) sample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	_, src := s.takeAsk("sampling/createMessage", req.Params)
	c, guessed, err := s.clientFor(ctx, src)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "codemode gateway: cannot forward sampling/createMessage: " + err.Error()}
	}
	actx, cancel := s.askCtx(ctx, guessed)
	defer cancel()
	res, err := c.CreateMessage(actx, req.Params)
	if err != nil {
		return nil, s.askError("sampling/createMessage", err)
	}
	return res, nil
}

// askCtx bounds a question by the server's call timeout (the call that asked cannot outlive it),
// and marks one whose call the protocol did not name (relay.Unattributed).
func (s *server) askCtx(ctx context.Context, guessed bool) (context.Context, context.CancelFunc) {
	if guessed {
		ctx = relay.Unattributed(ctx)
	}
	return context.WithTimeout(ctx, s.cfg.Timeout())
}

// askError is what the server hears when the client could not answer.
func (s *server) askError(method string, err error) error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je // the client's own protocol error, as it sent it
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("codemode gateway: %s: %v", method, err)}
}

// addClientFeatures declares and handles what the gateway forwards to its clients.
func (s *server) addClientFeatures(opts *mcp.ClientOptions) {
	if opts.Capabilities == nil {
		opts.Capabilities = &mcp.ClientCapabilities{}
	}
	opts.Capabilities.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}
	opts.Capabilities.Sampling = &mcp.SamplingCapabilities{}
	opts.ElicitationHandler = s.elicit
	opts.CreateMessageHandler = s.sample
	opts.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) { s.featuresChanged() }
	opts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { s.featuresChanged() }
	opts.ResourceUpdatedHandler = func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		if r.Params != nil {
			s.m.resourceUpdated(s.name, r.Params.URI)
		}
	}
}
