package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// In-flight requests over HTTP (issue 19 item 6, issue 18 item 8). Each POST that carries a call
// is registered for as long as the SDK serves it:
//
//   - its tool handler finds it through a header the endpoint sets (the SDK hands handlers the
//     request's headers; a header of that name sent by a client is deleted first), and learns
//     the request's principal there;
//   - when the client's connection drops before the response is written, the handler's context
//     is cancelled: nobody can receive the result (no event store replays it), so the exec or
//     wait stops;
//   - notifications/cancelled naming the call (in the same session, or from the same principal
//     for stateless requests) cancels it too and suppresses everything the POST would still
//     write, so no response follows the cancellation (the MCP spec: the receiver SHOULD NOT
//     respond; the TypeScript SDK reports a stray response as an error);
//   - a request id that would not survive the SDK's decoding byte for byte (1.5e308, 1.0,
//     "\u0041") is replaced by an id of ours before the SDK sees it and restored in the
//     response;
//   - plain-text errors the SDK writes (400, 404, 405, 406, 415…) become JSON-RPC errors, and a
//     response error without a code (code 0) gets -32603.

// postHeader carries a POST's registry key to its tool handler.
const postHeader = "X-Codemode-Post"

type post struct {
	nonce string
	id    identity
	key   string          // scope + "\x00" + canonical request id, for notifications/cancelled
	rpcID json.RawMessage // the request's id as the client wrote it
	ours  json.RawMessage // the id the SDK sees instead, when rpcID would not round-trip
	conv  string          // the conversation key of the endpoint's URL (?conversation=)

	mu        sync.Mutex
	cancels   map[int]context.CancelFunc
	next      int
	cancelled bool // the connection dropped or the client cancelled: handlers end
	suppress  bool // the client cancelled: nothing more is written
}

type posts struct {
	mu      sync.Mutex
	byNonce map[string]*post
	byCall  map[string]*post
}

func newPosts() *posts {
	return &posts{byNonce: map[string]*post{}, byCall: map[string]*post{}}
}

// open registers a POST of id whose call is rpcID in scope ("s:<session>" or "p:<principal>").
func (ps *posts) open(id identity, scope string, rpcID json.RawMessage) *post {
	var b [16]byte
	_, _ = rand.Read(b[:])
	p := &post{nonce: hex.EncodeToString(b[:]), id: id, rpcID: rpcID, cancels: map[int]context.CancelFunc{}}
	if rpcID != nil {
		p.key = scope + "\x00" + canonicalID(rpcID)
		if !idRoundTrips(rpcID) {
			p.ours = json.RawMessage(`"codemode-id-` + p.nonce + `"`)
		}
	}
	ps.mu.Lock()
	ps.byNonce[p.nonce] = p
	if p.key != "" {
		if _, dup := ps.byCall[p.key]; !dup { // a duplicate id in flight: the first keeps it
			ps.byCall[p.key] = p
		}
	}
	ps.mu.Unlock()
	return p
}

func (ps *posts) close(p *post) {
	ps.mu.Lock()
	delete(ps.byNonce, p.nonce)
	if p.key != "" && ps.byCall[p.key] == p {
		delete(ps.byCall, p.key)
	}
	ps.mu.Unlock()
}

// of finds the POST a request arrived on (nil: not HTTP, or not a registered call).
func (ps *posts) of(req mcp.Request) *post {
	if req == nil {
		return nil
	}
	ex := req.GetExtra()
	if ex == nil || ex.Header == nil {
		return nil
	}
	n := ex.Header.Get(postHeader)
	if n == "" {
		return nil
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.byNonce[n]
}

// cancelCall handles notifications/cancelled for requestID in scope: the call's handlers are
// cancelled and its POST writes nothing more. It returns the post (nil: no such call here).
func (ps *posts) cancelCall(scope string, requestID json.RawMessage) *post {
	ps.mu.Lock()
	p := ps.byCall[scope+"\x00"+canonicalID(requestID)]
	ps.mu.Unlock()
	if p != nil {
		p.cancel(true)
	}
	return p
}

// attach registers a handler's cancel func; the returned func detaches it.
func (p *post) attach(cancel context.CancelFunc) (detach func()) {
	p.mu.Lock()
	if p.cancelled {
		p.mu.Unlock()
		cancel()
		return func() {}
	}
	n := p.next
	p.next++
	p.cancels[n] = cancel
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.cancels, n)
		p.mu.Unlock()
	}
}

