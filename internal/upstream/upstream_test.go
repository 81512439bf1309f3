//go:build unix

package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
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

// A schema whose keys are deliberately not in alphabetical order, at every level.
const orderedInput = `{"type":"object","properties":{"zeta":{"type":"string","description":"last letter"},"alpha":{"type":"number"},"mid":{"type":"object","properties":{"y":{"type":"boolean"},"b":{"type":"string"}}}},"required":["zeta","alpha"],"additionalProperties":false}`
const orderedOutput = `{"type":"object","properties":{"total":{"type":"integer"},"items":{"type":"array","items":{"type":"string"}}},"required":["total"]}`

func orderedServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "ordered"}, nil)
	s.AddTool(&mcp.Tool{Name: "search", Title: "Search things", Description: "Finds things.",
		InputSchema: json.RawMessage(orderedInput), OutputSchema: json.RawMessage(orderedOutput),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Zeta string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			switch in.Zeta {
			case "bad": // violates the output schema
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "bad"}},
					StructuredContent: json.RawMessage(`{"total":"many"}`)}, nil
			case "fail":
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "it failed"}}, IsError: true}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found 2"}},
				StructuredContent: json.RawMessage(`{"total":2,"items":["b","a"]}`)}, nil
		})
	s.AddTool(&mcp.Tool{Name: "plain", InputSchema: json.RawMessage(`{"type":"object","properties":{"b":{},"a":{}}}`),
		Annotations: &mcp.ToolAnnotations{Title: "Annotated title"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("plain"), nil
		})
	return s
}

func checkOrderedTools(t *testing.T, m *Manager, server string) {
	t.Helper()
	search := tool(t, m, server, "search")
	if string(search.InputSchema) != orderedInput {
		t.Errorf("input schema order lost:\n got %s\nwant %s", search.InputSchema, orderedInput)
	}
	if string(search.OutputSchema) != orderedOutput {
		t.Errorf("output schema order lost:\n got %s\nwant %s", search.OutputSchema, orderedOutput)
	}
	if search.Source != api.SourceMCP || search.Owner != server || search.ID() != "mcp:"+server+":search" {
		t.Errorf("identity: %s", search.ID())
	}
	if search.ReadOnly {
		t.Error("readOnlyHint must not make a tool ReadOnly")
	}
	if search.Label != "Search things" || search.Description != "Finds things." {
		t.Errorf("label %q description %q", search.Label, search.Description)
	}
	plain := tool(t, m, server, "plain")
	if plain.Label != "Annotated title" || string(plain.InputSchema) != `{"type":"object","properties":{"b":{},"a":{}}}` {
		t.Errorf("plain: label %q schema %s", plain.Label, plain.InputSchema)
	}
	res, err := call(t, search, `{"zeta":"ok","alpha":1}`)
	if err != nil {
		t.Fatal(err)
	}
	// The server's _meta (serverInfo under the 2026-07-28 protocol) may follow.
	if want := `{"content":[{"type":"text","text":"found 2"}],"structuredContent":{"total":2,"items":["b","a"]}`; !strings.HasPrefix(string(res.Details), want) {
		t.Errorf("details:\n got %s\nwant %s", res.Details, want)
	}
	if len(res.Content) != 1 || res.Content[0].Text != "found 2" || res.IsError {
		t.Errorf("result: %+v", res)
	}
	if _, err := call(t, search, `{"zeta":"bad","alpha":1}`); err == nil || !strings.Contains(err.Error(), "does not match the tool's outputSchema at /total") {
		t.Errorf("output schema mismatch: %v", err)
	}
	res, err = call(t, search, `{"zeta":"fail","alpha":1}`)
	if err != nil || !res.IsError || !strings.HasPrefix(string(res.Details), `{"content":[{"type":"text","text":"it failed"}],"isError":true`) {
		t.Errorf("isError result: %+v %v", res, err)
	}
}

