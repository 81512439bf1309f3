package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/gateway"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessClient connects go-sdk's default client (it tries 2026-07-28 first), optionally
// with a bearer token.
func statelessClient(t *testing.T, url, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	hc := http.DefaultClient
	if token != "" {
		hc = &http.Client{Transport: bearerRT{token}}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stateless", Version: "1"}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func sessionClient(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	hc := http.DefaultClient
	if token != "" {
		hc = &http.Client{Transport: bearerRT{token}}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "session", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: sessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestBothGenerationsOnOnePort: go-sdk v1.8.0's default client negotiates 2026-07-28 (no
// session); a session-protocol client still works on the same endpoint; exec → waiting from one
// stateless client, wait from a fresh one → completed (issue 19 items 1–2).
func TestBothGenerationsOnOnePort(t *testing.T) {
	srv, _, ctx := openServer(t, config.Default(), nil)
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true}))
	t.Cleanup(ts.Close)
	url := ts.URL + "/mcp"

	a := statelessClient(t, url, "", nil)
	if v := a.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q", v)
	}
	if a.ID() != "" {
		t.Fatalf("a stateless client got session %q", a.ID())
	}
	r := callExec(t, a, "exec", map[string]any{"code": `await yield_control("later"); return "resumed"`})
	if r.Status != api.StatusWaiting {
		t.Fatalf("%+v", r)
	}
	if n := srv.sess.count(); n != 0 {
		t.Fatalf("%d sessions registered for stateless requests", n)
	}
	b := statelessClient(t, url, "", nil)
	if w := callExec(t, b, "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusCompleted || string(w.Value) != `"resumed"` {
		t.Fatalf("wait from a fresh stateless client: %+v", w)
	}

	s := sessionClient(t, url, "")
	if v := s.InitializeResult().ProtocolVersion; v != sessionProtocol || s.ID() == "" {
		t.Fatalf("session client: version %q, session %q", v, s.ID())
	}
	r = callExec(t, s, "exec", map[string]any{"code": `await yield_control(); return 2`})
	if r.Status != api.StatusWaiting {
		t.Fatalf("%+v", r)
	}
	// Without credentials the session stays the scope: a stateless client cannot continue it.
	if w := callExec(t, b, "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusFailed || !strings.Contains(w.Error, "different session") {
		t.Fatalf("%+v", w)
	}
	if w := callExec(t, s, "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusCompleted {
		t.Fatalf("%+v", w)
	}
}

// TestConversationKey: a run started with _meta codemode/conversation is waited on with the
// same key only.
func TestConversationKey(t *testing.T) {
	srv, _, ctx := openServer(t, config.Default(), nil)
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true}))
	t.Cleanup(ts.Close)
	cs := statelessClient(t, ts.URL+"/mcp", "", nil)
	call := func(name string, args map[string]any, conv string) api.ExecResult {
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		if conv != "" {
			p.Meta = mcp.Meta{ConversationMeta: conv}
		}
		res, err := cs.CallTool(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		var r api.ExecResult
		_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &r)
		return r
	}
	r := call("exec", map[string]any{"code": `await yield_control(); return 1`}, "conv-a")
	if w := call("wait", map[string]any{"runId": r.RunID}, "conv-b"); w.Status != api.StatusFailed {
		t.Fatalf("another conversation continued it: %+v", w)
	}
	if w := call("wait", map[string]any{"runId": r.RunID}, "conv-a"); w.Status != api.StatusCompleted {
		t.Fatalf("%+v", w)
	}
	// One-shot session clients (Inspector --cli) put the key in the URL: one session execs,
	// another waits.
	first := sessionClient(t, ts.URL+"/mcp?conversation=demo", "")
	r = callExec(t, first, "exec", map[string]any{"code": `await yield_control(); return "one-shot"`})
	first.Close()
	if w := callExec(t, sessionClient(t, ts.URL+"/mcp?conversation=other", ""), "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusFailed {
		t.Fatalf("another conversation continued it: %+v", w)
	}
	if w := callExec(t, sessionClient(t, ts.URL+"/mcp?conversation=demo", ""), "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusCompleted || string(w.Value) != `"one-shot"` {
		t.Fatalf("%+v", w)
	}
}

// principalsServer serves two token principals with different tool policies.
func principalsServer(t *testing.T, mutate func(*config.Config), extra ...*api.Tool) (*Server, string) {
	t.Helper()
	cfg := config.Default()
	cfg.Serve.Principals = []config.Principal{
		{Name: "alice", Tools: config.PrincipalTools{Deny: []string{"native:app:secret"}}},
		{Name: "bob", Tools: config.PrincipalTools{Allow: []string{"echo", "secret"}, DirectOnly: []string{"secret"}}, MaxRunning: 1},
	}
	if mutate != nil {
		mutate(cfg)
	}
	srv, _, ctx := openServer(t, cfg, append([]*api.Tool{echoTool("echo", false), echoTool("secret", false)}, extra...))
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true, Principals: []PrincipalToken{
		{Name: "alice", Token: aliceToken}, {Name: "bob", Token: bobToken}}}))
	t.Cleanup(ts.Close)
	return srv, ts.URL + "/mcp"
}

