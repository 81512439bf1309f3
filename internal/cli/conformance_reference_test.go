package cli

//lint:file-ignore SA1019 the fixture logs and samples: deprecated by SEP-2577, still in the suite

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The conformance suite's reference server, ours. The suite (npm @modelcontextprotocol/conformance)
// tests a server by calling fixture tools, prompts and resources by name
// (test_simple_text, test_prompt_with_arguments, test://static-text, …); its own reference
// server that provides them is not part of the npm package. referenceFixture is that server
// written against the scenario descriptions with the go-sdk: every active server scenario passes
// against it directly (TestConformanceReference checks it first, so a failure through the
// gateway is the gateway's), and then through `codemode serve` with code mode off in front of it
// (issue 21 item 6).
//
// It runs as this test binary with referenceEnv set: "stdio", or "http" (it prints "URL <url>"
// and serves streamable HTTP with an event store, for SEP-1699 resumption, until stdin closes).

const referenceEnv = "CODEMODE_CONFORMANCE_REFERENCE"

func referenceFixture(mode string) {
	s := referenceServer()
	if mode != "http" {
		_ = s.Run(context.Background(), &mcp.StdioTransport{})
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("URL http://%s/mcp\n", ln.Addr())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // the parent closes stdin to stop us
	_ = srv.Close()
}

const (
	refPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC" // 1×1 red pixel
	refWAV = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA=="                     // 8 samples of silence
)

func referenceServer() *mcp.Server {
	decode := func(s string) []byte { b, _ := base64.StdEncoding.DecodeString(s); return b }
	var subsMu sync.Mutex
	subs := map[string]bool{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "codemode-conformance-reference", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
		},
		SubscribeHandler: func(_ context.Context, r *mcp.SubscribeRequest) error {
			subsMu.Lock()
			subs[r.Params.URI] = true
			subsMu.Unlock()
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, r *mcp.UnsubscribeRequest) error {
			subsMu.Lock()
			delete(subs, r.Params.URI)
			subsMu.Unlock()
			return nil
		},
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{ListChanged: true},
			Prompts: &mcp.PromptCapabilities{ListChanged: true}, Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true}},
	})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	none := json.RawMessage(`{"type":"object","properties":{}}`)
	add := func(name, desc string, schema json.RawMessage, h func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult) {
		if schema == nil {
			schema = none
		}
		srv.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return h(ctx, r), nil
		})
	}
	add("test_simple_text", "Tests simple text content response", nil, func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		return text("This is a simple text response for testing.")
	})
	add("test_image_content", "Tests image content response", nil, func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: decode(refPNG), MIMEType: "image/png"}}}
	})
	add("test_audio_content", "Tests audio content response", nil, func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: decode(refWAV), MIMEType: "audio/wav"}}}
	})
	add("test_embedded_resource", "Tests embedded resource content response", nil, func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."}}}}
	})
	add("test_multiple_content_types", "Tests response with multiple content types", nil, func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Multiple content types test:"},
			&mcp.ImageContent{Data: decode(refPNG), MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}}}}
	})
	add("test_tool_with_logging", "Tests tool that emits log messages during execution", nil, func(ctx context.Context, r *mcp.CallToolRequest) *mcp.CallToolResult {
		for i, m := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "conformance-reference", Data: m})
		}
		return text("Tool with logging executed successfully")
	})
	add("test_tool_with_progress", "Tests tool that reports progress notifications", nil, func(ctx context.Context, r *mcp.CallToolRequest) *mcp.CallToolResult {
		tok := r.Params.GetProgressToken()
		for i, p := range []float64{0, 50, 100} {
			if i > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			if tok != nil {
				_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Total: 100,
					Message: fmt.Sprintf("Completed step %g of 100", p)})
			}
		}
		return text(fmt.Sprint(tok))
	})
	srv.AddTool(&mcp.Tool{Name: "test_error_handling", Description: "Tests error response handling", InputSchema: none},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "This tool intentionally returns an error for testing"}}}, nil
		})
	add("test_reconnection", "Closes the SSE stream mid-call (SEP-1699); the result comes after the client reconnects", nil,
		func(ctx context.Context, r *mcp.CallToolRequest) *mcp.CallToolResult {
			if r.Extra != nil && r.Extra.CloseSSEStream != nil {
				r.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 200 * time.Millisecond})
			}
			time.Sleep(100 * time.Millisecond)
			return text("Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.")
		})
	// The questions are asked as multi round-trip requests (SEP-2322): a 2026-07-28 client gets
	// the input requests in the result, and the SDK asks an older client itself.
	ask := func(name, desc string, args json.RawMessage, question func(r *mcp.CallToolRequest) mcp.InputRequest, answer func(mcp.InputResponse) string) {
		srv.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: args}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if resp, ok := r.Params.InputResponses["q"]; ok {
				return text(answer(resp)), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": question(r)}, RequestState: name}, nil
		})
	}
	ask("test_sampling", "Tests server-initiated sampling (LLM completion request)",
		json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`),
		func(r *mcp.CallToolRequest) mcp.InputRequest {
			var in struct {
				Prompt string `json:"prompt"`
			}
			_ = json.Unmarshal(r.Params.Arguments, &in)
			return &mcp.CreateMessageParams{MaxTokens: 100, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}}}
		},
		func(resp mcp.InputResponse) string {
			reply := "No response"
			switch res := resp.(type) {
			case *mcp.CreateMessageResult:
				if tc, ok := res.Content.(*mcp.TextContent); ok {
					reply = tc.Text
				}
			case *mcp.CreateMessageWithToolsResult:
				for _, c := range res.Content {
					if tc, ok := c.(*mcp.TextContent); ok {
						reply = tc.Text
					}
				}
			}
			return "LLM response: " + reply
		})
	elicit := func(name, desc, message string, args, schema json.RawMessage) {
		if args == nil {
			args = none
		}
		ask(name, desc, args, func(r *mcp.CallToolRequest) mcp.InputRequest {
			msg := message
			if name == "test_elicitation" {
				var in struct {
					Message string `json:"message"`
				}
				_ = json.Unmarshal(r.Params.Arguments, &in)
				msg = in.Message
			}
			return &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: schema}
		}, func(resp mcp.InputResponse) string {
			res, ok := resp.(*mcp.ElicitResult)
			if !ok {
				return fmt.Sprintf("Elicitation not supported or error: unexpected answer %T", resp)
			}
			content, _ := json.Marshal(res.Content)
			return fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, content)
		})
	}
	elicit("test_elicitation", "Tests server-initiated elicitation (user input request)", "",
		json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`),
		json.RawMessage(`{"type":"object","properties":{"username":{"type":"string","description":"Your user name"},"email":{"type":"string","description":"Your email address"}}}`))
	elicit("test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034", "Please review and update the form fields with defaults", nil,
		json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"User name","default":"John Doe"},`+
			`"age":{"type":"integer","description":"User age","default":30},"score":{"type":"number","description":"User score","default":95.5},`+
			`"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},`+
			`"verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]}`))
	elicit("test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330", "Please select options from the enum fields", nil,
		json.RawMessage(`{"type":"object","properties":{`+
			`"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},`+
			`"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},`+
			`"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},`+
			`"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},`+
			`"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}`+
			`},"required":[]}`))
	srv.AddTool(&mcp.Tool{Name: "json_schema_2020_12_tool", Description: "Tool with JSON Schema 2020-12 features",
		InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })

	// Not a suite fixture: tells the subscribers of a resource it changed (TestAggregator).
	add("test_touch_resource", "Sends notifications/resources/updated for uri",
		json.RawMessage(`{"type":"object","properties":{"uri":{"type":"string"}},"required":["uri"]}`),
		func(ctx context.Context, r *mcp.CallToolRequest) *mcp.CallToolResult {
			var in struct {
				URI string `json:"uri"`
			}
			_ = json.Unmarshal(r.Params.Arguments, &in)
			subsMu.Lock()
			subscribed := subs[in.URI]
			subsMu.Unlock()
			if !subscribed {
				return text("not subscribed: " + in.URI)
			}
			_ = srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: in.URI})
			return text("updated " + in.URI)
		})

	// Not a suite fixture either: adds a prompt, so the server sends prompts/list_changed.
	add("test_add_prompt", "Adds a prompt named name",
		json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		func(_ context.Context, r *mcp.CallToolRequest) *mcp.CallToolResult {
			var in struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(r.Params.Arguments, &in)
			srv.AddPrompt(&mcp.Prompt{Name: in.Name, Description: "added at run time"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "new"}}}}, nil
			})
			return text("added " + in.Name)
		})

	// Resources.
	res := func(name, uri, title, desc, mime string, contents func(uri string) *mcp.ResourceContents) {
		srv.AddResource(&mcp.Resource{Name: name, URI: uri, Title: title, Description: desc, MIMEType: mime},
			func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{contents(r.Params.URI)}}, nil
			})
	}
	res("static-text", "test://static-text", "Static Text Resource", "A static text resource for testing", "text/plain", func(uri string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: "This is the content of the static text resource."}
	})
	res("static-binary", "test://static-binary", "Static Binary Resource", "A static binary resource (image) for testing", "image/png", func(uri string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, MIMEType: "image/png", Blob: decode(refPNG)}
	})
	res("watched-resource", "test://watched-resource", "Watched Resource", "A resource that changes", "text/plain", func(uri string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: "Watched resource content"}
	})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "template", URITemplate: "test://template/{id}/data", Title: "Resource Template",
		Description: "A resource template with parameter substitution", MIMEType: "application/json"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := strings.TrimSuffix(strings.TrimPrefix(r.Params.URI, "test://template/"), "/data")
			b, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
		})

	// Prompts.
	prompt := func(p *mcp.Prompt, msgs func(args map[string]string) []*mcp.PromptMessage) {
		srv.AddPrompt(p, func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: msgs(r.Params.Arguments)}, nil
		})
	}
	user := func(c mcp.Content) *mcp.PromptMessage { return &mcp.PromptMessage{Role: "user", Content: c} }
	prompt(&mcp.Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A simple prompt without arguments"},
		func(map[string]string) []*mcp.PromptMessage {
			return []*mcp.PromptMessage{user(&mcp.TextContent{Text: "This is a simple prompt for testing."})}
		})
	prompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Title: "Prompt With Arguments", Description: "A prompt with required arguments",
		Arguments: []*mcp.PromptArgument{{Name: "arg1", Description: "First test argument", Required: true}, {Name: "arg2", Description: "Second test argument", Required: true}}},
		func(a map[string]string) []*mcp.PromptMessage {
			return []*mcp.PromptMessage{user(&mcp.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])})}
		})
	prompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource", Description: "A prompt that includes an embedded resource",
		Arguments: []*mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(a map[string]string) []*mcp.PromptMessage {
			return []*mcp.PromptMessage{
				user(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: a["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."}}),
				user(&mcp.TextContent{Text: "Please process the embedded resource above."})}
		})
	prompt(&mcp.Prompt{Name: "test_prompt_with_image", Title: "Prompt With Image", Description: "A prompt that includes image content"},
		func(map[string]string) []*mcp.PromptMessage {
			return []*mcp.PromptMessage{user(&mcp.ImageContent{Data: decode(refPNG), MIMEType: "image/png"}),
				user(&mcp.TextContent{Text: "Please analyze the image above."})}
		})
	return srv
}