// cancel ends the POST's handlers; suppress also stops what it writes.
func (p *post) cancel(suppress bool) {
	p.mu.Lock()
	p.cancelled = true
	if suppress {
		p.suppress = true
	}
	fns := make([]context.CancelFunc, 0, len(p.cancels))
	for _, f := range p.cancels {
		fns = append(fns, f)
	}
	p.mu.Unlock()
	for _, f := range fns {
		f()
	}
}

func (p *post) suppressed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.suppress
}

// canonicalID is the registry form of an id: strings decoded, numbers as written.
func canonicalID(id json.RawMessage) string {
	var s string
	if json.Unmarshal(id, &s) == nil {
		return "s" + s
	}
	return "n" + string(bytes.TrimSpace(id))
}

// idRoundTrips reports whether the SDK echoes id byte for byte: a string whose encoding is
// Go's own, or an integer written plainly within int64.
func idRoundTrips(id json.RawMessage) bool {
	var v any
	d := json.NewDecoder(bytes.NewReader(id))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return false
	}
	switch x := v.(type) {
	case string:
		b, _ := json.Marshal(x)
		return bytes.Equal(b, id)
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			return false
		}
		b, _ := json.Marshal(n)
		return bytes.Equal(b, id)
	}
	return false
}

// respWriter is the ResponseWriter the SDK writes a request's answer through (see the comment
// at the top). The SDK writes one server-sent event (or one JSON body) per Write.
type respWriter struct {
	http.ResponseWriter
	p      *post           // nil for requests without a call
	rpcID  json.RawMessage // for converting a plain-text error (nil: id null)
	status int
	plain  *bytes.Buffer // a plain-text error being collected
	wrote  bool
}

func (w *respWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *respWriter) WriteHeader(status int) {
	if w.wrote {
		return
	}
	w.wrote, w.status = true, status
	if w.p != nil && w.p.suppressed() {
		return
	}
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.plain = &bytes.Buffer{}
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *respWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.p != nil && w.p.suppressed() {
		return len(b), nil
	}
	if w.plain != nil {
		if w.plain.Len() < 4096 {
			w.plain.Write(b)
		}
		return len(b), nil
	}
	var ours, theirs json.RawMessage
	if w.p != nil {
		ours, theirs = w.p.ours, w.p.rpcID
	}
	out := fixEnvelope(b, ours, theirs)
	if _, err := w.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// finish writes a collected plain-text error as a JSON-RPC error.
func (w *respWriter) finish() {
	if w.plain == nil {
		return
	}
	w.Header().Del("X-Content-Type-Options")
	msg := strings.TrimSpace(w.plain.String())
	if msg == "" {
		msg = http.StatusText(w.status)
	}
	writeRPCError(w.ResponseWriter, w.status, w.rpcID, rpcCodeFor(w.status), msg)
}

// fixEnvelope restores a replaced request id and gives a code to an error without one, in the
// JSON-RPC envelope of a response (a server-sent event's data, or a JSON body), never inside its
// result: go-sdk encodes responses as {"jsonrpc":"2.0","id":…,"result"|"error":…}.
func fixEnvelope(b []byte, ours, theirs json.RawMessage) []byte {
	const head = `{"jsonrpc":"2.0","id":`
	i := bytes.Index(b, []byte(head))
	if i < 0 || (i > 0 && !bytes.HasSuffix(b[:i], []byte("data: "))) {
		return b
	}
	at := i + len(head)
	rest := b[at:]
	var out []byte
	if ours != nil && bytes.HasPrefix(rest, ours) {
		out = append(append(append(out, b[:at]...), theirs...), rest[len(ours):]...)
		b, rest = out, out[at+len(theirs):]
	}
	// Skip the id (a string or a number) to look at what follows it.
	n := idLength(rest)
	if n > 0 && bytes.HasPrefix(rest[n:], []byte(`,"error":{"code":0,`)) {
		pos := at + n + len(`,"error":{"code":`)
		fixed := make([]byte, 0, len(b)+5)
		fixed = append(fixed, b[:pos]...)
		fixed = append(fixed, "-32603"...)
		fixed = append(fixed, b[pos+1:]...)
		return fixed
	}
	return b
}

// idLength is the length of the JSON string or number at the start of b (0: neither).
func idLength(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	if b[0] == '"' {
		for i := 1; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return 0
	}
	i := 0
	for i < len(b) && strings.IndexByte("+-0123456789.eE", b[i]) >= 0 {
		i++
	}
	return i
}

// withRPCCode gives err a JSON-RPC code: the SDK sends a plain Go error as code 0.
func withRPCCode(err error) error {
	if err == nil {
		return nil
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		if we.Code != 0 {
			return err
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: we.Message, Data: we.Data}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}