const (
	aliceToken = "alice-token-0123456789abcdef"
	bobToken   = "bob-token-0123456789abcdef01"
)

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// TestPrincipalsSeeTheirOwnToolsAndRuns: two token principals see different tools and cannot
// wait on each other's runs; the same principal continues its run from another connection of
// either protocol generation (issue 19 items 2–3).
func TestPrincipalsSeeTheirOwnToolsAndRuns(t *testing.T) {
	_, url := principalsServer(t, nil)
	alice := statelessClient(t, url, aliceToken, nil)
	bob := statelessClient(t, url, bobToken, nil)
	if got := toolNames(t, alice); !slices.Equal(got, []string{"exec", "wait"}) {
		t.Fatalf("alice's tools %v", got)
	}
	if got := toolNames(t, bob); !slices.Equal(got, []string{"exec", "secret", "wait"}) {
		t.Fatalf("bob's tools %v", got)
	}
	all := `return ALL_TOOLS.map(t => t.name).filter(n => ["echo", "secret", "read"].includes(n)).sort()`
	if r := callExec(t, alice, "exec", map[string]any{"code": all}); string(r.Value) != `["echo","read"]` {
		t.Fatalf("alice's catalog %+v", r)
	}
	if r := callExec(t, bob, "exec", map[string]any{"code": all}); string(r.Value) != `["echo"]` {
		t.Fatalf("bob's catalog %+v", r)
	}
	r := callExec(t, alice, "exec", map[string]any{"code": `await yield_control(); return "alice's"`})
	if w := callExec(t, bob, "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusFailed || !strings.Contains(w.Error, "different session") {
		t.Fatalf("bob continued alice's run: %+v", w)
	}
	// Alice, on a session-protocol connection this time, continues it.
	if w := callExec(t, sessionClient(t, url, aliceToken), "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusCompleted {
		t.Fatalf("%+v", w)
	}
}

// TestPrincipalSessionBinding: a session opened by one principal cannot be used by another.
func TestPrincipalSessionBinding(t *testing.T) {
	_, url := principalsServer(t, nil)
	alice := sessionClient(t, url, aliceToken)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", alice.ID())
	req.Header.Set("Mcp-Protocol-Version", sessionProtocol)
	req.Header.Set("Authorization", "Bearer "+bobToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), `"code":-32003`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

// TestAuthorizationParse: the scheme in any case and any white space between scheme and token
// name the same principal (issue 18 item 8); anything else is refused.
func TestAuthorizationParse(t *testing.T) {
	_, url := principalsServer(t, nil)
	r := callExec(t, statelessClient(t, url, aliceToken, nil), "exec", map[string]any{"code": `await yield_control(); return 1`})
	for _, h := range []string{"bearer " + aliceToken, "Bearer  " + aliceToken, "BEARER\t" + aliceToken} {
		rt := headerRT{h: h}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}}, nil)
		if err != nil {
			t.Fatalf("%q: %v", h, err)
		}
		// The same principal: its waits reach alice's run (one of them continues it, the
		// others find it gone or already continued — never "different session").
		w := callExec(t, cs, "wait", map[string]any{"runId": r.RunID})
		if strings.Contains(w.Error, "different session") {
			t.Fatalf("%q derived another principal: %+v", h, w)
		}
		cs.Close()
	}
	for _, h := range []string{"Basic " + aliceToken, "Bearer", "Bearer " + aliceToken + " extra", "Bearer x" + aliceToken} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Authorization", h)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !resp.Close ||
			!strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") || !strings.Contains(string(b), `"code":-32001`) {
			t.Fatalf("%q: %d %v %s", h, resp.StatusCode, resp.Header, b)
		}
	}
}

type headerRT struct{ h string }

func (rt headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", rt.h)
	return http.DefaultTransport.RoundTrip(r)
}

// TestPrincipalMaxRunning: a principal's calls past its maxRunning fail at once as overloaded,
// and another principal is not affected.
func TestPrincipalMaxRunning(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	hold := &api.Tool{Name: "hold", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		close(started)
		<-release
		return api.TextResult("held", nil)
	}}
	_, url := principalsServer(t, func(c *config.Config) {
		c.Serve.Principals[1].Tools.Allow = append(c.Serve.Principals[1].Tools.Allow, "hold")
	}, hold)
	done := make(chan api.ExecResult, 1)
	bob := statelessClient(t, url, bobToken, nil)
	go func() { done <- callExec(t, bob, "exec", map[string]any{"code": `await tools.hold({}); return 1`}) }()
	<-started
	refused := callExec(t, statelessClient(t, url, bobToken, nil), "exec", map[string]any{"code": `return 2`})
	if r := callExec(t, statelessClient(t, url, aliceToken, nil), "exec", map[string]any{"code": `return 3`}); r.Status != api.StatusCompleted {
		t.Fatalf("alice was refused: %+v", r)
	}
	close(release)
	if refused.Code != api.CodeOverloaded || !strings.Contains(refused.Error, "maxRunning") {
		t.Fatalf("%+v", refused)
	}
	if r := <-done; r.Status != api.StatusCompleted {
		t.Fatalf("%+v", r)
	}
}

