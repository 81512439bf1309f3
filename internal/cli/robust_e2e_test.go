package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/trajectory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// execResult calls exec over an MCP session and decodes the CodeModeResult.
func execResult(t *testing.T, cs *mcp.ClientSession, args map[string]any) api.ExecResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	// The CodeModeResult is the structured content; the text block may be wrapped in an
	// untrusted-content marking (a cell that read MCP output).
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil || res.StructuredContent == nil {
		raw = []byte(res.Content[0].(*mcp.TextContent).Text)
	}
	var r api.ExecResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return r
}

// What one client sends cannot take `codemode serve` down (issue 18): the 260,000-deep
// TypeScript cell that ended the process in esbuild's parser is invalid_input and the next
// request is served, over HTTP and over stdio; a cell that floods the audit log leaves it
// within the configured cap, which the log says.
func TestServeSurvivesHostileCells(t *testing.T) {
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.jsonl")
	cfg := filepath.Join(dir, "codemode.json5")
	if err := os.WriteFile(cfg, []byte(`{
		workspace: "`+dir+`",
		tools: {codeMode: true},
		serve: {trajectory: {path: "`+audit+`", maxBytes: 1048576, maxFiles: 1, maxEventsPerCall: 200}},
	}`), 0o600); err != nil {
		t.Fatal(err)
	}
	deep := map[string]any{"language": "typescript", "code": "return " + strings.Repeat("(", 260000) + "1" + strings.Repeat(")", 260000)}
	brackets := map[string]any{"language": "typescript", "code": "return " + strings.Repeat("[", 260000) + "1" + strings.Repeat("]", 260000)}
	check := func(t *testing.T, cs *mcp.ClientSession) {
		for _, args := range []map[string]any{deep, brackets} {
			if r := execResult(t, cs, args); r.Status != api.StatusFailed || r.Code != api.CodeInvalidInput ||
				!strings.Contains(r.Error, "deeper than 4096 levels") {
				t.Fatalf("%s %s %q", r.Status, r.Code, r.Error)
			}
		}
		if r := execResult(t, cs, map[string]any{"language": "typescript", "code": "const n: number = 6; return n * 7"}); r.Status != api.StatusCompleted || string(r.Value) != "42" {
			t.Fatalf("the next request: %+v", r)
		}
	}

	t.Run("http", func(t *testing.T) {
		s := startServe(t, nil, "--http", "127.0.0.1:0", "--config", cfg)
		cs := connectHTTP(t, s.base+"/mcp", "")
		check(t, cs)
		// A loop of failing nested calls: 2,000 events, of which 200 are kept.
		r := execResult(t, cs, map[string]any{"code": `let n = 0
			for (let i = 0; i < 2000; i++) { try { await tools.read({path: "missing-" + i}) } catch (e) { n++ } }
			return n`})
		if r.Status != api.StatusCompleted || string(r.Value) != "2000" {
			t.Fatalf("%+v", r)
		}
		if s.cmd.ProcessState != nil {
			t.Fatalf("the server exited: %v\n%s", s.cmd.ProcessState, s.stderr.String())
		}
		f, err := os.Open(audit)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		st, _ := f.Stat()
		evs, bad, err := trajectory.Read(f)
		if err != nil || len(bad) > 0 || st.Size() > 1<<20 {
			t.Fatalf("%d bytes, %v %v", st.Size(), bad, err)
		}
		nested, dropped := 0, 0
		for _, ev := range evs {
			switch ev.Kind {
			case api.EventNested:
				nested++
			case api.EventDropped:
				var d struct{ Count int }
				_ = json.Unmarshal(ev.Result, &d)
				dropped += d.Count
			}
		}
		if nested != 200 || dropped != 1800 {
			t.Fatalf("%d nested events kept, %d counted as dropped", nested, dropped)
		}
	})

	t.Run("stdio", func(t *testing.T) {
		cmd := exec.Command(binary(t), "serve", "--config", cfg)
		cmd.Env = append(os.Environ(), "CODEMODE_TOKEN=")
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(),
			&mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		check(t, cs)
	})
}

const hostileFixtureEnv = "CODEMODE_HOSTILE_FIXTURE"

