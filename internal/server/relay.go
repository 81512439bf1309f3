//lint:file-ignore SA1019 logging and sampling are deprecated by SEP-2577 but still forwarded during its deprecation window (issue 21)

package server

import (
	"context"
	"errors"

	"github.com/codemode-go/codemode/internal/relay"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The downstream side of server-to-client traffic (issue 21 item 2; upstream/clientside.go is the
// other side). Each tool call, prompts/get and resources/read carries a relay.Client for its MCP
// session: an upstream's log messages go to the session at the level the client set with
// logging/setLevel, its elicitation and sampling requests are sent to the client when it
// declared the capability (the answer goes back upstream), and fail at once when it did not.
// While the request that caused them is in flight they travel on its stream (over HTTP, the
// request's SSE response); after it — a cell's nested call still running when exec returned
// waiting — on the session's own channel (stdio, or the standalone SSE stream).

// sessionRelay is the relay.Client of one request of one session.
type sessionRelay struct {
	ss  *mcp.ServerSession
	id  string
	req context.Context // the request: its values route notifications onto its stream
}

func (c *sessionRelay) ID() string { return c.id }

// ctx is the context to send with: the request's values while it is in flight, with the
// caller's deadline and cancellation.
func (c *sessionRelay) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.req.Err() != nil {
		return ctx, func() {}
	}
	out, cancel := context.WithCancel(context.WithoutCancel(c.req))
	stop := context.AfterFunc(ctx, cancel)
	if d, ok := ctx.Deadline(); ok {
		var cancel2 context.CancelFunc
		out, cancel2 = context.WithDeadline(out, d)
		return out, func() { stop(); cancel2(); cancel() }
	}
	return out, func() { stop(); cancel() }
}

func (c *sessionRelay) Log(ctx context.Context, p *mcp.LoggingMessageParams) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	return c.ss.Log(ctx, p)
}

func (c *sessionRelay) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	ip := c.ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return nil, errors.New("the client did not declare elicitation")
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	return c.ss.Elicit(ctx, p)
}

func (c *sessionRelay) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	ip := c.ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Sampling == nil {
		return nil, errors.New("the client did not declare sampling")
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	return c.ss.CreateMessage(ctx, p)
}

// clientOf is the relay client of a request (nil without a session). A session with an id
// (HTTP) or one Run serves (stdio) gets a sessionRelay; the ephemeral session of a sessionless
// (2026-07-28) request is never registered, and its client — one per scope, as a session is one
// client — logs on the request's stream but cannot ask (server-to-client requests do not exist in
// that protocol generation; a tool call that can be asked is parked instead, parking.go).
func (s *Server) clientOf(ctx context.Context, req mcp.Request) relay.Client {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil {
		return nil
	}
	if st := s.sess.lookup(ss); st != nil {
		return &sessionRelay{ss: ss, id: st.key, req: ctx}
	}
	if ss.ID() != "" {
		return nil // a session that ended
	}
	return &sessionlessRelay{sessionRelay: sessionRelay{ss: ss, id: "sessionless:" + s.requestScope(req), req: ctx},
		level: requestLogLevel(req)}
}

// requestMeta is the _meta of a request the relay serves (tools/call, prompts/get,
// resources/read), or nil.
func requestMeta(req mcp.Request) mcp.Meta {
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		if r.Params != nil {
			return r.Params.Meta
		}
	case *mcp.GetPromptRequest:
		if r.Params != nil {
			return r.Params.Meta
		}
	case *mcp.ReadResourceRequest:
		if r.Params != nil {
			return r.Params.Meta
		}
	}
	return nil
}

// requestLogLevel is the log level a sessionless request names in its _meta (2026-07-28 has no
// logging/setLevel), or "".
func requestLogLevel(req mcp.Request) string {
	level, _ := requestMeta(req)[mcp.MetaKeyLogLevel].(string)
	return level
}

// requestScope is the scope key of a sessionless request (principal, conversation key).
func (s *Server) requestScope(req mcp.Request) string {
	post := s.posts.of(req)
	id := identity{prof: s.profileFor("")}
	conv := ""
	if post != nil {
		id, conv = post.id, post.conv
	}
	if c := conversationKey(requestMeta(req)); c != "" {
		conv = c
	}
	return scopeKey(runContext(id, nil, conv))
}

// callContext is ctx carrying the request's relay client.
func (s *Server) callContext(ctx context.Context, req mcp.Request) context.Context {
	return relay.With(ctx, s.clientOf(ctx, req))
}

// sessionlessRelay is the relay client of a sessionless request: it logs on the request's stream
// (at the level the request's _meta names) and cannot ask.
type sessionlessRelay struct {
	sessionRelay
	level string
}

// LogLevel is the level the request asked for: upstream calls made for it ask their servers for
// it (internal/upstream's leveled).
func (c *sessionlessRelay) LogLevel() string { return c.level }

var errSessionless = errors.New("a sessionless (2026-07-28) client is asked only through the multi round-trip result of a tool call that declared elicitation or sampling")

func (c *sessionlessRelay) Elicit(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return nil, errSessionless
}

func (c *sessionlessRelay) CreateMessage(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return nil, errSessionless
}