func TestToolsKeepServerKeyOrder(t *testing.T) {
	t.Parallel()
	t.Run("in-memory", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.addInMemory("mem", orderedServer(), 0)
		m := f.startReady()
		checkOrderedTools(t, m, "mem")
	})
	for _, jsonResp := range []bool{false, true} {
		t.Run(fmt.Sprintf("http-json=%v", jsonResp), func(t *testing.T) {
			t.Parallel()
			hs := httpServer(t, orderedServer(), jsonResp, nil)
			f := newFixture(t)
			f.servers["web"] = config.MCPServer{URL: hs.URL, TimeoutMs: 10000}
			m := f.startReady()
			checkOrderedTools(t, m, "web")
		})
	}
}

func TestPagination(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "paged"}, &mcp.ServerOptions{PageSize: 2})
	var lists atomic.Int32
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	var want []string
	for i := range 5 {
		name := fmt.Sprintf("t%d", i)
		want = append(want, "mcp:paged:"+name)
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{},"a":{}}}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult(name), nil })
	}
	f := newFixture(t)
	f.addInMemory("paged", srv, 0)
	m := f.startReady()
	if got := toolIDs(m.Tools()); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("tools %v, want %v", got, want)
	}
	if n := lists.Load(); n != 3 {
		t.Errorf("tools/list requests: %d, want 3 pages", n)
	}
	for _, tl := range m.Tools() {
		if string(tl.InputSchema) != `{"type":"object","properties":{"q":{},"a":{}}}` {
			t.Errorf("%s schema %s", tl.Name, tl.InputSchema)
		}
	}
}

func TestListChangedRefreshes(t *testing.T) {
	t.Parallel()
	srv := orderedServer()
	f := newFixture(t)
	f.addInMemory("mem", srv, 0)
	m := f.startReady()
	if n := len(m.Tools()); n != 2 {
		t.Fatalf("tools: %d", n)
	}
	drain(m.Changed())
	srv.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object","properties":{"z":{},"a":{}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("late"), nil
		})
	select {
	case <-m.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("no Changed signal after tools/list_changed")
	}
	eventually(t, 10*time.Second, "the new tool", func() bool { return len(m.Tools()) == 3 })
	late := tool(t, m, "mem", "late")
	if string(late.InputSchema) != `{"type":"object","properties":{"z":{},"a":{}}}` {
		t.Errorf("schema %s", late.InputSchema)
	}
	if res, err := call(t, late, `{}`); err != nil || res.Content[0].Text != "late" {
		t.Errorf("call: %+v %v", res, err)
	}
	srv.RemoveTools("late", "plain")
	eventually(t, 10*time.Second, "removal", func() bool { return len(m.Tools()) == 1 })
}

// A server that floods notifications/tools/list_changed gets one tools/list per interval, and
// an unchanged listing changes nothing downstream (issue 18 item 7: a storm once caused 14,370
// refetches and 1.3 cores of load in 29 s).
func TestListChangedStormIsBounded(t *testing.T) {
	// Not parallel: it measures this process's CPU, which other tests running at the same time
	// would add to (0.9 cores in a full -race run); parallel tests wait while it runs.
	f := newFixture(t)
	f.opts.listInterval = 200 * time.Millisecond
	exe, _ := os.Executable()
	f.servers["storm"] = config.MCPServer{Command: exe, Env: map[string]string{"MCPUP_TEST_SERVER": "storm"}, TimeoutMs: 10000}
	m := f.startReady()
	drain(m.Changed())
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	const storm = 2 * time.Second
	start := time.Now()
	changed := 0
	for deadline := time.After(storm); ; {
		select {
		case <-m.Changed():
			changed++
			continue
		case <-deadline:
		}
		break
	}
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	lists := 0
	for _, l := range f.log.lines() {
		if strings.Contains(l, "tools/list ") {
			lists++
		}
	}
	elapsed := time.Since(start)
	t.Logf("storm of %v: %d tools/list (1 when connecting), %d Changed signals, this process used %v of CPU (%.2f cores)",
		elapsed.Round(time.Millisecond), lists, changed, cpu.Round(time.Millisecond), cpu.Seconds()/elapsed.Seconds())
	if limit := int(elapsed/f.opts.listInterval) + 3; lists > limit {
		t.Errorf("%d tools/list in %v, want at most %d", lists, elapsed, limit)
	}
	if lists < 2 {
		t.Errorf("only %d tools/list: the storm did not reach the refresh path", lists)
	}
	// A generous bound that an unbounded storm exceeds (it took all it could get: 1.2 cores
	// here), far above what the notification rate costs (0.1–0.2).
	if cores := cpu.Seconds() / elapsed.Seconds(); cores > 0.8 {
		t.Errorf("the storm cost %.2f cores", cores)
	}
	if changed != 0 {
		t.Errorf("%d Changed signals for an unchanged tool list", changed)
	}
	if st := statusOf(m, "storm"); st.State != StateReady || st.Tools != 1 {
		t.Errorf("status %+v", st)
	}
}

