package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/gateway"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everything returns the entry point of the pinned server-everything (make testdeps).
func everything(t *testing.T) string {
	t.Helper()
	entry, _ := filepath.Abs(filepath.Join("..", "..", ".cache", "npm", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if _, err := os.Stat(entry); err != nil {
		t.Skip("server-everything not installed (run `make testdeps`)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found")
	}
	return entry
}

// capture records the raw result of every response a client reads.
type capture struct {
	inner mcp.Transport
	mu    sync.Mutex
	last  json.RawMessage
}

func (c *capture) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &captureConn{Connection: conn, c: c}, nil
}

type captureConn struct {
	mcp.Connection
	c *capture
}

func (c *captureConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Response); ok && r.Error == nil {
		c.c.mu.Lock()
		c.c.last = append(json.RawMessage(nil), r.Result...)
		c.c.mu.Unlock()
	}
	return msg, err
}

func (c *capture) result() json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// wireValue decodes a result for comparison, without the fields a newer protocol version adds
// to every result (resultType, the serverInfo in _meta).
func wireValue(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	raw = createdAt.ReplaceAll(raw, []byte("created at TIME")) // server-everything stamps its resources
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	delete(m, "resultType")
	// Blob resources carry the stamp too, base64-encoded.
	content, _ := m["content"].([]any)
	for _, b := range content {
		res, _ := b.(map[string]any)["resource"].(map[string]any)
		if blob, ok := res["blob"].(string); ok {
			if dec, err := base64.StdEncoding.DecodeString(blob); err == nil {
				res["blob"] = string(createdAt.ReplaceAll(dec, []byte("created at TIME")))
			}
		}
	}
	if meta, ok := m["_meta"].(map[string]any); ok {
		delete(meta, "io.modelcontextprotocol/serverInfo")
		if len(meta) == 0 {
			delete(m, "_meta")
		}
	}
	return m
}

var createdAt = regexp.MustCompile(`created at [0-9:]+ ?[APM]*`)