// activeScenarios are the suite's active server scenarios (0.1.16: 30; json-schema-2020-12 and
// server-sse-polling are pending) with the checks each must run at least, so that a scenario
// that silently checks nothing (0/0) fails.
var activeScenarios = map[string]int{
	"server-initialize": 1, "logging-set-level": 1, "ping": 1, "completion-complete": 1, "tools-list": 1,
	"tools-call-simple-text": 1, "tools-call-image": 1, "tools-call-audio": 1, "tools-call-embedded-resource": 1,
	"tools-call-mixed-content": 1, "tools-call-with-logging": 1, "tools-call-error": 1, "tools-call-with-progress": 1,
	"tools-call-sampling": 1, "tools-call-elicitation": 1, "elicitation-sep1034-defaults": 5,
	"server-sse-multiple-streams": 2, "elicitation-sep1330-enums": 5, "resources-list": 1, "resources-read-text": 1,
	"resources-read-binary": 1, "resources-templates-read": 1, "resources-subscribe": 1, "resources-unsubscribe": 1,
	"prompts-list": 1, "prompts-get-simple": 1, "prompts-get-with-args": 1, "prompts-get-embedded-resource": 1,
	"prompts-get-with-image": 1, "dns-rebinding-protection": 2,
}

// noFixtureScenarios need nothing but the gateway itself.
var noFixtureScenarios = []string{"server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list",
	"server-sse-multiple-streams", "resources-list", "prompts-list", "dns-rebinding-protection"}

