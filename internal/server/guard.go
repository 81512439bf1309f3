package server

import (
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/codemode-go/codemode/internal/httpauth"
)

// guard is the listener's front door, applied to every path before anything else runs:
//
//  1. Host must be an IP literal, localhost, or an allowed host; on a loopback listener it must
//     be a loopback one. A foreign name is how DNS rebinding reaches a local server (403).
//  2. Public paths (the OAuth protected-resource metadata) are served to anyone from here on.
//  3. Origin, when present, must be an allowed origin, or a loopback origin on a loopback Host
//     (a local tool talking to a local server). The MCP transport spec requires 403 otherwise.
//  4. When the listener has credentials (a token, principals, OAuth), the request must carry one
//     (401 otherwise, with a WWW-Authenticate challenge; 403 for an OAuth token without the
//     scopes). See auth.go. The identity goes into the request's context.
//
// Every refusal closes the connection and reads nothing more from it: a request that is refused
// costs nothing that waits (issue 18 item 2).
type guard struct {
	loopback bool     // the listener binds loopback addresses only
	origins  []string // normalized
	hosts    []string // lower case, with or without port
	auth     *authenticator
	public   map[string]http.Handler
}

func newGuard(o HTTPOptions, auth *authenticator) *guard {
	g := &guard{loopback: o.Loopback, hosts: o.AllowedHosts, auth: auth, public: map[string]http.Handler{}}
	for _, orig := range o.AllowedOrigins {
		if n, msg := httpauth.NormalizeOrigin(orig); msg == "" {
			g.origins = append(g.origins, n)
		}
	}
	return g
}

func (g *guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if msg := g.checkHost(r.Host); msg != "" {
			refuse(w, r, http.StatusForbidden, msg)
			return
		}
		if h, ok := g.public[r.URL.Path]; ok && (r.Method == http.MethodGet || r.Method == http.MethodOptions) {
			h.ServeHTTP(w, r)
			return
		}
		if msg := g.checkOrigin(r); msg != "" {
			refuse(w, r, http.StatusForbidden, msg)
			return
		}
		id, aerr := g.auth.authenticate(r.Context(), r.Header.Get("Authorization"))
		if aerr != nil {
			w.Header().Set("WWW-Authenticate", g.auth.challenge(aerr))
			refuse(w, r, aerr.status, aerr.msg)
			return
		}
		next.ServeHTTP(w, r.WithContext(withIdentity(r.Context(), id)))
	})
}

// splitHost returns the lower-cased host name of a Host header value (brackets removed).
func splitHost(hostport string) string {
	h := strings.ToLower(hostport)
	if host, _, err := net.SplitHostPort(h); err == nil {
		return strings.Trim(host, "[]")
	}
	return strings.Trim(h, "[]")
}

func isLoopbackName(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (g *guard) allowedHost(hostport string) bool {
	full, name := strings.ToLower(hostport), splitHost(hostport)
	return slices.Contains(g.hosts, full) || slices.Contains(g.hosts, name)
}

func (g *guard) checkHost(hostport string) string {
	if hostport == "" {
		return "a Host header is required"
	}
	if g.allowedHost(hostport) {
		return ""
	}
	name := splitHost(hostport)
	if g.loopback {
		if isLoopbackName(name) {
			return ""
		}
		return "Host " + quote(hostport) + " is not allowed on a loopback listener (add it to serve.http.allowedHosts)"
	}
	if name == "localhost" || net.ParseIP(name) != nil {
		return ""
	}
	return "Host " + quote(hostport) + " is not allowed (add it to serve.http.allowedHosts)"
}

func (g *guard) checkOrigin(r *http.Request) string {
	vals := r.Header.Values("Origin")
	if len(vals) == 0 {
		return ""
	}
	if len(vals) > 1 {
		return "more than one Origin header"
	}
	norm, msg := httpauth.NormalizeOrigin(vals[0])
	if msg != "" {
		return "Origin " + quote(vals[0]) + " is not allowed"
	}
	if slices.Contains(g.origins, norm) {
		return ""
	}
	if isLoopbackName(splitHost(strings.SplitN(norm, "://", 2)[1])) && isLoopbackName(splitHost(r.Host)) {
		return ""
	}
	return "Origin " + quote(vals[0]) + " is not allowed (add it to serve.http.allowedOrigins)"
}

func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// denyJSON answers a refused request. On /mcp the body is a JSON-RPC error (what an MCP client
// can show); elsewhere a small JSON object.
func denyJSON(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if r.URL.Path == mcpPath {
		writeRPCError(w, status, nil, rpcCodeFor(status), msg)
		return
	}
	writeJSON(w, status, map[string]string{"error": code, "message": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// rpcCodeFor picks the JSON-RPC error code of a transport-level refusal. -32000…-32099 are the
// implementation-defined server errors.
func rpcCodeFor(status int) int {
	switch status {
	case http.StatusUnauthorized:
		return -32001
	case http.StatusForbidden:
		return -32003
	case http.StatusServiceUnavailable:
		return -32005
	case http.StatusNotFound:
		return codeSessionEnded // the session is gone (the SDK's only 404)
	case http.StatusInternalServerError:
		return -32603
	}
	return -32600 // a request the server cannot take (400, 405, 406, 408, 413, 415)
}

// writeRPCError writes a JSON-RPC error response; id nil means `"id": null` (the request's id
// is unknown).
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	writeJSON(w, status, struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, msg}})
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}
