package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"
)

// Raw result capture.
//
// The SDK decodes every result into Go values: schemas become map[string]any (object key order
// lost) and structuredContent becomes `any`. We want the server's own bytes, so each request we
// care about carries a *capture in its context, and the layer under the SDK copies the raw JSON
// of the matching response into it before the SDK sees the response:
//
//   - stdio and in-memory transports: tapConn wraps the mcp.Connection and sees every
//     jsonrpc.Response (its Result is the raw JSON). The request's context reaches
//     Connection.Write, so the request id is tied to the capture there.
//   - streamable HTTP: the SDK type-asserts its own connection to an unexported interface to
//     start the standalone SSE stream and send the protocol-version header, so its connection
//     must not be wrapped. Instead httpTap, the http.RoundTripper under the SDK, sees the POST
//     (whose context is the request's) and tees the response body: the first JSON-RPC response
//     in it, JSON or SSE, is the answer to that POST.
//
// A response we did not capture (for example a list result the SDK served from its own cache)
// simply leaves the capture empty, and callers fall back to json.Marshal of the SDK's value.

type captureKey struct{}

// capture receives the raw result of one logical request.
type capture struct {
	mu      sync.Mutex
	raw     json.RawMessage
	ids     []jsonrpc.ID // ids registered in a tapConn, for release
	tooBig  bool
	settled bool
}

func withCapture(ctx context.Context, c *capture) context.Context {
	return context.WithValue(ctx, captureKey{}, c)
}

func captureFrom(ctx context.Context) *capture {
	c, _ := ctx.Value(captureKey{}).(*capture)
	return c
}

// set records a raw result. The last one wins: a multi-round-trip call re-sends the request
// and only its final answer matters.
func (c *capture) set(raw json.RawMessage) {
	c.mu.Lock()
	c.raw, c.settled = raw, true
	c.mu.Unlock()
}

func (c *capture) markTooBig() {
	c.mu.Lock()
	c.tooBig = true
	c.mu.Unlock()
}

func (c *capture) get() (raw json.RawMessage, tooBig bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.raw, c.tooBig
}

// tapTransport wraps the transport of one connection attempt. It remembers the connection so a
// failed or abandoned attempt can be torn down even when the SDK did not close it, and runs
// started once the transport is up (a stdio child process has been started).
type tapTransport struct {
	inner   mcp.Transport
	wrap    bool   // wrap the connection in a tapConn (everything but streamable HTTP)
	started func() // may be nil
	// notify receives notifications (progress, log messages) in the order they were read,
	// before the response that follows them (the SDK hands notifications to handlers apart
	// from responses, so a call's last progress could otherwise come after its result);
	// request receives the server's requests to the client likewise (clientside.go).
	notify  func(ctx context.Context, method string, params json.RawMessage)
	request func(ctx context.Context, method string, params json.RawMessage)

	mu   sync.Mutex
	conn mcp.Connection // the SDK's connection (not the tapConn)
	tap  *tapConn
}

