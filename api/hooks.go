package api

import (
	"context"
	"encoding/json"
)

// ToolKind values carried by hook events so policies can tell a code-mode cell from a shell
// command that shares the tool name `exec` (X5).
const (
	ToolKindCodeModeExec = "code_mode_exec"
	ToolKindCodeModeWait = "code_mode_wait"
	ToolKindTool         = "tool"
)

// ToolCallEvent is what a before_tool_call hook sees: a nested catalog call made by a cell, or
// the exec/wait call itself.
type ToolCallEvent struct {
	// ToolID is the catalog id (native:core:read, mcp:github:create_issue) or "exec"/"wait".
	ToolID string `json:"toolId"`
	// ToolName is the tool's own name.
	ToolName string `json:"toolName"`
	// Source of the tool; empty for exec/wait.
	Source Source `json:"source,omitempty"`
	// ToolKind is ToolKindCodeModeExec for a code-mode exec, ToolKindTool for nested calls.
	ToolKind string `json:"toolKind"`
	// ToolInputKind is "javascript" or "typescript" for a code-mode exec.
	ToolInputKind string `json:"toolInputKind,omitempty"`
	// Input is the call's input as it would run: the model's or the cell's, after earlier
	// hooks' rewrites.
	Input json.RawMessage `json:"input"`
	// Run is the run the call belongs to: who asked, through which channel, with which model.
	Run RunContext `json:"run"`
	// ParentCallID identifies the code-mode exec call that made a nested call.
	ParentCallID string `json:"parentCallId,omitempty"`
	// Nested is true for calls made from a cell.
	Nested bool `json:"nested"`
}

// HookDecision is a hook's verdict. The zero value lets the call proceed unchanged.
type HookDecision struct {
	// Block refuses the call (the guest sees a catchable error with code "blocked").
	Block bool
	// Reason says why it was blocked: the cell and the trajectory see it.
	Reason string
	// Input, when non-nil, replaces the call's input (a trusted rewrite). The rewritten input is
	// what runs; the trajectory keeps both.
	Input json.RawMessage
	// RequireApproval makes the call wait for a person's decision (see Approver), whatever the
	// approval rules say.
	RequireApproval bool
	// ApprovalPrompt is shown to that person ("" means a description of the call).
	ApprovalPrompt string
}

// BeforeToolCallHook inspects, rewrites or blocks a call before it runs. Hooks run in
// registration order; the first block wins; rewrites chain.
type BeforeToolCallHook func(ctx context.Context, ev *ToolCallEvent) (HookDecision, error)