// upstreamClient connects straight to server-everything, as the reference.
func upstreamClient(t *testing.T, entry string) (*mcp.ClientSession, *capture) {
	t.Helper()
	cp := &capture{inner: &mcp.CommandTransport{Command: exec.Command("node", entry, "stdio")}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ref", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).Connect(context.Background(), cp, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, cp
}

// gatewayClient serves a gateway in front of server-everything and connects a client to it.
func gatewayClient(t *testing.T, entry string, mutate func(*config.Config), copts ...*mcp.ClientOptions) (*mcp.ClientSession, *capture) {
	t.Helper()
	cfg := config.Default()
	cfg.Workspace = t.TempDir()
	cfg.MCP.Servers = map[string]config.MCPServer{"everything": {Command: "node", Args: []string{entry, "stdio"}, TimeoutMs: 20000}}
	mutate(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g, err := gateway.Open(ctx, cfg, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv := New(g, nil)
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = srv.Run(ctx, st) }()
	cp := &capture{inner: ct}
	var co *mcp.ClientOptions
	if len(copts) > 0 {
		co = copts[0]
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, co).Connect(ctx, cp, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, cp
}

func callRaw(t *testing.T, cs *mcp.ClientSession, cp *capture, name string, args map[string]any) (*mcp.CallToolResult, json.RawMessage) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res, cp.result()
}

var passthroughCalls = []struct {
	tool string
	args map[string]any
}{
	{"get-tiny-image", map[string]any{}},
	{"get-annotated-message", map[string]any{"messageType": "error", "includeImage": true}},
	{"get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 2}},
	{"get-resource-reference", map[string]any{"resourceType": "Blob", "resourceId": 3}},
	{"get-resource-links", map[string]any{"count": 3}},
}

func TestDirectOnlyPassthrough(t *testing.T) { // direct-only MCP tools reach the client byte for byte
	entry := everything(t)
	ref, refCap := upstreamClient(t, entry)
	var direct []string
	for _, c := range passthroughCalls {
		direct = append(direct, c.tool)
	}
	cs, csCap := gatewayClient(t, entry, func(c *config.Config) { c.Tools.DirectOnly = direct })
	for _, c := range passthroughCalls {
		t.Run(c.tool, func(t *testing.T) {
			want, wantRaw := callRaw(t, ref, refCap, c.tool, c.args)
			got, gotRaw := callRaw(t, cs, csCap, c.tool, c.args)
			if !reflect.DeepEqual(wireValue(t, gotRaw), wireValue(t, wantRaw)) {
				t.Fatalf("result differs\n got %s\nwant %s", gotRaw, wantRaw)
			}
			if len(got.Content) != len(want.Content) {
				t.Fatalf("%d blocks, want %d", len(got.Content), len(want.Content))
			}
			for i, b := range got.Content {
				if img, ok := b.(*mcp.ImageContent); ok {
					// The data decodes to the PNG itself: not base64 of base64.
					if !strings.HasPrefix(string(img.Data), "\x89PNG") {
						t.Fatalf("block %d: image data is not a PNG: %q", i, img.Data[:min(16, len(img.Data))])
					}
					if base64.StdEncoding.EncodeToString(img.Data) != base64.StdEncoding.EncodeToString(want.Content[i].(*mcp.ImageContent).Data) {
						t.Fatalf("block %d: image bytes differ", i)
					}
				}
			}
			if got.StructuredContent != nil && want.StructuredContent == nil {
				t.Fatalf("structuredContent invented: %v", got.StructuredContent)
			}
		})
	}
}

func TestCodeModeOffPassthrough(t *testing.T) { // with code mode off, tools/list and results equal the upstream's
	entry := everything(t)
	ref, refCap := upstreamClient(t, entry)
	cs, csCap := gatewayClient(t, entry, func(c *config.Config) { c.Tools.CodeMode.Enabled = false })

	// tools/list: every upstream tool is listed with its own definition.
	if _, err := ref.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	wantList := wireValue(t, refCap.result())
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	gotList := wireValue(t, csCap.result())
	byName := map[string]any{}
	for _, tl := range gotList["tools"].([]any) {
		byName[tl.(map[string]any)["name"].(string)] = tl
	}
	for _, tl := range wantList["tools"].([]any) {
		name := tl.(map[string]any)["name"].(string)
		if !reflect.DeepEqual(byName[name], tl) {
			g, _ := json.Marshal(byName[name])
			w, _ := json.Marshal(tl)
			t.Errorf("tool %s differs\n got %s\nwant %s", name, g, w)
		}
	}

	calls := append([]struct {
		tool string
		args map[string]any
	}{
		{"echo", map[string]any{"message": "héllo <&>"}},
		{"get-sum", map[string]any{"a": 2, "b": 40}},
		{"get-structured-content", map[string]any{"location": "Chicago"}},
	}, passthroughCalls...)
	for _, c := range calls {
		t.Run(c.tool, func(t *testing.T) {
			_, wantRaw := callRaw(t, ref, refCap, c.tool, c.args)
			_, gotRaw := callRaw(t, cs, csCap, c.tool, c.args)
			if !reflect.DeepEqual(wireValue(t, gotRaw), wireValue(t, wantRaw)) {
				t.Fatalf("result differs\n got %s\nwant %s", gotRaw, wantRaw)
			}
		})
	}
}

func TestControlToolAnnotations(t *testing.T) { // exec and wait carry honest annotations
	cfg := config.Default()
	cs, _ := connect(t, cfg, []*api.Tool{echoTool("echo", false)})
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range lt.Tools {
		if tl.Name != "exec" && tl.Name != "wait" {
			continue
		}
		a := tl.Annotations
		// The built-in tools include write/edit: a cell may change things.
		if a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint || a.OpenWorldHint == nil || !*a.OpenWorldHint || a.Title == "" {
			t.Fatalf("%s annotations %+v", tl.Name, a)
		}
	}
}

func TestRenderNativeResult(t *testing.T) { // native results are rendered once, by block type
	size := int64(12)
	cases := []struct {
		name string
		in   api.Result
		want string
	}{
		{"text and object details", api.Result{Content: []api.ContentBlock{{Type: "text", Text: ""}}, Details: json.RawMessage(`{"a":1}`)},
			`{"content":[{"text":"","type":"text"}],"structuredContent":{"a":1}}`},
		{"array details are not structuredContent", api.Result{Content: []api.ContentBlock{}, Details: json.RawMessage(`[1]`)}, `{"content":[]}`},
		{"image keeps its base64", api.Result{Content: []api.ContentBlock{{Type: "image", Data: "iVBORw0KGgo=", MimeType: "image/png", Annotations: json.RawMessage(`{"priority":1}`)}}},
			`{"content":[{"annotations":{"priority":1},"data":"iVBORw0KGgo=","mimeType":"image/png","type":"image"}]}`},
		{"resource", api.Result{Content: []api.ContentBlock{{Type: "resource", Resource: json.RawMessage(`{"uri":"file:///a","text":"x"}`)}}, IsError: true},
			`{"content":[{"resource":{"uri":"file:///a","text":"x"},"type":"resource"}],"isError":true}`},
		{"resource_link", api.Result{Content: []api.ContentBlock{{Type: "resource_link", URI: "file:///a", Name: "a", Size: &size, Meta: json.RawMessage(`{"k":"v"}`)}}},
			`{"content":[{"_meta":{"k":"v"},"name":"a","size":12,"type":"resource_link","uri":"file:///a"}]}`},
		{"raw wins", api.Result{Raw: json.RawMessage(`{"content":[{"type":"text","text":"up"}]}`), Details: json.RawMessage(`{"x":1}`)},
			`{"content":[{"type":"text","text":"up"}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := string(renderResult(&c.in)); got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestMergeExtra(t *testing.T) {
	got, err := mergeExtra([]byte(`{"content":[{"type":"text","text":"}"}],"_meta":{"a":1}}`),
		[]byte(`{"content":[],"_meta":{"s":1},"resultType":"complete"}`), "content")
	if err != nil || string(got) != `{"content":[{"type":"text","text":"}"}],"_meta":{"a":1,"s":1},"resultType":"complete"}` {
		t.Fatalf("%s %v", got, err)
	}
	got, _ = mergeExtra([]byte(`{}`), []byte(`{"resultType":"complete"}`))
	if string(got) != `{"resultType":"complete"}` {
		t.Fatalf("%s", got)
	}
}

func TestProgressPassthrough(t *testing.T) { // upstream progress reaches a client that asked for it
	entry := everything(t)
	var mu sync.Mutex
	var got []float64
	cs, _ := gatewayClient(t, entry, func(c *config.Config) { c.Tools.DirectOnly = []string{"trigger-long-running-operation"} },
		&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			if r.Params.ProgressToken == "tok-1" {
				got = append(got, r.Params.Progress)
			}
		}})
	p := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.3, "steps": 3}}
	p.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), p)
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	// Every progress notification arrives before the result (a stdio upstream's progress is
	// forwarded in read order). The SDK client here still hands notifications to the handler
	// apart from responses, so give the handler a moment.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[0] >= got[1] || got[1] >= got[2] {
		t.Fatalf("progress %v", got)
	}
	// Without a token, no progress is requested upstream (nothing to route).
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.1, "steps": 1}}); err != nil {
		t.Fatal(err)
	}
}

func TestUpstreamEnvironmentHasNoGatewaySecrets(t *testing.T) { // a real stdio server sees a minimal environment
	entry := everything(t)
	t.Setenv("OPENAI_API_KEY", "sk-gateway-secret")
	t.Setenv("PASSED_ON", "visible")
	cs, _ := gatewayClient(t, entry, func(c *config.Config) {
		c.Tools.CodeMode.Enabled = false
		sc := c.MCP.Servers["everything"]
		sc.InheritEnv = []string{"PASSED_ON"}
		c.MCP.Servers["everything"] = sc
	})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get-env", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if strings.Contains(text, "sk-gateway-secret") || !strings.Contains(text, "visible") || !strings.Contains(text, "PATH") {
		t.Fatalf("upstream environment: %s", text)
	}
}