// TestConformanceReference is the conformance gate of issue 21 item 6: the whole active suite
// against the reference fixture directly, then through `codemode serve` with code mode off in
// front of it (over HTTP and over stdio), and the scenarios that need no fixture against the
// default configuration. One suite process per target (≈1.5 s each).
func TestConformanceReference(t *testing.T) {
	node, suite := conformanceSuite(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ref := startReference(t, exe)
	t.Run("reference", func(t *testing.T) { runSuite(t, node, suite, ref, activeScenarios) })
	writeCfg := func(t *testing.T, cfg string) string {
		p := filepath.Join(t.TempDir(), "codemode.json5")
		if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("serve code mode off, HTTP upstream", func(t *testing.T) {
		cfg := writeCfg(t, fmt.Sprintf(`{tools: {codeMode: false}, mcp: {servers: {ref: {url: %q, timeoutMs: 30000}}}}`, ref))
		s := startServe(t, nil, "--http", "127.0.0.1:0", "--config", cfg)
		runSuite(t, node, suite, s.base+"/mcp", activeScenarios)
	})
	t.Run("serve code mode off, stdio upstream", func(t *testing.T) {
		cfg := writeCfg(t, fmt.Sprintf(`{tools: {codeMode: false}, mcp: {servers: {ref: {command: %q, env: {%s: "stdio"}, timeoutMs: 30000}}}}`, exe, referenceEnv))
		s := startServe(t, nil, "--http", "127.0.0.1:0", "--config", cfg)
		runSuite(t, node, suite, s.base+"/mcp", activeScenarios)
	})
	t.Run("serve default config", func(t *testing.T) {
		s := startServe(t, nil, "--http", "127.0.0.1:0")
		want := map[string]int{}
		for _, sc := range noFixtureScenarios {
			want[sc] = activeScenarios[sc]
		}
		runSuite(t, node, suite, s.base+"/mcp", want)
	})
}

// startReference runs the reference fixture over HTTP and returns its URL.
func startReference(t *testing.T, exe string) string {
	t.Helper()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), referenceEnv+"=http")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "URL ")
	if err != nil || !ok {
		t.Fatalf("reference fixture did not start: %q %v", line, err)
	}
	return url
}

