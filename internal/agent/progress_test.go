package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/provider"
)

// TestPrinterGolden: what a person sees on stderr for turns, control calls, nested calls,
// updates and approvals (E1, issue 10's progress display).
func TestPrinterGolden(t *testing.T) {
	var buf bytes.Buffer
	p := NewPrinter(&buf)
	exec := provider.ToolCall{ID: "call_1", Name: "exec"}
	p.Turn(1, &provider.Response{ToolCalls: []provider.ToolCall{exec}}, 1200*time.Millisecond)
	p.CallStart(exec)
	p.Record(api.TrajectoryEvent{Kind: api.EventNested, Tool: "native:core:read", DurationMs: 3, Status: "ok"})
	p.Record(api.TrajectoryEvent{Kind: api.EventUpdate, Tool: "client:cli:build", Update: &api.ContentBlock{Type: "text", Text: "step 1\nof   3"}})
	p.Record(api.TrajectoryEvent{Kind: api.EventUpdate, Tool: "client:cli:build", Update: &api.ContentBlock{Type: "image"}})
	p.Record(api.TrajectoryEvent{Kind: api.EventApprovalRequest, Tool: "native:core:write"})
	p.Record(api.TrajectoryEvent{Kind: api.EventApprovalDecision, Tool: "native:core:write", Status: "rejected", Approval: &api.ApprovalInfo{By: "terminal"}})
	p.Record(api.TrajectoryEvent{Kind: api.EventNested, Tool: "native:core:write", Status: "error", Error: "native:core:write: not approved: " + strings.Repeat("x", 300)})
	p.CallEnd(exec, codemode.CallResult{Exec: &api.ExecResult{Status: api.StatusWaiting, Reason: "pending_tools", RunID: "run_1"}}, 850*time.Microsecond)
	wait := provider.ToolCall{ID: "call_2", Name: "wait"}
	p.Turn(2, &provider.Response{ToolCalls: []provider.ToolCall{wait, exec}}, 15*time.Second)
	p.CallEnd(wait, codemode.CallResult{Exec: &api.ExecResult{Status: api.StatusFailed, Error: "code mode run is unavailable or expired."}}, 12*time.Millisecond)
	p.CallEnd(provider.ToolCall{ID: "call_3", Name: "image"}, codemode.CallResult{Err: errors.New("unknown tool")}, time.Millisecond)
	p.CallEnd(provider.ToolCall{ID: "call_4", Name: "image"}, codemode.CallResult{Tool: &api.Result{IsError: true}}, time.Millisecond)
	p.CallEnd(provider.ToolCall{ID: "call_5", Name: "image"}, codemode.CallResult{Tool: &api.Result{Details: json.RawMessage(`{}`)}}, time.Millisecond)
	p.Turn(3, &provider.Response{Text: "done"}, 90*time.Millisecond)
	golden(t, "progress.golden", buf.String())
}

// TestPrinterHostileText: escape sequences, bidi overrides and newlines from tools, servers
// and cells never reach the terminal.
func TestPrinterHostileText(t *testing.T) {
	var buf bytes.Buffer
	p := NewPrinter(&buf)
	evil := "\x1b[2J\x1b]0;pwned\x07 evil\u202etxt.exe\nnext line\r\x00"
	p.Record(api.TrajectoryEvent{Kind: api.EventNested, Tool: "mcp:x:" + evil, Status: "error", Error: evil})
	p.Record(api.TrajectoryEvent{Kind: api.EventUpdate, Tool: evil, Update: &api.ContentBlock{Type: "text", Text: evil}})
	p.Record(api.TrajectoryEvent{Kind: api.EventApprovalDecision, Tool: evil, Status: "approved", Approval: &api.ApprovalInfo{By: evil}})
	p.CallEnd(provider.ToolCall{ID: evil, Name: evil}, codemode.CallResult{Err: errors.New(evil)}, time.Millisecond)
	var term bytes.Buffer
	tm := NewTerminal(strings.NewReader(evil+"\n"), &term)
	tm.Echo = true
	tm.Ask(t.Context(), api.ApprovalRequest{Tool: evil, Prompt: evil, Input: json.RawMessage(`"` + "\u202e" + `"`)})
	for name, out := range map[string]string{"progress": buf.String(), "terminal": term.String()} {
		for _, bad := range []string{"\x1b", "\x07", "\u202e", "\r", "\x00", "\nnext line"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s output has %q:\n%q", name, bad, out)
			}
		}
	}
}
