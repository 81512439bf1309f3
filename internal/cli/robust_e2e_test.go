package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
	var r api.ExecResult
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &r); err != nil {
		t.Fatalf("%v: %s", err, res.Content[0].(*mcp.TextContent).Text)
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