func drain(c <-chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func TestSlowToolTimesOut(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "slow"}, nil)
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Ms int }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(in.Ms) * time.Millisecond):
				return textResult("done"), nil
			}
		})
	f := newFixture(t)
	f.addInMemory("slow", srv, 300)
	m := f.startReady()
	slow := tool(t, m, "slow", "slow")
	start := time.Now()
	_, err := call(t, slow, `{"ms":10000}`)
	if err == nil || !strings.Contains(err.Error(), "MCP server slow: tool slow: timed out after 300ms") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the timeout took %v", d)
	}
	// The session survives a timeout.
	if res, err := call(t, slow, `{"ms":1}`); err != nil || res.Content[0].Text != "done" {
		t.Errorf("after timeout: %+v %v", res, err)
	}
	// The caller's own cancellation is reported as such.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := slow.Execute(ctx, &api.Call{Input: json.RawMessage(`{"ms":10000}`)}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
}

func TestUnreachableServerDoesNotAffectOthers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.addInMemory("good", orderedServer(), 0)
	f.servers["down"] = config.MCPServer{URL: "http://" + closedPort(t) + "/mcp", TimeoutMs: 2000}
	f.servers["off"] = config.MCPServer{URL: "http://" + closedPort(t) + "/mcp", Disabled: true}
	m := f.startReady()
	eventually(t, 5*time.Second, "down to fail", func() bool {
		st := statusOf(m, "down")
		return st.State == StateFailed && strings.Contains(st.LastError, "connect")
	})
	if st := statusOf(m, "good"); st.State != StateReady || st.Tools != 2 {
		t.Errorf("good: %+v", st)
	}
	if st := statusOf(m, "off"); st.State != StateStopped || st.Enabled {
		t.Errorf("off: %+v", st)
	}
	if ids := toolIDs(m.Tools()); len(ids) != 2 || !strings.HasPrefix(ids[0], "mcp:good:") {
		t.Errorf("tools: %v", ids)
	}
	if _, err := call(t, tool(t, m, "good", "plain"), `{}`); err != nil {
		t.Error(err)
	}
	// The supervisor keeps retrying: between attempts the server is failed, during one it is
	// connecting. Either is what the error says, with the last failure (asserting "failed" alone
	// broke on a loaded machine, where an attempt takes longer).
	if _, err := m.ListResources(context.Background(), "down"); err == nil ||
		!regexp.MustCompile(`^MCP server down is not connected \((failed|connecting); reconnecting\): .*connection refused`).MatchString(err.Error()) {
		t.Errorf("down: %v", err)
	}
	eventually(t, 5*time.Second, "retries", func() bool { return statusOf(m, "down").Restarts >= 2 })
}

func TestHTTPHeadersAndCall(t *testing.T) {
	t.Parallel()
	var seen atomic.Value
	hs := httpServer(t, orderedServer(), false, func(r *http.Request) {
		if r.Method == http.MethodPost {
			seen.Store(r.Header.Get("Authorization"))
		}
	})
	f := newFixture(t)
	f.servers["web"] = config.MCPServer{URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer t0ken"},
		TimeoutMs: 10000}
	m := f.startReady()
	if st := statusOf(m, "web"); st.State != StateReady {
		t.Fatalf("status %+v", st)
	}
	if v, _ := seen.Load().(string); v != "Bearer t0ken" {
		t.Errorf("Authorization header = %q", v)
	}
}