var summaryLine = regexp.MustCompile(`(?m)^[✓✗] ([a-z0-9-]+): (\d+) passed, (\d+) failed`)

// runSuite runs the active suite in one process and checks that each scenario of want passed
// with at least its minimum number of checks and none failed (the others may fail: a target
// without the fixture).
func runSuite(t *testing.T, node, suite, url string, want map[string]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runSuite1(t, ctx, node, []string{suite, "server", "--url", url}, want)
}

func runSuite1(t *testing.T, ctx context.Context, node string, args []string, want map[string]int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = t.TempDir() // results/ goes here
	out, _ := cmd.CombinedOutput()
	got := map[string][2]int{}
	for _, m := range summaryLine.FindAllStringSubmatch(string(out), -1) {
		p, _ := strconv.Atoi(m[2])
		f, _ := strconv.Atoi(m[3])
		got[m[1]] = [2]int{p, f}
	}
	bad := false
	for sc, min := range want {
		r, ok := got[sc]
		switch {
		case !ok:
			t.Errorf("%s: not run", sc)
		case r[1] != 0:
			t.Errorf("%s: %d passed, %d failed", sc, r[0], r[1])
		case r[0] < min:
			t.Errorf("%s: only %d checks ran (want at least %d)", sc, r[0], min)
		default:
			continue
		}
		bad = true
	}
	if bad {
		t.Logf("suite output:\n%s", out)
	}
}
