package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// End-to-end tests of `codemode serve` as a user runs it: the real binary, a real listener.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// binary builds cmd/codemode once per test process.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "codemode-e2e")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "codemode")
		out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/codemode").CombinedOutput()
		if err != nil {
			binErr = &buildError{out: string(out), err: err}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

const testToken = "e2e-token-0123456789abcdef"

var servedAt = regexp.MustCompile(`at http://([^/ ]+)/mcp`)

// served is a running `codemode serve --http`.
type served struct {
	base   string // http://host:port
	cmd    *exec.Cmd
	stderr *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServe runs the binary with args and env (KEY=VALUE) and waits for its start line.
func startServe(t *testing.T, env []string, args ...string) *served {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve"}, args...)...)
	cmd.Env = append(append(os.Environ(), "CODEMODE_TOKEN="), env...) // the later value wins
	pr, pw := io.Pipe()
	buf := &lockedBuffer{}
	cmd.Stderr = io.MultiWriter(buf, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &served{cmd: cmd, stderr: buf}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		pw.Close()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := servedAt.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case addr := <-found:
		s.base = "http://" + addr
	case <-time.After(60 * time.Second):
		t.Fatalf("no start line; stderr:\n%s", buf.String())
	}
	return s
}

type httpResult struct {
	status int
	body   string
	header http.Header
}

func (s *served) do(t *testing.T, method, path string, hdr map[string]string, body string) httpResult {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return httpResult{resp.StatusCode, string(b), resp.Header}
}

func TestServeRefusesNonLoopbackWithoutToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		t.Run(addr, func(t *testing.T) {
			cmd := exec.Command(binary(t), "serve", "--http", addr)
			cmd.Env = append(os.Environ(), "CODEMODE_TOKEN=")
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "without a token") || !strings.Contains(string(out), "CODEMODE_TOKEN") {
				t.Fatalf("exit %v, output:\n%s", err, out)
			}
		})
	}
	t.Run("weak token", func(t *testing.T) {
		cmd := exec.Command(binary(t), "serve", "--http", "0.0.0.0:0")
		cmd.Env = append(os.Environ(), "CODEMODE_TOKEN=short")
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "at least 16") {
			t.Fatalf("exit %v, output:\n%s", err, out)
		}
	})
}