func (t *tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if t.started != nil {
		t.started()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.conn = conn
	if !t.wrap {
		return conn, nil
	}
	t.tap = &tapConn{Connection: conn, pending: map[jsonrpc.ID]*capture{}, notify: t.notify, request: t.request,
		lim: newNotificationLimiter()}
	t.tap.alive, t.tap.stop = context.WithCancel(context.Background())
	return t.tap, nil
}

// closeConn closes the underlying connection if one was made (idempotent in the SDK).
func (t *tapTransport) closeConn() {
	t.mu.Lock()
	conn := t.conn
	t.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}

// release forgets the request ids registered for c.
func (t *tapTransport) release(c *capture) {
	t.mu.Lock()
	tap := t.tap
	t.mu.Unlock()
	if tap != nil {
		tap.release(c)
	}
}

// tapConn observes the JSON-RPC messages of a stdio or in-memory connection.
type tapConn struct {
	mcp.Connection
	mu      sync.Mutex
	pending map[jsonrpc.ID]*capture
	notify  func(ctx context.Context, method string, params json.RawMessage)
	request func(ctx context.Context, method string, params json.RawMessage)
	lim     *rate.Limiter // notifications read per second
	alive   context.Context
	stop    context.CancelFunc // on Close: a throttled read stops waiting
}

func (c *tapConn) Close() error {
	c.stop()
	return c.Connection.Close()
}

func (c *tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, ok := msg.(*jsonrpc.Request)
	var cp *capture
	if ok && req.IsCall() {
		if cp = captureFrom(ctx); cp != nil {
			c.mu.Lock()
			c.pending[req.ID] = cp
			c.mu.Unlock()
			cp.mu.Lock()
			cp.ids = append(cp.ids, req.ID)
			cp.mu.Unlock()
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
		if !req.IsCall() {
			_ = c.lim.Wait(c.alive) // over the rate: read nothing more from this server for a while
		}
		switch {
		case !req.IsCall() && c.notify != nil:
			c.notify(context.Background(), req.Method, req.Params)
		case req.IsCall() && c.request != nil:
			c.request(context.Background(), req.Method, req.Params)
		}
	}
	resp, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok {
		return msg, err
	}
	c.mu.Lock()
	cp := c.pending[resp.ID]
	delete(c.pending, resp.ID)
	c.mu.Unlock()
	if len(resp.Result) > maxResultBytes {
		// Answer the call with an error instead of letting the SDK decode a huge value; the
		// connection itself stays usable.
		if cp != nil {
			cp.markTooBig()
		}
		return &jsonrpc.Response{ID: resp.ID, Error: &jsonrpc.Error{
			Code:    jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("result of %d bytes exceeds the %d-byte limit", len(resp.Result), maxResultBytes),
		}}, nil
	}
	if cp != nil && resp.Error == nil {
		cp.set(resp.Result)
	}
	return msg, nil
}

func (c *tapConn) release(cp *capture) {
	cp.mu.Lock()
	ids := cp.ids
	cp.ids = nil
	cp.mu.Unlock()
	c.mu.Lock()
	for _, id := range ids {
		delete(c.pending, id)
	}
	c.mu.Unlock()
}

// httpTap is the http.RoundTripper under the SDK's streamable HTTP client: it adds the
// configured headers (only for the configured origin, so a redirect elsewhere does not leak
// credentials), bounds JSON response bodies and captures raw results.
type httpTap struct {
	base    http.RoundTripper
	origin  *url.URL
	headers http.Header
	lim     *rate.Limiter // events read per second from the server's event streams
	// notify and request see what the server sends on every SSE stream, as tapConn's do.
	notify  func(ctx context.Context, method string, params json.RawMessage)
	request func(ctx context.Context, method string, params json.RawMessage)
}

func (t *httpTap) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && req.URL.Scheme == t.origin.Scheme && req.URL.Host == t.origin.Host {
		req = req.Clone(req.Context())
		for k, vs := range t.headers {
			if _, set := req.Header[k]; !set { // protocol headers set by the SDK win
				req.Header[k] = vs
			}
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		resp.Body = &bodyTap{rc: resp.Body, cp: captureFrom(req.Context())}
	case "text/event-stream":
		// Every stream is parsed: a call's (its capture, its request context) and the
		// standalone one (notifications and requests only).
		resp.Body = &bodyTap{rc: resp.Body, cp: captureFrom(req.Context()), sse: true, lim: t.lim,
			ctx: req.Context(), notify: t.notify, request: t.request}
	}
	return resp, nil
}

var errBodyTooLarge = fmt.Errorf("MCP response body exceeds %d bytes", maxBodyBytes)

// bodyTap tees an HTTP response body. For application/json it keeps the body (up to
// maxBodyBytes, beyond which reads fail) and captures its result at EOF; for an event stream it
// parses events as they pass and captures the first JSON-RPC response.
type bodyTap struct {
	rc   io.ReadCloser
	cp   *capture // nil: only bound the size (JSON), or only count events (SSE)
	sse  bool
	lim  *rate.Limiter // SSE: events per second (nil: not limited)
	n    int
	buf  []byte // JSON: the body; SSE: the current partial line
	data []byte // SSE: the current event's data
	name string // SSE: the current event's name
	big  bool   // SSE: the current event is too big to keep
	done bool   // the response is captured
	// SSE: the stream's request context (for lim and the hooks) and the hooks for what else
	// the server sends on it.
	ctx     context.Context
	notify  func(ctx context.Context, method string, params json.RawMessage)
	request func(ctx context.Context, method string, params json.RawMessage)
}

func (b *bodyTap) Read(p []byte) (int, error) {
	if !b.sse && b.n >= maxBodyBytes {
		return 0, errBodyTooLarge
	}
	n, err := b.rc.Read(p)
	b.n += n
	if n > 0 {
		switch {
		case b.sse && (b.lim != nil || b.notify != nil || b.request != nil || b.cp != nil && !b.done):
			b.feedSSE(p[:n])
		case !b.sse && b.cp != nil && !b.done:
			b.buf = append(b.buf, p[:n]...)
		}
	}
	if err == io.EOF && !b.sse && b.cp != nil && !b.done {
		b.deliver(b.buf)
		b.done = true
		b.buf = nil
	}
	return n, err
}

func (b *bodyTap) Close() error { return b.rc.Close() }

func (b *bodyTap) feedSSE(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(b.buf)+len(p) > maxLineKeep {
				b.big = true
				b.buf = b.buf[:0]
			} else {
				b.buf = append(b.buf, p...)
			}
			return
		}
		line := p[:i]
		if len(b.buf) > 0 {
			line = append(b.buf, line...)
		}
		p = p[i+1:]
		b.line(bytes.TrimSuffix(line, []byte("\r")))
		b.buf = b.buf[:0]
	}
}

