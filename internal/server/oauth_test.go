package server

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/oauth"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// TestOAuthListener: the listener as an OAuth resource server with a local issuer — a 401
// points at the RFC 9728 metadata, which is public; a valid token acts as its user with the
// policy its scope maps to, and the user's runs are its own (issue 19 item 4).
func TestOAuthListener(t *testing.T) {
	raw, _ := rsa.GenerateKey(rand.Reader, 2048)
	priv, _ := jwk.Import(raw)
	_ = priv.Set(jwk.KeyIDKey, "k1")
	pub, _ := priv.PublicKey()
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set := jwk.NewSet()
		_ = set.AddKey(pub)
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(jwks.Close)
	cfg := config.Default()
	cfg.Serve.Principals = []config.Principal{{Name: "readers", Tools: config.PrincipalTools{Deny: []string{"echo"}}}}
	oc := config.OAuth{Issuer: "https://auth.example", Resource: "https://mcp.example/mcp", JWKSURL: jwks.URL,
		ClockSkewSeconds: 5, PrincipalClaim: "sub", Scopes: []string{"mcp"},
		Principals: []config.OAuthRule{{Scope: "read", Principal: "readers"}, {Scope: "write", Principal: ""}}}
	oc.Principals = oc.Principals[:1]
	cfg.Serve.OAuth = &oc
	v, err := oauth.New(context.Background(), oc, oauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, _, ctx := openServer(t, cfg, []*api.Tool{echoTool("echo", false)})
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true, OAuth: v}))
	t.Cleanup(ts.Close)
	token := func(sub, scope string, exp time.Duration) string {
		tok := jwt.New()
		_ = tok.Set(jwt.IssuerKey, "https://auth.example")
		_ = tok.Set(jwt.AudienceKey, "https://mcp.example/mcp")
		_ = tok.Set(jwt.SubjectKey, sub)
		_ = tok.Set(jwt.ExpirationKey, time.Now().Add(exp))
		_ = tok.Set("scope", scope)
		b, err := jwt.Sign(tok, jwt.WithKey(jwa.RS256(), priv))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	status := func(auth string) (int, http.Header, string) {
		req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header, string(b)
	}
	code, h, _ := status("")
	if code != 401 || h.Get("WWW-Authenticate") != `Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp", scope="mcp"` {
		t.Fatalf("%d %q", code, h.Get("WWW-Authenticate"))
	}
	if code, h, b := status("Bearer " + token("alice", "mcp read", -time.Hour)); code != 401 || !strings.Contains(h.Get("WWW-Authenticate"), `error="invalid_token"`) || !strings.Contains(b, "expired") {
		t.Fatalf("expired: %d %v %s", code, h, b)
	}
	if code, h, _ := status("Bearer " + token("alice", "read", time.Hour)); code != 403 || !strings.Contains(h.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		t.Fatalf("missing scope: %d %v", code, h)
	}
	if code, _, b := status("Bearer " + token("alice", "mcp", time.Hour)); code != 403 || !strings.Contains(b, "no serve.oauth.principals rule") {
		t.Fatalf("no rule: %d %s", code, b)
	}
	// The metadata is public, from any origin.
	req, _ := http.NewRequest("GET", ts.URL+"/.well-known/oauth-protected-resource/mcp", nil)
	req.Header.Set("Origin", "https://elsewhere.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if resp.StatusCode != 200 || meta["resource"] != "https://mcp.example/mcp" {
		t.Fatalf("%d %v", resp.StatusCode, meta)
	}

	alice := statelessClient(t, ts.URL+"/mcp", token("alice", "mcp read", time.Hour), nil)
	if r := callExec(t, alice, "exec", map[string]any{"code": `return ALL_TOOLS.some(t => t.name === "echo")`}); string(r.Value) != "false" {
		t.Fatalf("the readers policy was not applied: %+v", r)
	}
	r := callExec(t, alice, "exec", map[string]any{"code": `await yield_control(); return "alice"`})
	carol := statelessClient(t, ts.URL+"/mcp", token("carol", "mcp read", time.Hour), nil)
	if w := callExec(t, carol, "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusFailed || !strings.Contains(w.Error, "different session") {
		t.Fatalf("another user continued alice's run: %+v", w)
	}
	again := statelessClient(t, ts.URL+"/mcp", token("alice", "mcp read", 2*time.Hour), nil)
	if w := callExec(t, again, "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusCompleted {
		t.Fatalf("alice with a new token: %+v", w)
	}
}