func TestHTTPServerGoesAway(t *testing.T) {
	t.Parallel()
	hs := httpServer(t, orderedServer(), true, nil)
	f := newFixture(t)
	f.servers["web"] = config.MCPServer{URL: hs.URL, TimeoutMs: 2000}
	m := f.startReady()
	plain := tool(t, m, "web", "plain")
	hs.CloseClientConnections()
	hs.Close()
	if _, err := call(t, plain, `{}`); err == nil || !strings.Contains(err.Error(), "MCP server web") {
		t.Fatalf("call to a dead server: %v", err)
	}
	eventually(t, 5*time.Second, "failed status", func() bool { return statusOf(m, "web").State == StateFailed })
	if _, err := call(t, plain, `{}`); err == nil || !strings.HasPrefix(err.Error(), "MCP server web is not connected (failed; reconnecting): ") {
		t.Errorf("fail fast: %v", err)
	}
}

func TestStdioCrashMidCallReconnects(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.servers["helper"] = helperConfig(t, nil)
	m := f.startReady()
	if st := statusOf(m, "helper"); st.State != StateReady {
		t.Fatalf("status %+v", st)
	}
	pid := helperPid(t, m)
	_, err := call(t, tool(t, m, "helper", "crash"), `{}`)
	if err == nil || !strings.Contains(err.Error(), "MCP server helper: tool crash:") {
		t.Fatalf("crash call: %v", err)
	}
	eventually(t, 10*time.Second, "reconnect", func() bool {
		st := statusOf(m, "helper")
		return st.State == StateReady && st.Restarts >= 1
	})
	if pid2 := helperPid(t, m); pid2 == pid {
		t.Errorf("same pid %d after restart", pid)
	}
	eventually(t, 5*time.Second, "old process gone", func() bool { return processGone(pid) })
	res, err := call(t, tool(t, m, "helper", "echo"), `{"b":1,"a":2}`)
	if err != nil || res.Content[0].Text != `{"b":1,"a":2}` {
		t.Errorf("echo after restart: %+v %v", res, err)
	}
	if !f.log.contains("crashing now") || !f.log.contains("helper started") {
		t.Errorf("stderr not logged: %q", f.log.lines())
	}
}

func helperPid(t testing.TB, m *Manager) int {
	t.Helper()
	res, err := call(t, tool(t, m, "helper", "pid"), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(res.Content[0].Text)
	return pid
}

func TestStderrLinesAreBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.servers["helper"] = helperConfig(t, map[string]string{"MCPUP_LONG_STDERR": "1"})
	m := f.startReady()
	m.Close()
	var long string
	for _, l := range f.log.lines() {
		if strings.Contains(l, "xxxx") {
			long = l
		}
	}
	if long == "" || len(long) > maxStderrLine+200 || !strings.Contains(long, "more bytes]") {
		t.Errorf("long line: %d bytes: %.200q", len(long), long)
	}
	if !f.log.contains("after the long line") {
		t.Error("the line after the long one was lost")
	}
}

// TestCloseLeavesNothing runs first among the sequential tests' peers: it counts goroutines.
func TestCloseLeavesNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	f := newFixture(t)
	f.servers["helper"] = helperConfig(t, nil)
	f.addInMemory("mem", orderedServer(), 0)
	hs := httpServer(t, orderedServer(), false, nil)
	f.servers["web"] = config.MCPServer{URL: hs.URL, TimeoutMs: 10000}
	m := f.startReady()
	for _, st := range m.Status() {
		if st.State != StateReady {
			t.Fatalf("%+v", st)
		}
	}
	pid := helperPid(t, m)
	res, err := call(t, tool(t, m, "helper", "spawn"), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	grandchild, _ := strconv.Atoi(res.Content[0].Text)
	if processGone(grandchild) {
		t.Fatal("grandchild not running")
	}
	start := time.Now()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close took %v", time.Since(start))
	if !processGone(pid) {
		t.Errorf("server process %d still running", pid)
	}
	eventually(t, 5*time.Second, "grandchild gone", func() bool { return processGone(grandchild) })
	for _, st := range m.Status() {
		if st.State != StateStopped {
			t.Errorf("after Close: %+v", st)
		}
	}
	if len(m.Tools()) != 0 {
		t.Error("tools after Close")
	}
	if _, err := call(t, tool2(m), `{}`); err == nil {
		t.Error("call after Close succeeded")
	}
	hs.Close()
	waitGoroutines(t, before)
}

