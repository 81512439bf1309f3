package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The multi-tenant gateway against the real binary (issue 19): both protocol generations on one
// port, token principals with their own tools and runs, real clients of either generation (go-sdk
// v1.8.0's default, the TypeScript SDK 1.x, MCP Inspector's one-shot --cli), and the listener's
// connection bounds (issue 18 item 2).

const (
	e2eAlice = "alice-e2e-token-0123456789abcdef"
	e2eBob   = "bob-e2e-token-0123456789abcdef01"
)

// startGateway serves two principals: alice with every tool, bob without the file tools.
func startGateway(t *testing.T) *served {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "codemode.json5")
	cfg := `{tools: {codeMode: true}, serve: {principals: [
		{name: "alice", token: {env: "E2E_ALICE"}},
		{name: "bob", token: {env: "E2E_BOB"}, tools: {deny: ["native:core:read", "native:core:list", "native:core:find", "native:core:grep"]}},
	]}}`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return startServe(t, []string{"E2E_ALICE=" + e2eAlice, "E2E_BOB=" + e2eBob}, "--http", "127.0.0.1:0", "--config", cfgPath)
}

func e2eClient(t *testing.T, endpoint, token, version string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func e2eExec(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) api.ExecResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	var r api.ExecResult
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGatewayGenerationsAndPrincipals(t *testing.T) {
	s := startGateway(t)
	url := s.base + "/mcp"

	// go-sdk v1.8.0 with its defaults negotiates the sessionless protocol.
	a := e2eClient(t, url, e2eAlice, "")
	if v := a.InitializeResult().ProtocolVersion; v != "2026-07-28" || a.ID() != "" {
		t.Fatalf("negotiated %q, session %q", v, a.ID())
	}
	r := e2eExec(t, a, "exec", map[string]any{"code": `await yield_control(); return "from a fresh connection"`})
	if r.Status != api.StatusWaiting {
		t.Fatalf("%+v", r)
	}
	if w := e2eExec(t, e2eClient(t, url, e2eAlice, ""), "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusCompleted {
		t.Fatalf("wait on a fresh stateless connection: %+v", w)
	}

	// A session-protocol client on the same port, same principal: it continues a run too.
	sess := e2eClient(t, url, e2eAlice, "2025-11-25")
	if sess.ID() == "" {
		t.Fatal("no session")
	}
	r = e2eExec(t, a, "exec", map[string]any{"code": `await yield_control(); return 1`})
	if w := e2eExec(t, sess, "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusCompleted {
		t.Fatalf("%+v", w)
	}

	// Two principals see different tools and cannot wait on each other's runs.
	bob := e2eClient(t, url, e2eBob, "")
	names := `return ALL_TOOLS.map(t => t.name).filter(n => n === "read" || n === "web_fetch").sort()`
	if ra, rb := e2eExec(t, a, "exec", map[string]any{"code": names}), e2eExec(t, bob, "exec", map[string]any{"code": names}); string(ra.Value) != `["read","web_fetch"]` || string(rb.Value) != `["web_fetch"]` {
		t.Fatalf("alice %s, bob %s", ra.Value, rb.Value)
	}
	r = e2eExec(t, a, "exec", map[string]any{"code": `await yield_control(); return "alice's"`})
	if w := e2eExec(t, bob, "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusFailed || !strings.Contains(w.Error, "different session") {
		t.Fatalf("bob waited on alice's run: %+v", w)
	}

	// The TypeScript SDK (1.32, session protocol only): exec in one process, wait in another.
	runID := tsClient(t, url, e2eAlice, "exec", `{"code":"await yield_control(); return 'ts'"}`, `"status":"waiting"`)
	var rid struct {
		RunID string `json:"runId"`
	}
	_ = json.Unmarshal([]byte(runID), &rid)
	tsClient(t, url, e2eAlice, "wait", `{"runId":"`+rid.RunID+`"}`, `"status":"completed","value":"ts"`)
}

// tsClient runs a TypeScript SDK client process that calls one tool and prints its text.
func tsClient(t *testing.T, url, token, tool, args, want string) string {
	t.Helper()
	node, _ := conformanceSuite(t) // Node 22 and .cache/npm, or skip
	sdk, _ := filepath.Abs(filepath.Join("..", "..", ".cache", "npm", "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "client"))
	if _, err := os.Stat(sdk); err != nil {
		t.Skipf("the TypeScript SDK is not in .cache/npm: %v", err)
	}
	script := fmt.Sprintf(`
import { Client } from %q;
import { StreamableHTTPClientTransport } from %q;
const transport = new StreamableHTTPClientTransport(new URL(%q), { requestInit: { headers: { Authorization: "Bearer " + %q } } });
const client = new Client({ name: "ts-e2e", version: "1" });
await client.connect(transport);
const res = await client.callTool({ name: %q, arguments: %s });
console.log(res.content[0].text);
await client.close();
`, filepath.Join(sdk, "index.js"), filepath.Join(sdk, "streamableHttp.js"), url, token, tool, args)
	path := filepath.Join(t.TempDir(), "client.mjs")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), want) {
		t.Fatalf("TypeScript client %s: %v\n%s", tool, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestGatewayInspectorOneShot: MCP Inspector's --cli opens a session per call and never ends
// it; with a conversation key in the URL its exec and a later wait meet.
func TestGatewayInspectorOneShot(t *testing.T) {
	root, _ := filepath.Abs(filepath.Join("..", "..", ".cache", "inspector", "node_modules", "@modelcontextprotocol", "inspector-cli", "build", "index.js"))
	if _, err := os.Stat(root); err != nil {
		t.Skipf("MCP Inspector is not installed (make testdeps): %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	s := startServe(t, nil, "--http", "127.0.0.1:0")
	url := s.base + "/mcp?conversation=inspector"
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, node, append([]string{root, url, "--method", "tools/call"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := run("--tool-name", "exec", "--tool-arg", "code=await yield_control(); return 42")
	i := strings.Index(out, "run_")
	if i < 0 {
		t.Fatalf("no runId: %s", out)
	}
	runID := out[i : i+4+26]
	if out := run("--tool-name", "wait", "--tool-arg", "runId="+runID); !strings.Contains(out, `\"status\":\"completed\",\"value\":42`) {
		t.Fatalf("wait from a second one-shot call: %s", out)
	}
}

// TestGatewaySlowBodies: 2,000 unauthenticated POSTs whose bodies never come are refused at
// once and hold no file descriptor; an authenticated client is served within a second while
// they are open (issue 18 item 2).
func TestGatewaySlowBodies(t *testing.T) {
	s := startGateway(t)
	addr := strings.TrimPrefix(s.base, "http://")
	url := s.base + "/mcp"
	cs := e2eClient(t, url, e2eAlice, "")
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for range 2000 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return // refused past the per-client cap: fine
			}
			_, _ = fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n{", addr)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	start := time.Now()
	r := e2eExec(t, cs, "exec", map[string]any{"code": `return "served"`})
	if d := time.Since(start); r.Status != api.StatusCompleted || d > time.Second {
		t.Fatalf("an authenticated exec took %v: %+v", d, r)
	}
	// The server holds none of them: its descriptors are back near where a quiet server is.
	fds := func() int {
		ents, _ := os.ReadDir("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/fd")
		return len(ents)
	}
	deadline := time.Now().Add(10 * time.Second)
	for fds() > 100 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := fds(); n > 100 {
		t.Fatalf("the server holds %d descriptors with 2,000 slow unauthenticated bodies open", n)
	}
	t.Logf("%d slow connections open on the client side; the server holds %d descriptors", len(conns), fds())
}

// TestGatewayAffinityHaproxy: the documented haproxy recipe (examples/haproxy-affinity.cfg, as
// shipped) in front of two replicas without a shared store. Session clients stay on their
// replica — exec → waiting, then wait on the same session completes, for each of 12 clients —
// and sessionless clients are balanced (issue 19 item 7).
func TestGatewayAffinityHaproxy(t *testing.T) {
	hap, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy is not installed (Debian package haproxy)")
	}
	r1 := startServe(t, nil, "--http", "127.0.0.1:0")
	r2 := startServe(t, nil, "--http", "127.0.0.1:0")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := ln.Addr().String()
	ln.Close()
	cfg, _ := filepath.Abs(filepath.Join("..", "..", "examples", "haproxy-affinity.cfg"))
	cmd := exec.Command(hap, "-f", cfg, "-db")
	cmd.Env = append(os.Environ(), "CODEMODE_LISTEN="+front,
		"CODEMODE_R1="+strings.TrimPrefix(r1.base, "http://"), "CODEMODE_R2="+strings.TrimPrefix(r2.base, "http://"))
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + front + "/mcp"
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", front)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy did not start: %s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := range 12 {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "affinity", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("session client %d: %v", i, err)
		}
		r := e2eExec(t, cs, "exec", map[string]any{"code": `await yield_control(); return "same replica"`})
		if r.Status != api.StatusWaiting {
			t.Fatalf("%+v", r)
		}
		if w := e2eExec(t, cs, "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusCompleted {
			t.Fatalf("session client %d lost its replica: %+v", i, w)
		}
		cs.Close()
	}
	for i := range 6 {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "any", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatalf("stateless client %d: %v", i, err)
		}
		if r := e2eExec(t, cs, "exec", map[string]any{"code": `return 1`}); r.Status != api.StatusCompleted {
			t.Fatalf("%+v", r)
		}
		cs.Close()
	}
	// Both replicas served: the balancer spread the clients.
	for _, r := range []*served{r1, r2} {
		m := r.do(t, "GET", "/metrics", nil, "")
		if !strings.Contains(m.body, `codemode_calls_total{call="exec"`) {
			t.Fatalf("replica %s served no exec", r.base)
		}
	}
}

// TestGatewayAffinityNginx: the documented nginx recipe (examples/nginx-affinity.conf with this
// test's addresses put in) in front of two replicas: session clients keep their replica,
// sessionless clients are served by either (issue 19 item 7).
func TestGatewayAffinityNginx(t *testing.T) {
	ngx, err := exec.LookPath("nginx")
	if err != nil {
		if _, err := os.Stat("/usr/sbin/nginx"); err != nil {
			t.Skip("nginx is not installed (Debian package nginx)")
		}
		ngx = "/usr/sbin/nginx"
	}
	r1 := startServe(t, nil, "--http", "127.0.0.1:0")
	r2 := startServe(t, nil, "--http", "127.0.0.1:0")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := ln.Addr().String()
	ln.Close()
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "nginx-affinity.conf"))
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.NewReplacer("127.0.0.1:8700", front, "127.0.0.1:8701", strings.TrimPrefix(r1.base, "http://"),
		"127.0.0.1:8702", strings.TrimPrefix(r2.base, "http://")).Replace(string(src))
	prefix := t.TempDir()
	path := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// One process (no master and workers) so that killing it ends nginx.
	cmd := exec.Command(ngx, "-p", prefix, "-c", path, "-g", "daemon off; master_process off;")
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", front)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx did not start: %s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	url := "http://" + front + "/mcp"
	for i := range 6 {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "affinity", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("session client %d: %v\n%s", i, err, out.String())
		}
		r := e2eExec(t, cs, "exec", map[string]any{"code": `await yield_control(); return "same replica"`})
		if w := e2eExec(t, cs, "wait", map[string]any{"runId": r.RunID}); r.Status != api.StatusWaiting || w.Status != api.StatusCompleted {
			t.Fatalf("session client %d: %+v then %+v", i, r, w)
		}
		cs.Close()
	}
	for i := range 6 {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "any", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatalf("stateless client %d: %v", i, err)
		}
		for range 2 { // discover and two execs: round robin puts execs on both replicas
			if r := e2eExec(t, cs, "exec", map[string]any{"code": `return 1`}); r.Status != api.StatusCompleted {
				t.Fatalf("%+v", r)
			}
		}
		cs.Close()
	}
	for _, r := range []*served{r1, r2} {
		if m := r.do(t, "GET", "/metrics", nil, ""); !strings.Contains(m.body, `codemode_calls_total{call="exec"`) {
			t.Fatalf("replica %s served no exec: the sessionless pool was not balanced", r.base)
		}
	}
}
