package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/codemode-go/codemode/internal/oauth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpPath is the MCP endpoint; every other path but the operations endpoints is 404.
const mcpPath = "/mcp"

// maxDepth bounds the nesting of a request's JSON: deeper messages get a JSON-RPC error before
// any recursive decoder sees them (the SDK's answered such bodies with plain text).
const maxDepth = 512

// HTTPOptions configure Server.HTTPHandler. The zero value serves a loopback listener without
// a token, origins or hosts beyond loopback ones, and no idle expiry.
type HTTPOptions struct {
	// Token, when set, is required on every request as `Authorization: Bearer <token>` (the
	// legacy serve.http.token: its principal is "default").
	Token string
	// Principals are the serve.principals tokens; each token acts as its principal.
	Principals []PrincipalToken
	// OAuth, when set, accepts the issuer's access tokens too (serve.oauth).
	OAuth *oauth.Verifier
	// AllowedOrigins and AllowedHosts extend the loopback defaults (see guard).
	AllowedOrigins []string
	AllowedHosts   []string
	// Loopback says the listener binds loopback addresses only: Host must then be loopback.
	Loopback bool
	// SessionIdleTimeout closes sessions without a request for this long (0: never).
	SessionIdleTimeout time.Duration
	// MaxSessions bounds the sessions open at once (0: unbounded).
	MaxSessions int
	// MaxSessionsPerClient is one client's share of MaxSessions (0: none beyond MaxSessions);
	// see sessions.makeRoom.
	MaxSessionsPerClient int
	// MaxBodyBytes bounds one request body (0: 4 MiB).
	MaxBodyBytes int64
	// ReadBodyTimeout bounds how long a request's body may take to arrive (0: 30 s).
	ReadBodyTimeout time.Duration
}

// HTTPHandler serves MCP over streamable HTTP at /mcp, with /healthz, /readyz and /metrics
// beside it, all behind the guard (Host, Origin, credentials); with OAuth, the protected-resource
// metadata too (public). It refreshes the tool list whenever the gateway's tools change, until
// ctx ends.
//
// Both protocol generations share /mcp: a request that carries a session (Mcp-Session-Id), or
// none of the 2026-07-28 markers, goes to go-sdk's session handler (initialize, 2025-11-25 and
// earlier); one of the sessionless protocol (an MCP-Protocol-Version header or _meta
// protocolVersion of 2026-07-28 or later, server/discover) to its stateless handler.
func (s *Server) HTTPHandler(ctx context.Context, o HTTPOptions) http.Handler {
	go s.watch(ctx)
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = mcp.DefaultMaxRequestBodyBytes
	}
	if o.ReadBodyTimeout <= 0 {
		o.ReadBodyTimeout = 30 * time.Second
	}
	getServer := func(r *http.Request) *mcp.Server {
		if id, ok := identityFrom(r.Context()); ok && id.prof != nil {
			return id.prof.srv
		}
		return s.MCP()
	}
	session := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		SessionTimeout: o.SessionIdleTimeout,
		// The guard checks Host on every listener; the SDK's own check (loopback only) would
		// refuse allowed hosts.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        o.MaxBodyBytes,
	})
	sessionless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		DisableLocalhostProtection:   true,
		MaxRequestBodyBytes:          o.MaxBodyBytes,
		PropagateRequestCancellation: true, // the POST is the request: a dropped one cancels it
	})
	auth := newAuthenticator(s, o)
	mux := http.NewServeMux()
	mux.Handle(mcpPath, &mcpEndpoint{s: s, session: session, sessionless: sessionless, opts: o})
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found",
			"message": "no such path: MCP is served at " + mcpPath + "; also /healthz, /readyz, /metrics"})
	})
	g := newGuard(o, auth)
	if o.OAuth != nil {
		for _, p := range o.OAuth.MetadataPaths() {
			g.public[p] = http.HandlerFunc(o.OAuth.ServeMetadata)
		}
	}
	return g.wrap(mux)
}

// mcpEndpoint checks each request before the SDK sees it, so that what the SDK would answer with
// plain text or by dropping the session gets a JSON-RPC error instead: a body that is not JSON
// gets -32700, an oversized one -32600 (413), one nested deeper than maxDepth, a batch or an
// envelope that is not a JSON-RPC message -32600, an unknown method -32601, and an initialize
// beyond MaxSessions -32005 (503). It routes each request to the session or the sessionless
// handler and registers calls for cancellation (posts.go).
type mcpEndpoint struct {
	s           *Server
	session     http.Handler
	sessionless http.Handler
	opts        HTTPOptions
}

