//go:build unix

package upstream

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The overhead of a call through the Manager (capture, result rebuilding, timeouts) against a
// bare SDK ClientSession.CallTool to the same server.

const benchInput = `{"query":"hello","limit":10,"filters":{"b":1,"a":2}}`

func benchServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}},
				StructuredContent: json.RawMessage(`{"n":1}`)}, nil
		})
	return s
}

func BenchmarkCallInMemory(b *testing.B) {
	b.Run("direct-sdk", func(b *testing.B) {
		ctx := context.Background()
		st, ct := mcp.NewInMemoryTransports()
		if _, err := benchServer().Connect(ctx, st, nil); err != nil {
			b.Fatal(err)
		}
		cs, err := mcp.NewClient(clientInfo, nil).Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(benchInput)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("manager", func(b *testing.B) {
		f := newFixture(b)
		f.addInMemory("bench", benchServer(), 0)
		m := f.startReady()
		echo := tool(b, m, "bench", "echo")
		benchExecute(b, echo)
	})
}

func BenchmarkCallStdio(b *testing.B) {
	b.Run("direct-sdk", func(b *testing.B) {
		ctx := context.Background()
		sc := helperConfig(b, nil)
		cmd := exec.Command(sc.Command)
		cmd.Env = append(os.Environ(), "MCPUP_TEST_SERVER=stdio", "GORACE=atexit_sleep_ms=0")
		cs, err := mcp.NewClient(clientInfo, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(benchInput)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("manager", func(b *testing.B) {
		f := newFixture(b)
		f.servers["helper"] = helperConfig(b, nil)
		m := f.startReady()
		benchExecute(b, tool(b, m, "helper", "echo"))
	})
}

func benchExecute(b *testing.B, t *api.Tool) {
	ctx := context.Background()
	c := &api.Call{ToolID: t.ID(), Input: json.RawMessage(benchInput)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := t.Execute(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResultBuild is the Manager's own per-call work on a result: decoding the raw
// CallToolResult, validating structuredContent (when the tool declares an outputSchema) and
// rebuilding Details.
func BenchmarkResultBuild(b *testing.B) {
	raw := json.RawMessage(`{"content":[{"type":"text","text":"{\"query\":\"hello\",\"limit\":10}"}],"structuredContent":{"n":1},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"bench","version":""}}}`)
	for _, schema := range []string{"", `{"type":"object","properties":{"n":{"type":"integer"}}}`} {
		name := "no-output-schema"
		if schema != "" {
			name = "with-output-schema"
		}
		b.Run(name, func(b *testing.B) {
			c := &callTool{s: &server{name: "bench"}, name: "echo", outputSchema: json.RawMessage(schema)}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.result(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