type trajRecorder struct {
	mu  sync.Mutex
	evs []api.TrajectoryEvent
}

func (r *trajRecorder) Record(ev api.TrajectoryEvent) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

// TestPrincipalInTrajectory: the audit log names the principal of every control and nested call
// (issue 19 item 3).
func TestPrincipalInTrajectory(t *testing.T) {
	cfg := config.Default()
	cfg.Serve.Principals = []config.Principal{{Name: "alice"}}
	rec := &trajRecorder{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g, err := gateway.Open(ctx, cfg, gateway.Options{Tools: []*api.Tool{echoTool("echo", false)}, Trajectory: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv := New(g, nil)
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true, Principals: []PrincipalToken{{Name: "alice", Token: aliceToken}}}))
	t.Cleanup(ts.Close)
	callExec(t, statelessClient(t, ts.URL+"/mcp", aliceToken, nil), "exec", map[string]any{"code": `return await tools.echo({x: 1})`})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	kinds := map[string]bool{}
	for _, ev := range rec.evs {
		if ev.Run.Principal != "alice" {
			t.Fatalf("%s event without the principal: %+v", ev.Kind, ev.Run)
		}
		kinds[string(ev.Kind)] = true
	}
	if !kinds[string(api.EventNested)] || !kinds[string(api.EventControl)] {
		t.Fatalf("events %v", kinds)
	}
}

// TestStatelessAcrossReplicas: two gateways sharing a run store; a stateless client's exec on
// one and its wait on the other (issue 19 item 2: any replica sharing the run store).
func TestStatelessAcrossReplicas(t *testing.T) {
	store := runstore.NewMemDurable(runstore.Limits{})
	replica := func() string {
		cfg := config.Default()
		cfg.Serve.Principals = []config.Principal{{Name: "alice"}}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		g, err := gateway.Open(ctx, cfg, gateway.Options{RunStore: store})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		srv := New(g, nil)
		t.Cleanup(srv.Close)
		ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true, Principals: []PrincipalToken{{Name: "alice", Token: aliceToken}}}))
		t.Cleanup(ts.Close)
		return ts.URL + "/mcp"
	}
	a, b := replica(), replica()
	r := callExec(t, statelessClient(t, a, aliceToken, nil), "exec", map[string]any{"code": `await yield_control(); return "elsewhere"`})
	if r.Status != api.StatusWaiting {
		t.Fatalf("%+v", r)
	}
	if w := callExec(t, statelessClient(t, b, aliceToken, nil), "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusCompleted || string(w.Value) != `"elsewhere"` {
		t.Fatalf("wait on the other replica: %+v", w)
	}
}

// TestPrincipalApprovals: a principal's own approval rule gates a tool the others call freely.
func TestPrincipalApprovals(t *testing.T) {
	_, url := principalsServer(t, func(c *config.Config) {
		c.Serve.Principals[0].Tools.Approvals = api.Approvals{Rules: []api.ApprovalRule{{Match: "echo", Fallback: "deny"}}}
		c.Serve.Principals[1].Tools.Allow = nil
	})
	code := `try { return await tools.echo({v: 1}) } catch (e) { return e.code }`
	if r := callExec(t, statelessClient(t, url, aliceToken, nil), "exec", map[string]any{"code": code}); string(r.Value) != `"not_approved"` {
		t.Fatalf("alice (approval required, nobody to ask): %+v", r)
	}
	if r := callExec(t, statelessClient(t, url, bobToken, nil), "exec", map[string]any{"code": code}); string(r.Value) != `{"v":1}` {
		t.Fatalf("bob: %+v", r)
	}
}

// TestStatelessProgressAndListChanged: a sessionless client gets progress notifications on its
// request's stream, and tools/list_changed through subscriptions/listen (docs/gateway.md's
// feature table).
func TestStatelessProgressAndListChanged(t *testing.T) {
	step := &api.Tool{Name: "step", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		if c.Update != nil {
			c.Update(api.ContentBlock{Type: "text", Text: "half way"})
		}
		return api.TextResult("done", nil)
	}}
	cfg := config.Default()
	srv, g, ctx := openServer(t, cfg, []*api.Tool{step})
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true}))
	t.Cleanup(ts.Close)
	progressed := make(chan string, 8)
	changed := make(chan struct{}, 8)
	cs := statelessClient(t, ts.URL+"/mcp", "", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progressed <- r.Params.Message
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	p := &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"code": `return await tools.step({})`}}
	p.SetProgressToken("tok-1")
	if _, err := cs.CallTool(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-progressed:
		if !strings.Contains(m, "half way") {
			t.Fatalf("progress message %q", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no progress notification reached the stateless client")
	}
	cfg2 := *g.Cfg
	cfg2.Plugins.Git.Enabled = true
	if _, err := g.ReloadPlugins(ctx, &cfg2); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed reached the stateless client")
	}
}
