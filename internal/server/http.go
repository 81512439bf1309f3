package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpPath is the MCP endpoint; every other path but the operations endpoints is 404.
const mcpPath = "/mcp"

// HTTPOptions configure Server.HTTPHandler. The zero value serves a loopback listener without
// a token, origins or hosts beyond loopback ones, and no idle expiry.
type HTTPOptions struct {
	// Token, when set, is required on every request as `Authorization: Bearer <token>`.
	Token string
	// AllowedOrigins and AllowedHosts extend the loopback defaults (see guard).
	AllowedOrigins []string
	AllowedHosts   []string
	// Loopback says the listener binds loopback addresses only: Host must then be loopback.
	Loopback bool
	// SessionIdleTimeout closes sessions without a request for this long (0: never).
	SessionIdleTimeout time.Duration
	// MaxSessions bounds the sessions open at once (0: unbounded).
	MaxSessions int
	// MaxBodyBytes bounds one request body (0: 4 MiB).
	MaxBodyBytes int64
}

// HTTPHandler serves MCP over streamable HTTP at /mcp, with /healthz, /readyz and /metrics
// beside it, all behind the guard (Host, Origin, token). It refreshes the tool list whenever
// the gateway's tools change, until ctx ends.
func (s *Server) HTTPHandler(ctx context.Context, o HTTPOptions) http.Handler {
	go s.watch(ctx)
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = mcp.DefaultMaxRequestBodyBytes
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, &mcp.StreamableHTTPOptions{
		SessionTimeout: o.SessionIdleTimeout,
		// The guard checks Host on every listener; the SDK's own check (loopback only) would
		// refuse allowed hosts.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        o.MaxBodyBytes,
	})
	mux := http.NewServeMux()
	mux.Handle(mcpPath, &mcpEndpoint{s: s, sdk: sdk, opts: o})
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found",
			"message": "no such path: MCP is served at " + mcpPath + "; also /healthz, /readyz, /metrics"})
	})
	return newGuard(o).wrap(mux)
}

// mcpEndpoint checks each POST before the SDK sees it, so that what the SDK would answer with
// plain text or by dropping the session gets a JSON-RPC error instead (issue: an unknown method
// got HTTP 400 text): a body that is not JSON gets -32700, an oversized one -32600 (413), an
// unknown method -32601, and an initialize beyond MaxSessions -32005 (503).
type mcpEndpoint struct {
	s    *Server
	sdk  http.Handler
	opts HTTPOptions
}

func (e *mcpEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete {
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			e.s.endSessionByKey("mcp:" + id) // cancel its calls before the SDK waits for them
		}
	}
	if r.Method != http.MethodPost {
		e.sdk.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, e.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeRPCError(w, http.StatusRequestEntityTooLarge, nil, -32600, "the message exceeds the "+itoa(e.opts.MaxBodyBytes)+"-byte limit")
			return
		}
		writeRPCError(w, http.StatusBadRequest, nil, -32700, "cannot read the request body: "+err.Error())
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	check := checkMessage(body)
	switch {
	case check.parseError != "":
		writeRPCError(w, http.StatusBadRequest, nil, -32700, check.parseError)
		return
	case check.unknown && check.id != nil:
		if r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" {
			break // the SDK answers -32601 with 404 itself in the sessionless protocol
		}
		writeRPCError(w, http.StatusOK, check.id, -32601, "method not found: "+quote(check.method))
		return
	case check.unknown:
		w.WriteHeader(http.StatusAccepted) // an unknown notification is ignored
		return
	case check.method == "initialize" && r.Header.Get("Mcp-Session-Id") == "" &&
		e.opts.MaxSessions > 0 && e.s.sess.countHTTP() >= e.opts.MaxSessions:
		w.Header().Set("Retry-After", "5")
		writeRPCError(w, http.StatusServiceUnavailable, check.id, -32005,
			"too many MCP sessions are open (serve.http.maxSessions = "+itoa(int64(e.opts.MaxSessions))+"); retry later")
		return
	}
	e.sdk.ServeHTTP(w, r)
}

// messageCheck is what the endpoint learns from a POST body before the SDK parses it.
type messageCheck struct {
	parseError string
	method     string
	id         json.RawMessage // nil for a notification, a response or a batch
	unknown    bool
}

func checkMessage(body []byte) messageCheck {
	if !json.Valid(body) {
		return messageCheck{parseError: "parse error: the body is not valid JSON"}
	}
	var m struct {
		Method *string          `json:"method"`
		ID     *json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method == nil {
		return messageCheck{} // a batch or a response: the SDK decides
	}
	c := messageCheck{method: *m.Method, unknown: !knownMethods[*m.Method]}
	if m.ID != nil && string(*m.ID) != "null" {
		c.id = *m.ID
	}
	return c
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
