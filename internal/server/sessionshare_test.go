package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/config"
)

// rawSession opens an MCP session over raw HTTP as token's principal and returns its id, or the
// refusal's status and body.
func rawSession(t *testing.T, url, token string) (sid string, status int, body string) {
	t.Helper()
	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, sessionProtocol)
	resp := rawPost(t, url, token, "", init)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.Header.Get("Mcp-Session-Id"), resp.StatusCode, string(b)
}

func rawPost(t *testing.T, url, token, sid, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", sessionProtocol)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// alive reports whether the session still answers.
func alive(t *testing.T, url, token, sid string) bool {
	t.Helper()
	resp := rawPost(t, url, token, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"tools"`)
}

// inUse opens the session's event stream (GET) and keeps it open until the test ends or the
// returned function is called.
func inUse(t *testing.T, url, token, sid string) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", sessionProtocol)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", err, resp)
	}
	stop := func() { cancel(); resp.Body.Close() }
	t.Cleanup(stop)
	return stop
}

// Sessions are shared and abandoned (a client opening one per call, a client that dies): a full
// table makes room from the client holding the most, never from a session in use, so one client
// locks nobody out for the idle timeout (issue 18: nothing one client sends locks others out).
func TestSessionsMakeRoom(t *testing.T) {
	srv, _, ctx := openServer(t, principalsCfg(), nil)
	opts := aliceAndBob()
	opts.MaxSessions, opts.MaxSessionsPerClient = 4, 3
	url := serveHTTP(t, srv, ctx, opts)
	open := func(token string) string {
		t.Helper()
		sid, status, body := rawSession(t, url, token)
		if status != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d %s", status, body)
		}
		time.Sleep(2 * time.Millisecond) // distinct last-use times
		return sid
	}
	a1, a2, a3 := open(aliceToken), open(aliceToken), open(aliceToken)
	// Alice at her share: her least recently used idle session makes room.
	a4 := open(aliceToken)
	if alive(t, url, aliceToken, a1) || !alive(t, url, aliceToken, a2) {
		t.Fatal("alice's fourth session did not replace her least recently used one")
	}
	// a2 was just used: a3 is now alice's least recently used.
	b1 := open(bobToken)
	// The table is full (alice 3, bob 1): alice holds more than bob would, so she gives one up.
	b2 := open(bobToken)
	if alive(t, url, aliceToken, a3) || !alive(t, url, aliceToken, a2) || !alive(t, url, aliceToken, a4) {
		t.Fatal("bob's second session did not take alice's least recently used one")
	}
	// Alice 2, bob 2: nobody holds more than bob would; bob waits.
	if _, status, body := rawSession(t, url, bobToken); status != http.StatusServiceUnavailable ||
		!strings.Contains(body, `"code":-32005`) || !strings.Contains(body, "maxSessions = 4") {
		t.Fatalf("a fifth session: %d %s", status, body)
	}
	if !alive(t, url, bobToken, b1) || !alive(t, url, bobToken, b2) {
		t.Fatal("bob's sessions")
	}
}

// A session in use (an open event stream or a request in progress) is never closed to make room.
func TestSessionsInUseStay(t *testing.T) {
	srv, _, ctx := openServer(t, principalsCfg(), nil)
	opts := aliceAndBob()
	opts.MaxSessions, opts.MaxSessionsPerClient = 10, 2
	url := serveHTTP(t, srv, ctx, opts)
	a1, _, _ := rawSession(t, url, aliceToken)
	a2, _, _ := rawSession(t, url, aliceToken)
	stop1 := inUse(t, url, aliceToken, a1)
	inUse(t, url, aliceToken, a2)
	_, status, body := rawSession(t, url, aliceToken)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "maxSessionsPerClient = 2") {
		t.Fatalf("a third session while both are in use: %d %s", status, body)
	}
	// Bob has his own share.
	if _, status, body := rawSession(t, url, bobToken); status != http.StatusOK {
		t.Fatalf("bob: %d %s", status, body)
	}
	stop1()
	eventually(t, "a1 idle makes room", func() bool {
		_, status, _ := rawSession(t, url, aliceToken)
		return status == http.StatusOK
	})
	if alive(t, url, aliceToken, a1) || !alive(t, url, aliceToken, a2) {
		t.Fatal("the idle session should have made room, the one in use stayed")
	}
}

// principalsCfg is principalsServer's configuration without its tools.
func principalsCfg() *config.Config {
	cfg := config.Default()
	cfg.Serve.Principals = []config.Principal{{Name: "alice"}, {Name: "bob"}}
	return cfg
}