func TestServeHTTPGuard(t *testing.T) {
	s := startServe(t, []string{"CODEMODE_TOKEN=" + testToken}, "--http", "127.0.0.1:0")
	if !strings.Contains(s.stderr.String(), "bearer token required") || !strings.Contains(s.stderr.String(), "tools") {
		t.Fatalf("start line: %s", s.stderr.String())
	}
	auth := "Bearer " + testToken
	host := strings.TrimPrefix(s.base, "http://")
	cases := []struct {
		name, method, path string
		hdr                map[string]string
		status             int
		contains           string
	}{
		{"no token", "GET", "/healthz", nil, 401, "unauthorized"},
		{"wrong token", "GET", "/healthz", map[string]string{"Authorization": "Bearer wrong-token-0123456789"}, 401, "bearer token"},
		{"wrong scheme", "GET", "/healthz", map[string]string{"Authorization": "Basic " + testToken}, 401, ""},
		{"healthz", "GET", "/healthz", map[string]string{"Authorization": auth}, 200, `"status":"ok"`},
		{"lower-case scheme", "GET", "/healthz", map[string]string{"Authorization": "bearer " + testToken}, 200, ""},
		{"readyz", "GET", "/readyz", map[string]string{"Authorization": auth}, 200, `"ready":true`},
		{"metrics", "GET", "/metrics", map[string]string{"Authorization": auth}, 200, "codemode_mcp_sessions"},
		{"metrics without token", "GET", "/metrics", nil, 401, ""},
		{"unknown path", "GET", "/other", map[string]string{"Authorization": auth}, 404, "/mcp"},
		{"foreign origin", "GET", "/healthz", map[string]string{"Authorization": auth, "Origin": "http://evil.example"}, 403, "Origin"},
		{"foreign origin on mcp", "POST", "/mcp", map[string]string{"Authorization": auth, "Origin": "https://evil.example"}, 403, `"jsonrpc":"2.0"`},
		{"loopback origin", "GET", "/healthz", map[string]string{"Authorization": auth, "Origin": "http://localhost:5173"}, 200, ""},
		{"null origin", "GET", "/healthz", map[string]string{"Authorization": auth, "Origin": "null"}, 403, ""},
		{"foreign host", "GET", "/healthz", map[string]string{"Authorization": auth, "Host": "evil.example"}, 403, "Host"},
		{"rebinding host with port", "GET", "/healthz", map[string]string{"Authorization": auth, "Host": "evil.example:" + strings.Split(host, ":")[1]}, 403, ""},
		{"localhost host", "GET", "/healthz", map[string]string{"Authorization": auth, "Host": "localhost"}, 200, ""},
		{"foreign host before auth", "GET", "/healthz", map[string]string{"Host": "evil.example"}, 403, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.do(t, c.method, c.path, c.hdr, "")
			if r.status != c.status || !strings.Contains(r.body, c.contains) {
				t.Fatalf("%d %s, want %d containing %q", r.status, r.body, c.status, c.contains)
			}
			if r.status == 401 && r.header.Get("WWW-Authenticate") == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
		})
	}

	// A real MCP client with the token.
	cs := connectHTTP(t, s.base+"/mcp", testToken)
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(lt.Tools) < 2 {
		t.Fatalf("%v %+v", err, lt)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"code": "return 6*7"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"value":42`) {
		t.Fatalf("%v %+v", err, res)
	}
	// The call shows in /metrics.
	m := s.do(t, "GET", "/metrics", map[string]string{"Authorization": auth}, "")
	if !strings.Contains(m.body, `codemode_calls_total{call="exec",code="",principal="default",status="completed"} 1`) {
		t.Fatalf("metrics:\n%s", m.body)
	}
	// Without the token the MCP endpoint refuses.
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", DisableStandaloneSSE: true}, nil); err == nil {
		t.Fatal("connected without a token")
	}
}

func TestServeNonLoopbackWithToken(t *testing.T) {
	// Every interface, but the test only ever talks to 127.0.0.1.
	s := startServe(t, []string{"CODEMODE_TOKEN=" + testToken}, "--http", "0.0.0.0:0")
	port := s.base[strings.LastIndex(s.base, ":")+1:]
	s.base = "http://127.0.0.1:" + port
	auth := "Bearer " + testToken
	for _, c := range []struct {
		host   string
		status int
	}{{"127.0.0.1:" + port, 200}, {"10.1.2.3:" + port, 200}, {"evil.example", 403}, {"localhost", 200}} {
		if r := s.do(t, "GET", "/healthz", map[string]string{"Authorization": auth, "Host": c.host}, ""); r.status != c.status {
			t.Errorf("Host %s: %d %s, want %d", c.host, r.status, r.body, c.status)
		}
	}
	if r := s.do(t, "GET", "/healthz", nil, ""); r.status != 401 {
		t.Errorf("no token: %d", r.status)
	}
}

func TestServeHTTPProtocolErrors(t *testing.T) { // every transport answers JSON-RPC errors
	s := startServe(t, nil, "--http", "127.0.0.1:0")
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	r := s.do(t, "POST", "/mcp", h, init)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	h["Mcp-Session-Id"] = sid
	h["Mcp-Protocol-Version"] = "2025-06-18"
	s.do(t, "POST", "/mcp", h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	cases := []struct {
		name, body string
		status     int
		code       int
	}{
		{"malformed", `{"jsonrpc":"2.0","id":2,"method":`, 400, -32700},
		{"unknown method", `{"jsonrpc":"2.0","id":3,"method":"tools/frobnicate","params":{}}`, 200, -32601},
		{"oversized", `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":"` + strings.Repeat("a", 5<<20) + `"}}`, 413, -32600},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.do(t, "POST", "/mcp", h, c.body)
			var m struct {
				Error struct{ Code int } `json:"error"`
			}
			if r.status != c.status || json.Unmarshal([]byte(r.body), &m) != nil || m.Error.Code != c.code {
				t.Fatalf("%d %s", r.status, r.body)
			}
		})
	}
	// The session still works.
	if r := s.do(t, "POST", "/mcp", h, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); r.status != 200 || !strings.Contains(r.body, `"id":9`) {
		t.Fatalf("ping after errors: %d %s", r.status, r.body)
	}
	// Without a token, only loopback Origins are served.
	if r := s.do(t, "GET", "/healthz", map[string]string{"Origin": "http://evil.example"}, ""); r.status != 403 {
		t.Fatalf("foreign origin on loopback: %d", r.status)
	}
}

// connectHTTP connects a go-sdk client over streamable HTTP with a bearer token.
func connectHTTP(t *testing.T, endpoint, token string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
