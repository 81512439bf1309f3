package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/internal/provider/scripted"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden files")

// conversation exercises every rendering rule: system prompt, text, tool calls with and
// without text, a malformed call, results (one an error), and text beside results.
var conversation = Request{
	Model: "test-model", System: "You write code-mode cells.", Tools: surface, MaxTokens: 1024,
	Messages: []Message{
		{Role: RoleUser, Text: "List the unpaid shipments."},
		{Role: RoleAssistant, Text: "Searching the catalog.", ToolCalls: []ToolCall{
			{ID: "call_1", Name: "exec", Arguments: json.RawMessage(`{"code":"return ALL_TOOLS.length"}`), RawArguments: `{"code":"return ALL_TOOLS.length"}`}}},
		{Role: RoleTool, Results: []ToolResult{{CallID: "call_1", Name: "exec", Content: `{"status":"completed","value":42}`}}},
		{Role: RoleAssistant, ToolCalls: []ToolCall{
			{ID: "call_2", Name: "exec", RawArguments: `{"code": "return`, Malformed: "the arguments are not valid JSON"},
			{ID: "call_3", Name: "wait", Arguments: json.RawMessage(`{"runId":"r1"}`)}}},
		{Role: RoleTool, Text: "Please continue.", Results: []ToolResult{
			{CallID: "call_2", Name: "exec", Content: "malformed arguments: the arguments are not valid JSON", IsError: true},
			{CallID: "call_3", Name: "wait", Content: `{"status":"failed","error":"code mode run is unavailable or expired.","code":"invalid_input"}`, IsError: true}}},
	},
}

// TestGoldenRequests pins the exact bodies each provider is sent (go test -update rewrites).
func TestGoldenRequests(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) {
			srv := scripted.New(t, scripted.Say("ok"))
			c := newClient(t, srv, v, nil)
			if _, err := c.Complete(context.Background(), conversation); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := json.Indent(&out, srv.Requests()[0].Body, "", "  "); err != nil {
				t.Fatal(err)
			}
			out.WriteByte('\n')
			golden(t, "request_"+strings.ReplaceAll(v.String(), "/", "_")+".golden.json", out.Bytes())
		})
	}
}

// TestGoldenRedacted pins the full-redacted snapshot of a body with credentials and long text.
func TestGoldenRedacted(t *testing.T) {
	body := `{"model":"m","api_key":"abc","headers":{"Authorization":"Bearer xyz123456789","X-Api-Key":"k"},` +
		`"messages":[{"role":"user","content":"token sk-proj-ABCDEFGHIJKLMNOPQRSTUV and ` + strings.Repeat("ü", 300) + `"}],` +
		`"max_tokens":100,"temperature":0.25,"nested":[[[{"password":"hunter2"}]]]}`
	got := redactedSnapshot([]byte(body), "", snapshotLimit)
	golden(t, "redacted.golden.json", []byte(got+"\n"))
	small := redactedSnapshot([]byte(body), "", 200)
	if len(small) > 200 {
		t.Errorf("snapshot of %d bytes with a 200 limit", len(small))
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
