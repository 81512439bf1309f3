package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/gateway"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Code mode in front of an MCP server: name it in the configuration (a command for stdio, or a
// URL for streamable HTTP), open the gateway and let a cell call its tools. The server here is a
// small go-sdk server on a local port; `npx`-style stdio servers are configured with Command and
// Args instead.
func Example() {
	upstream := weatherServer() // any MCP server; see below
	defer upstream.Close()

	ctx := context.Background()
	cfg := config.Default()
	cfg.MCP.Servers = map[string]config.MCPServer{"weather": {URL: upstream.URL}}
	g, err := gateway.Open(ctx, cfg, gateway.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()

	s := g.Surface(api.RunContext{AgentID: "demo", SessionKey: "s1"}, nil)
	res := s.Handle(ctx, "call_1", "exec", json.RawMessage(`{"code": "const r = await MCP.weather.forecast({city: 'Oslo'}); return r.structuredContent"}`)).Exec
	if res.Status != api.StatusCompleted {
		log.Fatalf("%s: %s", res.Code, res.Error)
	}
	fmt.Println(string(res.Value))
	// Output:
	// {"city":"Oslo","sky":"snow"}
}

// weatherServer is an MCP server with one tool, served over streamable HTTP.
func weatherServer() *httptest.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1"}, nil)
	type in struct {
		City string `json:"city"`
	}
	type out struct {
		City string `json:"city"`
		Sky  string `json:"sky"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "forecast", Description: "Tomorrow's sky in a city."},
		func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
			return nil, out{City: a.City, Sky: "snow"}, nil
		})
	return httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
}

// Your own tools behind code mode, served over MCP like `codemode serve` does: any MCP client
// connects (here in memory; ServeStdio for a client that starts your program) and sees exec and
// wait.
func ExampleGateway_Serve() {
	ctx := context.Background()
	add := &api.Tool{Name: "add", Description: "Add two numbers.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`),
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			var in struct{ A, B float64 }
			if err := json.Unmarshal(c.Input, &in); err != nil {
				return nil, err
			}
			return api.TextResult(fmt.Sprint(in.A+in.B), in.A+in.B)
		}}
	g, err := gateway.Open(ctx, config.Default(), gateway.Options{Tools: []*api.Tool{add}})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()

	serverSide, clientSide := mcp.NewInMemoryTransports()
	go func() { _ = g.Serve(ctx, serverSide) }()

	client, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	tools, _ := client.ListTools(ctx, nil)
	for _, t := range tools.Tools {
		fmt.Println("tool:", t.Name)
	}
	out, err := client.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"code": "return await tools.add({a: 2, b: 40})"}})
	if err != nil {
		log.Fatal(err)
	}
	var res api.ExecResult
	_ = json.Unmarshal([]byte(out.Content[0].(*mcp.TextContent).Text), &res)
	fmt.Println(res.Status, string(res.Value))
	// Output:
	// tool: exec
	// tool: wait
	// completed 42
}

// The built-in tools work on a workspace directory: read, write, edit, ls, find, grep and
// apply_patch (native:core:*), confined to it.
func Example_workspace() {
	dir, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "todo.txt"), []byte("buy milk\nwrite docs\n"), 0o644)

	ctx := context.Background()
	cfg := config.Default()
	cfg.Workspace = dir
	g, err := gateway.Open(ctx, cfg, gateway.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	s := g.Surface(api.RunContext{SessionKey: "s1"}, nil)
	res := s.Handle(ctx, "c1", "exec", json.RawMessage(`{"code": "const f = await tools.read({path: 'todo.txt'}); return f.content.split('\\n').filter(Boolean).length"}`)).Exec
	fmt.Println(res.Status, string(res.Value))
	// Output:
	// completed 2
}

// The bundled git plugin reads the repository that holds the workspace — pure Go, no git binary,
// nothing the repository configures runs — through native:git:* tools and the Git namespace.
func Example_gitPlugin() {
	dir := demoRepository() // a repository with two commits; see below
	defer os.RemoveAll(dir)

	ctx := context.Background()
	cfg := config.Default()
	cfg.Workspace = dir
	cfg.Plugins.Git.Enabled = true
	g, err := gateway.Open(ctx, cfg, gateway.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	s := g.Surface(api.RunContext{SessionKey: "s1"}, nil)
	res := s.Handle(ctx, "c1", "exec", json.RawMessage(`{"code": "const {commits} = await Git.log({limit: 5}); return commits.map(c => c.subject)"}`)).Exec
	fmt.Println(res.Status, string(res.Value))
	// Output:
	// completed ["Add the plan","Start"]
}

// demoRepository makes a git repository with two commits in a temporary directory.
func demoRepository() string {
	dir, _ := os.MkdirTemp("", "repo")
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		log.Fatal(err)
	}
	wt, _ := repo.Worktree()
	sig := &object.Signature{Name: "Ada", Email: "ada@example.com", When: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	for i, msg := range []string{"Start", "Add the plan"} {
		_ = os.WriteFile(filepath.Join(dir, "plan.md"), []byte(fmt.Sprintf("step %d\n", i)), 0o644)
		_, _ = wt.Add("plan.md")
		sig.When = sig.When.Add(time.Hour)
		if _, err := wt.Commit(msg, &git.CommitOptions{Author: sig}); err != nil {
			log.Fatal(err)
		}
	}
	return dir
}

// Serve code mode over streamable HTTP, as `codemode serve --http` does: Listen binds (a
// loopback address needs no token; any other needs serve.http.token, principals or OAuth), Serve
// serves until its context ends and then drains.
func ExampleGateway_Listen() {
	ctx, stop := context.WithCancel(context.Background())
	g, err := gateway.Open(ctx, config.Default(), gateway.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	l, err := g.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx) }()

	client, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: l.URL()}, nil)
	if err != nil {
		log.Fatal(err)
	}
	out, err := client.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"code": "return 6 * 7"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Content[0].(*mcp.TextContent).Text[:32])
	_ = client.Close()
	stop()
	fmt.Println("drained:", <-served)
	// Output:
	// {"status":"completed","value":42
	// drained: <nil>
}
