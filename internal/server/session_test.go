package server

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// openServer starts a gateway and a server; sessions are added with newSession.
func openServer(t *testing.T, cfg *config.Config, tools []*api.Tool) (*Server, *gateway.Gateway, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	g, err := gateway.Open(ctx, cfg, gateway.Options{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(g, nil)
	t.Cleanup(func() {
		cancel()
		srv.Close()
		g.Close()
	})
	return srv, g, ctx
}

func newSession(t *testing.T, srv *Server, ctx context.Context) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = srv.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSessionCloseDropsRuns(t *testing.T) { // W7: closing a session frees its runs at once
	cfg := config.Default()
	// The store holds 64 runs in all (runtime.suspended.maxRuns; issue 18 item 5 made it a
	// setting), and one session may take them all.
	cfg.Runtime.Suspended.MaxRuns, cfg.Runtime.Suspended.MaxRunsPerSession = 64, 64
	srv, g, ctx := openServer(t, cfg, nil)
	a := newSession(t, srv, ctx)
	for i := range 64 {
		if r := callExec(t, a, "exec", map[string]any{"code": `await yield_control(); return 1`}); r.Status != api.StatusWaiting {
			t.Fatalf("run %d: %+v", i, r)
		}
	}
	b := newSession(t, srv, ctx)
	if r := callExec(t, b, "exec", map[string]any{"code": `await yield_control(); return 1`}); r.Status != api.StatusFailed || !strings.Contains(r.Error, "too many") {
		t.Fatalf("the store should be full: %+v", r)
	}
	a.Close()
	eventually(t, "session a's runs dropped", func() bool { return g.RT.Stats().SuspendedRuns == 0 })
	if r := callExec(t, b, "exec", map[string]any{"code": `await yield_control(); return 1`}); r.Status != api.StatusWaiting {
		t.Fatalf("after a closed: %+v", r)
	}
}

func TestSessionCloseCancelsRunningExec(t *testing.T) { // W7: stdin EOF ends running execs at once
	cfg := config.Default()
	cfg.Tools.CodeMode.TimeoutMs = 60000
	started, cancelled := make(chan struct{}), make(chan struct{})
	slow := &api.Tool{Name: "slow", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}}
	srv, _, ctx := openServer(t, cfg, []*api.Tool{slow})
	inR, inW := io.Pipe()
	go func() { _, _ = io.Copy(io.Discard, outPipe(t, srv, ctx, inR)) }()
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"code":"return await tools.slow({})"}}}`,
	} {
		if _, err := io.WriteString(inW, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	<-started
	inW.Close() // the client went away
	select {
	case <-cancelled:
	case <-time.After(20 * time.Second): // far below the 60 s timeout
		t.Fatal("the nested call outlived its session")
	}
	eventually(t, "no session left", func() bool { return srv.sess.count() == 0 })
}

// outPipe runs a stdio session on in and returns its output.
func outPipe(t *testing.T, srv *Server, ctx context.Context, in io.Reader) io.Reader {
	outR, outW := io.Pipe()
	go func() { _ = srv.Run(ctx, StdioTransport(in, outW)); outW.Close() }()
	return outR
}

func TestAbandonedHTTPSessionsAreReaped(t *testing.T) {
	srv, g, ctx := openServer(t, config.Default(), nil)
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true, SessionIdleTimeout: time.Second}))
	t.Cleanup(ts.Close)
	before := runtime.NumGoroutine()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	var sids []string
	for range 50 {
		req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		sids = append(sids, resp.Header.Get("Mcp-Session-Id"))
	}
	// One suspended run in a session that is then abandoned.
	cs := connectStreamable(t, ts.URL+"/mcp")
	if r := callExec(t, cs, "exec", map[string]any{"code": `await yield_control(); return 1`}); r.Status != api.StatusWaiting {
		t.Fatalf("%+v", r)
	}
	if srv.sess.count() == 0 || g.RT.Stats().SuspendedRuns != 1 {
		t.Fatalf("%d sessions, %d runs", srv.sess.count(), g.RT.Stats().SuspendedRuns)
	}
	eventually(t, "idle sessions reaped", func() bool { return srv.sess.count() == 0 && g.RT.Stats().SuspendedRuns == 0 })
	http.DefaultClient.CloseIdleConnections()
	eventually(t, "goroutines back", func() bool { return runtime.NumGoroutine() <= before+5 })
	// A reaped session is gone for its client.
	req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sids[0])
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("%v %v", err, resp)
	}
}

func TestMaxSessions(t *testing.T) {
	srv, _, ctx := openServer(t, config.Default(), nil)
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true, MaxSessions: 2}))
	t.Cleanup(ts.Close)
	connectStreamable(t, ts.URL+"/mcp")
	connectStreamable(t, ts.URL+"/mcp")
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(cctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: sessionProtocol})
	if err == nil {
		t.Fatal("a third session was accepted")
	}
}

func TestFloodLeavesOtherSessionServed(t *testing.T) { // admission is fair between sessions
	cfg := config.Default()
	cfg.Tools.CodeMode.TimeoutMs = 20000
	cfg.Runtime.Admission = config.Admission{MaxRunning: 2, MaxQueued: 4}
	srv, g, ctx := openServer(t, cfg, nil)
	flood, single := newSession(t, srv, ctx), newSession(t, srv, ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Busy cells: a cell that only waits for a tool gives its CPU share back (issue 18
			// item 4), so a flood that holds the slots computes.
			r := callExec(t, flood, "exec", map[string]any{"code": `const end = Date.now() + 3000; while (Date.now() < end) {} return 1`})
			mu.Lock()
			codes[r.Status+"/"+string(r.Code)]++
			mu.Unlock()
		}()
	}
	eventually(t, "slots full and queue full", func() bool { r, q, _ := g.AdmissionStats(); return r == 2 && q == 4 })
	done := make(chan api.ExecResult, 1)
	go func() { done <- callExec(t, single, "exec", map[string]any{"code": `return 41 + 1`}) }()
	eventually(t, "single queued", func() bool { _, q, rej := g.AdmissionStats(); return q == 4 && rej >= 7 })
	if r := <-done; r.Status != api.StatusCompleted || string(r.Value) != "42" {
		t.Fatalf("the single exec was not served: %+v", r)
	}
	wg.Wait()
	if codes["failed/overloaded"] == 0 || codes["completed/"] == 0 {
		t.Fatalf("flood outcomes %v", codes)
	}
}

// sessionProtocol is the last protocol version with sessions: clients pinned to it initialize
// and get an Mcp-Session-Id (go-sdk's default is the sessionless 2026-07-28).
const sessionProtocol = "2025-11-25"

// connectStreamable connects a session-protocol client over streamable HTTP.
func connectStreamable(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: sessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestHTTPDeleteCancelsRunningExec(t *testing.T) { // W7 over HTTP: DELETE ends running execs at once
	cfg := config.Default()
	cfg.Tools.CodeMode.TimeoutMs = 60000
	started, cancelled := make(chan struct{}), make(chan struct{})
	slow := &api.Tool{Name: "slow", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}}
	srv, _, ctx := openServer(t, cfg, []*api.Tool{slow})
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true}))
	t.Cleanup(ts.Close)
	cs := connectStreamable(t, ts.URL+"/mcp")
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"code": `return await tools.slow({})`}})
	}()
	<-started
	req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", cs.ID())
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-cancelled:
	case <-time.After(20 * time.Second):
		t.Fatal("the nested call outlived its deleted session")
	}
}

func TestSessionCloseInterruptsBusyCell(t *testing.T) { // W7 even for a cell that awaits nothing
	cfg := config.Default()
	cfg.Tools.CodeMode.TimeoutMs = 60000
	srv, _, ctx := openServer(t, cfg, nil)
	inR, inW := io.Pipe()
	out := bufio.NewReader(outPipe(t, srv, ctx, inR))
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"code":"for (;;) {}"}}}`,
	} {
		if _, err := io.WriteString(inW, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := out.ReadString('\n'); err != nil { // the initialize answer
		t.Fatal(err)
	}
	eventually(t, "the cell runs", func() bool { r, _, _ := srv.g.AdmissionStats(); return r == 1 })
	inW.Close()
	eventually(t, "the VM freed its slot", func() bool { r, _, _ := srv.g.AdmissionStats(); return r == 0 })
}
