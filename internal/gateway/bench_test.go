package gateway

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/codemode-go/codemode"
	capi "github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func npmB(b *testing.B, pkg string) string {
	entry, _ := filepath.Abs(filepath.Join("..", "..", ".cache", "npm", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js"))
	if _, err := os.Stat(entry); err != nil {
		b.Skipf("%s not installed (run `make testdeps`)", pkg)
	}
	return entry
}

// BenchmarkMCPCallDirect is the baseline: a go-sdk client calling server-everything's echo over
// stdio, one call per iteration.
func BenchmarkMCPCallDirect(b *testing.B) {
	entry := npmB(b, "server-everything")
	ctx := context.Background()
	// Like the gateway, advertise no roots: server-everything otherwise asks for them and stalls.
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command("node", entry, "stdio")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "x"}}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchGateway(b *testing.B) *codemode.Surface {
	entry := npmB(b, "server-everything")
	cfg := config.Default()
	cfg.Workspace = b.TempDir()
	cfg.MCP.Servers = map[string]config.MCPServer{"everything": {Command: "node", Args: []string{entry, "stdio"}, TimeoutMs: 20000}}
	g, err := Open(context.Background(), cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	return g.Surface(capi.RunContext{SessionKey: "bench"}, nil)
}

func benchCell(b *testing.B, s *codemode.Surface, code string, perIter int) {
	run := func() {
		r := s.Exec(context.Background(), "b", codemode.ExecInput{Code: code})
		if r.Status != capi.StatusCompleted {
			b.Fatalf("%s %s", r.Status, r.Error)
		}
	}
	run()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perIter), "ns/call")
}

// BenchmarkMCPCallNamespace is 50 sequential MCP.everything.echo calls in one cell: compare
// ns/call with BenchmarkMCPCallDirect for the overhead code mode adds per call.
func BenchmarkMCPCallNamespace(b *testing.B) {
	benchCell(b, benchGateway(b), `for (let i = 0; i < 50; i++) await MCP.everything.echo({message: "x"}); return 1`, 50)
}

// BenchmarkMCPCallsParallel50 is one cell making 50 MCP calls through Promise.all.
func BenchmarkMCPCallsParallel50(b *testing.B) {
	benchCell(b, benchGateway(b), `await Promise.all(Array.from({length: 50}, () => MCP.everything.echo({message: "x"}))); return 1`, 50)
}

// BenchmarkAPIRead200 is API.read of a 198-tool server's declarations (the real linear server's
// tools from the search-eval catalog), rendered once per catalog and read inside a cell.
func BenchmarkAPIRead200(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("..", "search", "testdata", "catalog.json"))
	if err != nil {
		b.Skip(err)
	}
	var cat []struct {
		Server      string          `json:"server"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(raw, &cat); err != nil {
		b.Fatal(err)
	}
	var tools []*capi.Tool
	for _, t := range cat {
		if t.Server == "linear" {
			tools = append(tools, &capi.Tool{Name: t.Name, Source: capi.SourceMCP, Owner: "linear", Description: t.Description, InputSchema: t.InputSchema})
		}
	}
	cfg := config.Default()
	cfg.Workspace = b.TempDir()
	g, err := Open(context.Background(), cfg, Options{Tools: tools})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	s := g.Surface(capi.RunContext{}, nil)
	b.Run("render", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := s.APIFile("mcp/linear.d.ts"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("exec", func(b *testing.B) {
		benchCell(b, s, `return (await API.read("mcp/linear.d.ts")).length > 100000`, 1)
	})
}