// hostileFixture is an MCP server over stdio written without the SDK (issue 18 item 7): tools
// named after Object.prototype members count their calls, `calls` reports the count, and
// `storm` starts sending notifications/tools/list_changed as fast as it can write. It appends a
// line to the file CODEMODE_HOSTILE_LOG names for every tools/list it answers.
func hostileFixture() {
	var mu sync.Mutex
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	send := func(b string) {
		mu.Lock()
		out.WriteString(b + "\n")
		out.Flush()
		mu.Unlock()
	}
	var calls, lists atomic.Int64
	var storming sync.Once
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || len(req.ID) == 0 {
			continue
		}
		result := `{}`
		text := func(s string) string { return `{"content":[{"type":"text","text":"` + s + `"}]}` }
		switch req.Method {
		case "initialize":
			result = `{"protocolVersion":"` + req.Params.ProtocolVersion + `","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"hostile","version":"1"}}`
		case "tools/list":
			if f, err := os.OpenFile(os.Getenv("CODEMODE_HOSTILE_LOG"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
				fmt.Fprintf(f, "tools/list %d\n", lists.Add(1))
				f.Close()
			}
			var tools []string
			for _, n := range []string{"toString", "valueOf", "toJSON", "toLocaleString", "calls", "storm"} {
				tools = append(tools, `{"name":"`+n+`","inputSchema":{"type":"object"}}`)
			}
			result = `{"tools":[` + strings.Join(tools, ",") + `]}`
		case "tools/call":
			switch req.Params.Name {
			case "calls":
				result = text(strconv.FormatInt(calls.Load(), 10))
			case "storm":
				storming.Do(func() {
					go func() {
						for {
							send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
						}
					}()
				})
				result = text("storming")
			default:
				calls.Add(1)
				result = text("called " + req.Params.Name)
			}
		}
		send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`)
	}
}

// A hostile upstream against the binary (issue 18 item 7): conversions of MCP.<server> never
// call its tools named toString, valueOf, toJSON (they are renamed toString_2 …), and a storm of
// tools/list_changed costs the gateway bounded CPU — its refetches are spaced a second apart
// and it reads no more than 1,000 notifications a second from that server.
func TestServeHostileUpstream(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg, listLog := filepath.Join(dir, "codemode.json5"), filepath.Join(dir, "lists.log")
	if err := os.WriteFile(cfg, []byte(`{
		workspace: "`+dir+`",
		tools: {codeMode: true},
		mcp: {servers: {hostile: {command: "`+exe+`", env: {`+hostileFixtureEnv+`: "1", CODEMODE_HOSTILE_LOG: "`+listLog+`"}}}},
	}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, nil, "--http", "127.0.0.1:0", "--config", cfg)
	cs := connectHTTP(t, s.base+"/mcp", "")
	r := execResult(t, cs, map[string]any{"code": `const out = []
		for (const f of [() => 'x' + MCP.hostile, () => String(MCP.hostile), () => JSON.stringify(MCP.hostile),
			() => ` + "`${MCP.hostile}`" + `, () => MCP.hostile == 1, () => [MCP.hostile].join()]) {
			try { out.push(f()) } catch (e) { out.push(e.name) }
		}
		return [(await MCP.hostile.calls({})).content[0].text, (await MCP.hostile.toString_2({})).content[0].text,
			(await MCP.hostile.calls({})).content[0].text]`})
	if r.Status != api.StatusCompleted || string(r.Value) != `["0","called toString","1"]` {
		t.Fatalf("%s %s %s", r.Status, r.Error, r.Value)
	}

	cpu := func() float64 { return metric(s.do(t, "GET", "/metrics", nil, "").body, "process_cpu_seconds_total") }
	if r := execResult(t, cs, map[string]any{"code": `return (await MCP.hostile.storm({})).content[0].text`}); string(r.Value) != `"storming"` {
		t.Fatalf("%+v", r)
	}
	c0, t0 := cpu(), time.Now()
	time.Sleep(3 * time.Second)
	used, elapsed := cpu()-c0, time.Since(t0).Seconds()
	logged, _ := os.ReadFile(listLog)
	lists := strings.Count(string(logged), "tools/list ")
	t.Logf("a list_changed storm for %.1f s: the gateway used %.2f s of CPU (%.2f cores); %d tools/list in all", elapsed, used, used/elapsed, lists)
	if used/elapsed > 0.8 || lists > 2+int(elapsed)+2 {
		t.Fatalf("the storm cost %.2f cores and %d tools/list", used/elapsed, lists)
	}
	if r := execResult(t, cs, map[string]any{"code": "return 6 * 7"}); string(r.Value) != "42" {
		t.Fatalf("during the storm: %+v", r)
	}
}