func (e *mcpEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, _ := identityFrom(r.Context())
	r.Header.Del(postHeader)
	sid := r.Header.Get("Mcp-Session-Id")
	if sid != "" {
		if owner, ok := e.s.sessionPrincipal(sid); ok && owner != id.principal {
			refuse(w, r, http.StatusForbidden, "the MCP session belongs to another principal")
			return
		}
		// In use while the request lasts (an open event stream included): never made room for.
		defer e.s.sess.use("mcp:" + sid)()
	}
	if r.Method == http.MethodDelete && sid != "" {
		e.s.endSessionByKey("mcp:" + sid) // cancel its calls before the SDK waits for them
	}
	if r.Method != http.MethodPost {
		rw := &respWriter{ResponseWriter: w}
		e.session.ServeHTTP(rw, r)
		rw.finish()
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
		refuse(w, r, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	body, ok := e.readBody(w, r)
	if !ok {
		return
	}
	check := checkMessage(body)
	headerVersion := r.Header.Get("Mcp-Protocol-Version")
	less := sid == "" && (headerVersion >= protocolStateless || check.metaVersion >= protocolStateless || check.method == "server/discover")
	switch {
	case check.parseError != "":
		writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeParseError, check.parseError)
		return
	case check.invalid != "":
		writeRPCError(w, http.StatusBadRequest, check.id, jsonrpc.CodeInvalidRequest, check.invalid)
		return
	case check.unknown && check.id != nil:
		if less {
			writeRPCError(w, http.StatusNotFound, check.id, jsonrpc.CodeMethodNotFound, "method not found: "+quote(check.method))
			return
		}
		writeRPCError(w, http.StatusOK, check.id, jsonrpc.CodeMethodNotFound, "method not found: "+quote(check.method))
		return
	case check.unknown:
		w.WriteHeader(http.StatusAccepted) // an unknown notification is ignored
		return
	case check.method == "initialize" && sid == "" && !less:
		// The session this request opens is registered with the identity its post carries.
		id.client = clientOf(id, r)
		if refusal := e.s.makeRoom(id.client, e.opts.MaxSessions, e.opts.MaxSessionsPerClient); refusal != "" {
			w.Header().Set("Retry-After", "5")
			writeRPCError(w, http.StatusServiceUnavailable, check.id, -32005, refusal)
			return
		}
	}
	scope := "p:" + id.principal
	if sid != "" {
		scope = "s:" + sid
	}
	if check.method == "notifications/cancelled" && check.cancelID != nil {
		p := e.s.posts.cancelCall(scope, check.cancelID)
		if less || p == nil || p.ours != nil {
			// Ours to handle: a sessionless POST's handler is cancelled through its registry
			// entry (the SDK's ephemeral session of this notification knows no call), and a
			// replaced id is one the SDK would not recognise.
			w.WriteHeader(http.StatusAccepted)
			return
		}
	}
	var p *post
	if check.id != nil && check.method != "" {
		p = e.s.posts.open(id, scope, check.id)
		p.conv = validConversation(r.URL.Query().Get(ConversationQuery))
		defer e.s.posts.close(p)
		r.Header.Set(postHeader, p.nonce)
		if p.ours != nil {
			body = replaceID(body, check.idAt, len(check.id), p.ours)
		}
		// A client that drops its connection gets no response: stop the call.
		stop := context.AfterFunc(r.Context(), func() { p.cancel(false) })
		defer stop()
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	rw := &respWriter{ResponseWriter: w, p: p, rpcID: check.id}
	if less {
		e.sessionless.ServeHTTP(rw, r)
	} else {
		e.session.ServeHTTP(rw, r)
	}
	rw.finish()
}

// readBody reads a POST body within MaxBodyBytes and ReadBodyTimeout. A refusal (413, 408)
// closes the connection without reading the rest of the body.
func (e *mcpEndpoint) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(e.opts.ReadBodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, e.opts.MaxBodyBytes))
	_ = rc.SetReadDeadline(time.Time{})
	if err == nil {
		return body, true
	}
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		refuse(w, r, http.StatusRequestEntityTooLarge, "the message exceeds the "+itoa(e.opts.MaxBodyBytes)+"-byte limit")
	case errors.As(err, &ne) && ne.Timeout():
		refuse(w, r, http.StatusRequestTimeout, "the request body did not arrive within "+e.opts.ReadBodyTimeout.String())
	default:
		refuse(w, r, http.StatusBadRequest, "cannot read the request body: "+err.Error())
	}
	return nil, false
}

// refuse answers with an error and closes the connection at once: nothing more is read from a
// client that was refused (a body that never comes costs nothing).
func refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	denyJSON(w, r, status, strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_")), msg)
}