func tool2(m *Manager) *api.Tool {
	s := m.byName["mem"]
	ct := &callTool{s: s, name: "plain"}
	return &api.Tool{Name: "plain", Execute: ct.execute}
}

func TestUntrustedMetadataIsBounded(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "hostile"}, nil)
	obj := json.RawMessage(`{"type":"object"}`)
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil }
	srv.AddTool(&mcp.Tool{Name: strings.Repeat("n", 129), InputSchema: obj}, ok)
	srv.AddTool(&mcp.Tool{Name: "has space", InputSchema: obj}, ok)
	srv.AddTool(&mcp.Tool{Name: "ctl\x01", InputSchema: obj}, ok)
	srv.AddTool(&mcp.Tool{Name: strings.Repeat("m", 128), InputSchema: obj, Description: strings.Repeat("é", 5000)}, ok)
	big := `{"type":"object","description":"` + strings.Repeat("d", 300<<10) + `"}`
	srv.AddTool(&mcp.Tool{Name: "bigschema", InputSchema: json.RawMessage(big)}, ok)
	srv.AddTool(&mcp.Tool{Name: "huge", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(strings.Repeat("h", 9<<20)), nil
	})
	f := newFixture(t)
	// A generous timeout: this test is about bounds, and a 9 MiB result under -race on a loaded
	// machine can take seconds to encode and decode.
	f.addInMemory("hostile", srv, 120000)
	m := f.startReady()
	names := map[string]*api.Tool{}
	for _, tl := range m.Tools() {
		names[tl.Name] = tl
	}
	if len(names) != 3 || names["bigschema"] == nil || names["huge"] == nil || names[strings.Repeat("m", 128)] == nil {
		t.Fatalf("tools: %v", toolIDs(m.Tools()))
	}
	if d := names[strings.Repeat("m", 128)].Description; len(d) > maxDescBytes || len(d) < maxDescBytes-1 || !strings.HasPrefix(d, "é") {
		t.Errorf("description: %d bytes", len(d))
	}
	if s := names["bigschema"].InputSchema; s != nil {
		t.Errorf("oversized schema kept: %d bytes", len(s))
	}
	if _, err := call(t, names["huge"], `{}`); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("huge result: %v", err)
	}
	if _, err := call(t, names["bigschema"], `[1]`); err == nil || !strings.Contains(err.Error(), "must be a JSON object") {
		t.Errorf("array input: %v", err)
	}
	if res, err := call(t, names["bigschema"], ``); err != nil || res.Content[0].Text != "ok" {
		t.Errorf("after huge result: %+v %v", res, err)
	}
	if !f.log.contains("has space") {
		t.Error("skipped tool not logged")
	}
}

// A tool whose definition we refuse is skipped with a warning; the server and its other tools
// stay (issue 18 item 7: a 300-level schema used to fail the whole tools/list at the stdio
// filter, and the server restarted with backoff).
func TestBadToolDroppedNotServer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.servers["helper"] = helperConfig(t, map[string]string{"MCPUP_BAD_TOOLS": "1"})
	m := f.startReady()
	if st := statusOf(m, "helper"); st.State != StateReady {
		t.Fatalf("status %+v", st)
	}
	names := map[string]bool{}
	for _, tl := range m.Tools() {
		names[tl.Name] = true
	}
	for _, bad := range []string{"deep_input", "deep_output", "output_over_64", "anchored_output", "invalid_output"} {
		if names[bad] {
			t.Errorf("%s was kept", bad)
		}
		if !f.log.contains(bad) {
			t.Errorf("%s skipped without a warning", bad)
		}
	}
	if !names["pid"] || !names["echo"] || !names["input_over_64"] {
		t.Fatalf("good tools missing: %v", toolIDs(m.Tools()))
	}
	if res, err := call(t, tool(t, m, "helper", "echo"), `{"x":1}`); err != nil || res.Content[0].Text != `{"x":1}` {
		t.Fatalf("%+v %v", res, err)
	}
	for _, want := range []string{"inputSchema is nested deeper than 256 levels", "nested deeper than 64 levels", "not supported", "is invalid"} {
		if !f.log.contains(want) {
			t.Errorf("no warning says %q:\n%s", want, strings.Join(f.log.lines(), "\n"))
		}
	}
}

