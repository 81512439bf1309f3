//go:build unix

package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as a stdio MCP server (and as a grandchild that just sleeps) when
// re-executed with MCPUP_TEST_SERVER set: the usual Go trick, no separate build step.
func TestMain(m *testing.M) {
	switch os.Getenv("MCPUP_TEST_SERVER") {
	case "":
		os.Exit(m.Run())
	case "stdio":
		helperServer()
		os.Exit(0)
	case "sleep":
		time.Sleep(time.Hour)
		os.Exit(0)
	case "storm":
		stormServer()
		os.Exit(0)
	case "manager":
		helperManager()
		os.Exit(0)
	default:
		os.Exit(2)
	}
}

func helperServer() {
	fmt.Fprintln(os.Stderr, "helper started")
	if os.Getenv("MCPUP_LONG_STDERR") != "" {
		fmt.Fprintln(os.Stderr, strings.Repeat("x", 100_000))
		fmt.Fprintln(os.Stderr, "after the long line")
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "helper"}, nil)
	obj := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(string(req.Params.Arguments)), nil
	})
	s.AddTool(&mcp.Tool{Name: "crash", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "crashing now")
		os.Exit(3)
		return nil, nil
	})
	s.AddTool(&mcp.Tool{Name: "oversized", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(strings.Repeat("x", 17<<20)), nil // one line over the SDK's 16 MiB
	})
	s.AddTool(&mcp.Tool{Name: "deep", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: json.RawMessage(`{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`)}, nil
	})
	if os.Getenv("MCPUP_BAD_TOOLS") != "" { // issue 18 item 7: definitions we refuse
		deep := func(n int) json.RawMessage {
			return json.RawMessage(`{"type":"object","properties":{"a":` + strings.Repeat(`{"items":`, n) + `{}` + strings.Repeat(`}`, n) + `}}`)
		}
		noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("bad"), nil
		}
		s.AddTool(&mcp.Tool{Name: "deep_input", InputSchema: deep(300)}, noop)
		s.AddTool(&mcp.Tool{Name: "deep_output", InputSchema: obj, OutputSchema: deep(300)}, noop)
		s.AddTool(&mcp.Tool{Name: "output_over_64", InputSchema: obj, OutputSchema: deep(100)}, noop)
		s.AddTool(&mcp.Tool{Name: "anchored_output", InputSchema: obj,
			OutputSchema: json.RawMessage(`{"type":"object","$defs":{"a":{"$anchor":"a"}},"properties":{"x":{"$ref":"#a"}}}`)}, noop)
		s.AddTool(&mcp.Tool{Name: "invalid_output", InputSchema: obj,
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"minimum":"zero"}}}`)}, noop)
		s.AddTool(&mcp.Tool{Name: "input_over_64", InputSchema: deep(100)}, noop) // kept: not checked, not hinted deep
	}
	s.AddTool(&mcp.Tool{Name: "pid", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(strconv.Itoa(os.Getpid())), nil
	})
	s.AddTool(&mcp.Tool{Name: "spawn", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		exe, _ := os.Executable()
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "MCPUP_TEST_SERVER=sleep")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return textResult(strconv.Itoa(cmd.Process.Pid)), nil
	})
	// Not mcp.StdioTransport: it reads os.Stdin with blocking read(2), and with Go 1.26.8 we saw
	// a server leave a received request unscheduled for seconds about once in 10⁵–10⁶ calls
	// (the reader goroutine runnable, an M idle, another M blocked in read(0)). Reading stdin
	// through the netpoller made 1.75M calls clean. Servers are the other side's business;
	// this keeps the fixture deterministic.
	_ = syscall.SetNonblock(0, true)
	_ = s.Run(context.Background(), &mcp.IOTransport{Reader: os.NewFile(0, "stdin"), Writer: os.Stdout})
}

// helperManager runs a Manager with one helper server, prints the server's pid and waits to be
// killed (TestServerDiesWithGateway).
// stormServer is a hostile stdio MCP server written without the SDK: once initialized it sends
// notifications/tools/list_changed as fast as it can write, and says on stderr how many
// tools/list requests it answered (issue 18 item 7).
func stormServer() {
	var mu sync.Mutex
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	send := func(b []byte) {
		mu.Lock()
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
		mu.Unlock()
	}
	var lists atomic.Int64
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			continue
		}
		var result string
		switch req.Method {
		case "initialize":
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"storm","version":"1"}}`, req.Params.ProtocolVersion)
		case "tools/list":
			n := lists.Add(1)
			fmt.Fprintf(os.Stderr, "tools/list %d\n", n)
			result = `{"tools":[{"name":"calm","inputSchema":{"type":"object"}}]}`
		case "notifications/initialized":
			go func() {
				note := []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
				for {
					send(note)
				}
			}()
			continue
		default:
			result = `{}`
		}
		if len(req.ID) > 0 {
			send([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`))
		}
	}
}

func helperManager() {
	exe, _ := os.Executable()
	cfg := &config.Config{MCP: config.MCP{Servers: map[string]config.MCPServer{"helper": {
		Command: exe, Env: map[string]string{"MCPUP_TEST_SERVER": "stdio", "GORACE": "atexit_sleep_ms=0"},
		TimeoutMs: 10000}}}}
	m := New(context.Background(), cfg, nil)
	_ = m.WaitReady(context.Background())
	for _, t := range m.Tools() {
		if t.Name == "pid" {
			res, err := t.Execute(context.Background(), &api.Call{Input: json.RawMessage(`{}`)})
			if err == nil {
				fmt.Println(res.Content[0].Text)
			}
		}
	}
	time.Sleep(time.Hour)
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// helperConfig is a stdio server running this test binary.
func helperConfig(t testing.TB, env map[string]string) config.MCPServer {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{"MCPUP_TEST_SERVER": "stdio", "GORACE": "atexit_sleep_ms=0"}
	for k, v := range env {
		e[k] = v
	}
	return config.MCPServer{Command: exe, Env: e, TimeoutMs: 10000}
}

// recorder is a slog.Handler that keeps records for assertions.
type recorder struct {
	mu   sync.Mutex
	recs []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrRecorder{r: r, attrs: as}
}
func (r *recorder) WithGroup(string) slog.Handler { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	return (&attrRecorder{r: r}).Handle(context.Background(), rec)
}

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.recs...)
}

func (r *recorder) contains(sub string) bool {
	for _, l := range r.lines() {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

type attrRecorder struct {
	r     *recorder
	attrs []slog.Attr
}

func (a *attrRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (a *attrRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrRecorder{r: a.r, attrs: append(append([]slog.Attr(nil), a.attrs...), as...)}
}
func (a *attrRecorder) WithGroup(string) slog.Handler { return a }
func (a *attrRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	for _, at := range a.attrs {
		b.WriteString(" " + at.String())
	}
	rec.Attrs(func(at slog.Attr) bool {
		b.WriteString(" " + at.String())
		return true
	})
	a.r.mu.Lock()
	a.r.recs = append(a.r.recs, b.String())
	a.r.mu.Unlock()
	return nil
}

// fixture builds managers over in-memory and real transports.
type fixture struct {
	t       testing.TB
	servers map[string]config.MCPServer
	inmem   map[string]*mcp.Server
	log     *recorder
	opts    options
}

func newFixture(t testing.TB) *fixture {
	return &fixture{t: t, servers: map[string]config.MCPServer{}, inmem: map[string]*mcp.Server{},
		log: &recorder{}, opts: options{backoffMin: 20 * time.Millisecond, backoffMax: 200 * time.Millisecond,
			terminateGrace: 500 * time.Millisecond}}
}

// addInMemory serves srv to the manager over in-memory pipes (a new session per connection).
func (f *fixture) addInMemory(name string, srv *mcp.Server, timeoutMs int) {
	if timeoutMs == 0 {
		timeoutMs = 10000
	}
	f.inmem[name] = srv
	f.servers[name] = config.MCPServer{Command: "in-memory", TimeoutMs: timeoutMs}
}

func (f *fixture) start() *Manager {
	f.opts.dial = func(ctx context.Context, name string, _ config.MCPServer) (mcp.Transport, error) {
		srv := f.inmem[name]
		if srv == nil {
			return nil, nil
		}
		st, ct := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	cfg := &config.Config{MCP: config.MCP{Servers: f.servers}}
	m := newManager(context.Background(), cfg, slog.New(f.log), f.opts)
	f.t.Cleanup(func() { m.Close() })
	return m
}

func (f *fixture) startReady() *Manager {
	m := f.start()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.WaitReady(ctx); err != nil {
		f.t.Fatal(err)
	}
	return m
}

// httpServer serves srv over streamable HTTP.
func httpServer(t testing.TB, srv *mcp.Server, jsonResponse bool, check func(*http.Request)) *httptest.Server {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if check != nil {
			check(r)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

func tool(t testing.TB, m *Manager, server, name string) *api.Tool {
	t.Helper()
	for _, tl := range m.Tools() {
		if tl.Owner == server && tl.Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s/%s in %v", server, name, toolIDs(m.Tools()))
	return nil
}

func toolIDs(ts []*api.Tool) []string {
	var ids []string
	for _, t := range ts {
		ids = append(ids, t.ID())
	}
	return ids
}

func call(t testing.TB, tl *api.Tool, input string) (*api.Result, error) {
	t.Helper()
	return tl.Execute(context.Background(), &api.Call{ToolID: tl.ID(), Input: json.RawMessage(input)})
}

func statusOf(m *Manager, name string) ServerStatus {
	for _, st := range m.Status() {
		if st.Name == name {
			return st
		}
	}
	return ServerStatus{}
}

// eventually polls cond for up to d.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processGone reports whether pid no longer runs (a zombie left to an init that does not reap
// counts as gone).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// waitGoroutines waits for the goroutine count to drop to n, dumping stacks if it does not.
func waitGoroutines(t testing.TB, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines: %d, want ≤ %d\n%s", runtime.NumGoroutine(), n, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var execLookPath = exec.LookPath

// startNode runs server-everything in streamable HTTP mode on port and waits until it listens.
func startNode(t *testing.T, entry, port string) (stop func()) {
	t.Helper()
	cmd := exec.Command("node", entry, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err == nil {
			c.Close()
			return stop
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("server-everything did not listen on %s: %v", port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