// messageCheck is what the endpoint learns from a POST body before the SDK parses it.
type messageCheck struct {
	parseError  string
	invalid     string // not a JSON-RPC message we serve
	method      string
	id          json.RawMessage // nil for a notification, a response or an invalid id
	idAt        int             // offset of id in the body
	unknown     bool
	metaVersion string          // params._meta["io.modelcontextprotocol/protocolVersion"]
	cancelID    json.RawMessage // params.requestId of notifications/cancelled
}

func checkMessage(body []byte) messageCheck {
	if d := jsonDepth(body); d > maxDepth {
		return messageCheck{invalid: fmt.Sprintf("invalid request: the message nests deeper than %d levels", maxDepth)}
	}
	if !json.Valid(body) {
		return messageCheck{parseError: "parse error: the body is not valid JSON"}
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return messageCheck{invalid: "invalid request: JSON-RPC batches are not supported: send one message per request"}
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return messageCheck{invalid: "invalid request: a JSON-RPC message is an object"}
	}
	var m struct {
		JSONRPC *string          `json:"jsonrpc"`
		Method  *string          `json:"method"`
		ID      *json.RawMessage `json:"id"`
		Result  json.RawMessage  `json:"result"`
		Error   json.RawMessage  `json:"error"`
		Params  struct {
			Meta struct {
				Version any `json:"io.modelcontextprotocol/protocolVersion"`
			} `json:"_meta"`
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		var id json.RawMessage
		if m.ID != nil && validID(*m.ID) {
			id = *m.ID
		}
		return messageCheck{invalid: "invalid request: " + err.Error(), id: id}
	}
	var c messageCheck
	if m.ID != nil && validID(*m.ID) {
		c.id = *m.ID
		if !idRoundTrips(c.id) {
			c.idAt = idOffset(body) // where the SDK's id must be swapped in
		}
	}
	switch {
	case m.JSONRPC == nil || *m.JSONRPC != "2.0":
		c.invalid = `invalid request: "jsonrpc" must be "2.0"`
	case m.Method == nil && m.Result == nil && m.Error == nil:
		c.invalid = "invalid request: a message needs a method (request or notification) or a result or error (response)"
	case m.ID != nil && c.id == nil:
		c.invalid = "invalid request: an id must be a string or a number"
	case m.Method != nil && *m.Method == "":
		c.invalid = "invalid request: the method is empty"
	}
	if c.invalid != "" || m.Method == nil {
		if m.Method == nil {
			c.id = nil // a response to the server's own request: the SDK matches it
		}
		return c
	}
	c.method = *m.Method
	c.unknown = !knownMethods[c.method]
	c.metaVersion, _ = m.Params.Meta.Version.(string)
	if c.method == "notifications/cancelled" && validID(m.Params.RequestID) {
		c.cancelID = m.Params.RequestID
	}
	if c.id != nil && !idRoundTrips(c.id) && c.idAt < 0 {
		c.invalid = "invalid request: the id is ambiguous" // a duplicate "id" key
	}
	return c
}

// jsonDepth is the deepest nesting of arrays and objects in b (strings skipped), stopping early
// past maxDepth.
func jsonDepth(b []byte) int {
	depth, most, inStr := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '[', '{':
			if depth++; depth > most {
				if most = depth; most > maxDepth {
					return most
				}
			}
		case ']', '}':
			depth--
		}
	}
	return most
}

// idOffset is where the top-level "id" member's value starts in an object, or -1 when it is not
// found exactly once.
func idOffset(b []byte) int {
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return -1
	}
	at := -1
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return -1
		}
		start := d.InputOffset()
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return -1
		}
		if k == "id" {
			if at >= 0 {
				return -1
			}
			// The value starts after the colon and any space.
			rest := b[start:]
			i := bytes.IndexByte(rest, ':')
			if i < 0 {
				return -1
			}
			j := i + 1
			for j < len(rest) && (rest[j] == ' ' || rest[j] == '\t' || rest[j] == '\n' || rest[j] == '\r') {
				j++
			}
			at = int(start) + j
		}
	}
	return at
}

// replaceID puts ours in place of the n-byte id at offset at.
func replaceID(body []byte, at, n int, ours []byte) []byte {
	out := make([]byte, 0, len(body)-n+len(ours))
	out = append(out, body[:at]...)
	out = append(out, ours...)
	return append(out, body[at+n:]...)
}

// knownMethods are the client-to-server methods the SDK's server handles (its serverMethodInfos);
// TestKnownMethods keeps the list honest.
var knownMethods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true, "completion/complete": true,
	"tools/list": true, "tools/call": true, "prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"subscriptions/listen": true, "resources/subscribe": true, "resources/unsubscribe": true, // aggregate.go
	"logging/setLevel":        true,
	"notifications/cancelled": true, "notifications/initialized": true,
	"notifications/roots/list_changed": true, "notifications/progress": true,
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
