package server

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect starts the server on an in-memory transport and returns a connected client session.
func connect(t *testing.T, cfg *config.Config, tools []*api.Tool) (*mcp.ClientSession, *gateway.Gateway) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g, err := gateway.Open(ctx, cfg, gateway.Options{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if g.RT.Err() != nil && cfg.Tools.CodeMode.Enabled {
		t.Fatalf("runtime unavailable (run `make wasm`): %v", g.RT.Err())
	}
	srv := New(g, nil)
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = srv.Run(ctx, st) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, g
}

func callExec(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) api.ExecResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var r api.ExecResult
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		t.Fatalf("%v: %s", err, text)
	}
	if res.IsError != (r.Status == api.StatusFailed) {
		t.Fatalf("isError %v for status %s", res.IsError, r.Status)
	}
	return r
}

func echoTool(name string, direct bool) *api.Tool {
	return &api.Tool{Name: name, Description: "echo", DirectOnly: direct, ReadOnly: true,
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			return &api.Result{Content: []api.ContentBlock{{Type: "text", Text: "echo " + string(c.Input)}}, Details: c.Input}, nil
		}}
}

func TestServeCodeMode(t *testing.T) { // §20 steps 4–8, 12–14 through a real MCP client
	cfg := config.Default()
	cfg.Tools.CodeMode.TimeoutMs = 300
	release := make(chan struct{})
	slow := &api.Tool{Name: "slow", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		select {
		case <-release:
			return api.TextResult("late", map[string]any{"late": true})
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	cs, _ := connect(t, cfg, []*api.Tool{echoTool("echo", false), echoTool("screenshot", true), slow})
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"exec", "screenshot", "wait"}) && !slices.Equal(names, []string{"exec", "wait", "screenshot"}) {
		t.Fatalf("tools %v", names)
	}
	r := callExec(t, cs, "exec", map[string]any{"code": `return [ALL_TOOLS.filter(t => ["echo", "slow", "screenshot"].includes(t.name)).map(t => t.id), await tools.echo({a: 1})]`})
	if r.Status != api.StatusCompleted || string(r.Value) != `[["native:app:echo","native:app:slow"],{"a":1}]` {
		t.Fatalf("%+v %s", r, r.Value)
	}
	// A nested call that outlives the exec: waiting, then wait delivers it.
	r = callExec(t, cs, "exec", map[string]any{"code": `text("before"); const v = await tools.slow({}); text("after"); return v`})
	if r.Status != api.StatusWaiting || r.RunID == "" {
		t.Fatalf("%+v", r)
	}
	close(release)
	w := callExec(t, cs, "wait", map[string]any{"runId": r.RunID})
	if w.Status != api.StatusCompleted || string(w.Value) != `{"late":true}` || len(w.Output) != 1 || w.Output[0].Text != "after" {
		t.Fatalf("%+v", w)
	}
	// Direct-only tools are called directly.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "screenshot", Arguments: map[string]any{"x": 1}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `{"x":1}`) {
		t.Fatalf("%v %+v", err, res)
	}
	// A failed cell is a tool error with the result as text.
	r = callExec(t, cs, "exec", map[string]any{"code": `throw new Error("nope")`})
	if r.Status != api.StatusFailed || !strings.Contains(r.Error, "nope") {
		t.Fatalf("%+v", r)
	}
}

func TestServeWaitIsScopedToTheSession(t *testing.T) { // W3 across MCP sessions
	cfg := config.Default()
	ctx := context.Background()
	g, err := gateway.Open(ctx, cfg, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := New(g, nil)
	sess := func() *mcp.ClientSession {
		st, ct := mcp.NewInMemoryTransports()
		go func() { _ = srv.Run(ctx, st) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	a, b := sess(), sess()
	defer a.Close()
	defer b.Close()
	r := callExec(t, a, "exec", map[string]any{"code": `await yield_control("x"); return 1`})
	if r.Status != api.StatusWaiting {
		t.Fatalf("%+v", r)
	}
	if w := callExec(t, b, "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusFailed || !strings.Contains(w.Error, "different session") {
		t.Fatalf("%+v", w)
	}
	if w := callExec(t, a, "wait", map[string]any{"runId": r.RunID}); w.Status != api.StatusCompleted {
		t.Fatalf("%+v", w)
	}
}

func TestServeDisabledExposesToolsDirectly(t *testing.T) { // A4 over MCP
	cfg, err := config.Parse([]byte(`{tools: {codeMode: false}}`), "t")
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := connect(t, cfg, []*api.Tool{echoTool("echo", false), echoTool("other", false)})
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "echo") || !slices.Contains(names, "other") || !slices.Contains(names, "read") || slices.Contains(names, "wait") {
		t.Fatalf("%v", names)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"k": "v"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
}