func TestToolCountIsCapped(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "many"}, nil)
	for i := range maxToolsPerServer + 5 {
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%04d", i), InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult(""), nil })
	}
	f := newFixture(t)
	f.addInMemory("many", srv, 0)
	m := f.startReady()
	if n := len(m.Tools()); n != maxToolsPerServer {
		t.Errorf("tools: %d", n)
	}
}

func TestResourcesAndPrompts(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "rp"}, nil)
	srv.AddResource(&mcp.Resource{URI: "mem://notes/1", Name: "note1", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "hello"}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "greeting", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "hi " + req.Params.Arguments["who"]}}}}, nil
		})
	f := newFixture(t)
	f.addInMemory("rp", srv, 0)
	m := f.startReady()
	ctx := context.Background()
	// The codemode.Resources interface (not imported: the root package will import this one).
	var r interface {
		ListResources(ctx context.Context, server string) (json.RawMessage, error)
		ReadResource(ctx context.Context, server, uri string) (json.RawMessage, error)
		ListPrompts(ctx context.Context, server string) (json.RawMessage, error)
		GetPrompt(ctx context.Context, server, name string, args json.RawMessage) (json.RawMessage, error)
	} = m
	got, err := r.ListResources(ctx, "rp")
	if err != nil || !bytes.Contains(got, []byte(`"uri":"mem://notes/1"`)) || !bytes.HasPrefix(got, []byte(`{"resources":[`)) {
		t.Errorf("ListResources: %s %v", got, err)
	}
	got, err = m.ReadResource(ctx, "rp", "mem://notes/1")
	if err != nil || !bytes.Contains(got, []byte(`"text":"hello"`)) {
		t.Errorf("ReadResource: %s %v", got, err)
	}
	if _, err := m.ReadResource(ctx, "rp", "mem://nope"); err == nil || !strings.HasPrefix(err.Error(), "MCP server rp: resources/read: ") {
		t.Errorf("missing resource: %v", err)
	}
	got, err = m.ListPrompts(ctx, "rp")
	if err != nil || !bytes.Contains(got, []byte(`"name":"greet"`)) {
		t.Errorf("ListPrompts: %s %v", got, err)
	}
	got, err = m.GetPrompt(ctx, "rp", "greet", json.RawMessage(`{"who":"bob"}`))
	if err != nil || !bytes.Contains(got, []byte(`hi bob`)) {
		t.Errorf("GetPrompt: %s %v", got, err)
	}
	if _, err := m.GetPrompt(ctx, "rp", "greet", json.RawMessage(`{"who":1}`)); err == nil {
		t.Error("non-string prompt argument accepted")
	}
	if _, err := m.ListPrompts(ctx, "nosuch"); err == nil || !strings.Contains(err.Error(), `unknown MCP server "nosuch"`) {
		t.Errorf("unknown server: %v", err)
	}
}

// npmDir is where `make testdeps` installs the npm MCP servers (MCPUP_NPM_DIR overrides).
func npmEverything(t *testing.T) string {
	dir := os.Getenv("MCPUP_NPM_DIR")
	if dir == "" {
		dir = "../../.cache/npm"
	}
	entry := dir + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
	if _, err := os.Stat(entry); err != nil {
		t.Skipf("server-everything not installed (make testdeps): %v", err)
	}
	if _, err := execLookPath("node"); err != nil {
		t.Skip("node not found")
	}
	return entry
}

func TestNPMServerEverythingStdio(t *testing.T) {
	t.Parallel()
	entry := npmEverything(t)
	f := newFixture(t)
	f.servers["everything"] = config.MCPServer{Command: "node", Args: []string{entry, "stdio"}, TimeoutMs: 20000}
	m := f.startReady()
	checkEverything(t, m)
}

