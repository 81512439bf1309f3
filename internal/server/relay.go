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

// sessionClient is the relay.Client of one request of one session.
type sessionClient struct {
	ss  *mcp.ServerSession
	id  string
	req context.Context // the request: its values route notifications onto its stream
}

func (c *sessionClient) ID() string { return c.id }

// ctx is the context to send with: the request's values while it is in flight, with the
// caller's deadline and cancellation.
func (c *sessionClient) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
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

func (c *sessionClient) Log(ctx context.Context, p *mcp.LoggingMessageParams) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	return c.ss.Log(ctx, p)
}

func (c *sessionClient) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	ip := c.ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return nil, errors.New("the client did not declare elicitation")
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	return c.ss.Elicit(ctx, p)
}

func (c *sessionClient) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	ip := c.ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Sampling == nil {
		return nil, errors.New("the client did not declare sampling")
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	return c.ss.CreateMessage(ctx, p)
}

// clientOf is the relay client of a request on session ss (nil without a session).
func (s *Server) clientOf(ctx context.Context, ss *mcp.ServerSession) relay.Client {
	if ss == nil {
		return nil
	}
	st := s.session(ss)
	if st == nil {
		return nil
	}
	return &sessionClient{ss: ss, id: st.key, req: ctx}
}

// callContext is ctx carrying the request's relay client.
func (s *Server) callContext(ctx context.Context, ss *mcp.ServerSession) context.Context {
	return relay.With(ctx, s.clientOf(ctx, ss))
}

// subscribeResource and unsubscribeResource are the SDK server's subscription handlers.
func (s *Server) subscribeResource(ctx context.Context, req *mcp.SubscribeRequest) error {
	return s.agg.subscribe(ctx, req)
}

func (s *Server) unsubscribeResource(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	return s.agg.unsubscribe(ctx, req)
}