// maxLineKeep bounds what one SSE event may hold in the tee.
const maxLineKeep = maxResultBytes + 64<<10

func (b *bodyTap) line(line []byte) {
	switch {
	case len(line) == 0: // dispatch
		if b.lim != nil && (len(b.data) > 0 || b.big) {
			_ = b.lim.Wait(b.ctx) // over the rate: the SDK reads the next event later
		}
		switch {
		case b.big:
			// Possibly the response; the SDK's own event limit decides its fate, we only make
			// sure an oversized result is never returned as if it were complete.
			if b.cp != nil && !b.done {
				b.cp.markTooBig()
			}
		case len(b.data) > 0 && (b.name == "" || b.name == "message"):
			b.deliver(b.data)
		}
		b.data, b.name, b.big = b.data[:0], "", false
	case bytes.HasPrefix(line, []byte("data:")):
		v := bytes.TrimPrefix(line[5:], []byte(" "))
		if b.big || len(b.data)+len(v)+1 > maxLineKeep {
			b.big, b.data = true, b.data[:0]
			return
		}
		if len(b.data) > 0 {
			b.data = append(b.data, '\n')
		}
		b.data = append(b.data, v...)
	case bytes.HasPrefix(line, []byte("event:")):
		b.name = string(bytes.TrimSpace(line[6:]))
	}
}

// deliver captures msg's result if msg is a JSON-RPC response, and hands a notification or a
// request to its hook.
func (b *bodyTap) deliver(msg []byte) {
	var m struct {
		Method *string          `json:"method"`
		ID     json.RawMessage  `json:"id"`
		Params json.RawMessage  `json:"params"`
		Result json.RawMessage  `json:"result"`
		Error  *json.RawMessage `json:"error"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return // a batch or garbage
	}
	if m.Method != nil {
		ctx := b.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		switch {
		case len(m.ID) == 0 && b.notify != nil:
			b.notify(ctx, *m.Method, m.Params)
		case len(m.ID) > 0 && b.request != nil:
			b.request(ctx, *m.Method, m.Params)
		}
		return
	}
	if b.cp == nil || b.done {
		return
	}
	b.done = true
	if m.Error != nil || m.Result == nil {
		return
	}
	if len(m.Result) > maxResultBytes {
		b.cp.markTooBig()
		return
	}
	b.cp.set(m.Result)
}

// errTooBig reports an oversized result.
var errTooBig = errors.New("result exceeds the 8 MiB limit")