func TestNPMServerEverythingHTTP(t *testing.T) {
	t.Parallel()
	entry := npmEverything(t)
	port := closedPort(t)[len("127.0.0.1:"):]
	stop := startNode(t, entry, port)
	defer stop()
	f := newFixture(t)
	f.servers["everything"] = config.MCPServer{URL: "http://127.0.0.1:" + port + "/mcp", TimeoutMs: 20000}
	m := f.startReady()
	checkEverything(t, m)
	m.Close()
}

func checkEverything(t *testing.T, m *Manager) {
	t.Helper()
	if st := statusOf(m, "everything"); st.State != StateReady {
		t.Fatalf("status %+v", st)
	}
	echo := tool(t, m, "everything", "echo")
	if !bytes.Contains(echo.InputSchema, []byte(`"message"`)) {
		t.Errorf("echo schema %s", echo.InputSchema)
	}
	res, err := call(t, echo, `{"message":"hi there"}`)
	if err != nil || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "hi there") {
		t.Fatalf("echo: %+v %v", res, err)
	}
	if got, err := m.ListResources(context.Background(), "everything"); err != nil || !bytes.Contains(got, []byte(`"uri"`)) {
		t.Errorf("resources: %.200s %v", got, err)
	}
	t.Logf("%d tools; echo → %s", len(m.Tools()), res.Details)
}

// TestServerDiesWithGateway kills a gateway (a child running a Manager) with SIGKILL: its stdio
// server, in a process group of its own, must die too (Pdeathsig).
func TestServerDiesWithGateway(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux-only")
	}
	t.Parallel()
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "MCPUP_TEST_SERVER=manager", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid == 0 {
		t.Fatalf("no server pid from the gateway: %q %v", line, err)
	}
	if processGone(pid) {
		t.Fatal("server not running")
	}
	_ = cmd.Process.Kill()
	eventually(t, 5*time.Second, "the server to die with the gateway", func() bool { return processGone(pid) })
}

func TestListChangedOverLegacyHTTP(t *testing.T) {
	t.Parallel()
	// A server that only speaks 2025-11-25 makes the SDK fall back to initialize, and
	// notifications then arrive on the standalone SSE stream, which only works because the
	// streamable connection is not wrapped (see capture.go).
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(&mcp.Tool{Name: "first", InputSchema: json.RawMessage(`{"type":"object","properties":{"z":{},"a":{}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("1"), nil })
	hs := httpServer(t, srv, false, nil)
	f := newFixture(t)
	f.servers["legacy"] = config.MCPServer{URL: hs.URL, TimeoutMs: 10000}
	m := f.startReady()
	if s := tool(t, m, "legacy", "first").InputSchema; string(s) != `{"type":"object","properties":{"z":{},"a":{}}}` {
		t.Errorf("schema %s", s)
	}
	srv.AddTool(&mcp.Tool{Name: "second", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("2"), nil })
	eventually(t, 10*time.Second, "the new tool over SSE", func() bool { return len(m.Tools()) == 2 })
	if res, err := call(t, tool(t, m, "legacy", "second"), `{}`); err != nil || res.Content[0].Text != "2" {
		t.Errorf("call: %+v %v", res, err)
	}
	m.Close()
}

// TestHammer calls tools from many goroutines while the tool list churns and Status/Tools are
// read, under the race detector.
func TestHammer(t *testing.T) {
	t.Parallel()
	srv := orderedServer()
	f := newFixture(t)
	f.addInMemory("mem", srv, 0)
	m := f.startReady()
	plain := tool(t, m, "mem", "plain")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var failures atomic.Int32
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if _, err := call(t, plain, `{}`); err != nil {
					failures.Add(1)
				}
				_ = m.Tools()
				_ = m.Status()
			}
		})
	}
	var churn sync.WaitGroup
	churn.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			name := fmt.Sprintf("churn%d", i%3)
			srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult(""), nil })
			srv.RemoveTools(name)
			time.Sleep(time.Millisecond)
		}
	})
	wg.Wait()
	cancel()
	churn.Wait()
	if n := failures.Load(); n != 0 {
		t.Errorf("%d calls failed", n)
	}
}
