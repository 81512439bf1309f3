package api

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ApprovalRule says which calls need a person's approval. Rules apply to every call through the
// one gate: nested calls of a cell, namespace calls and direct calls of the model.
type ApprovalRule struct {
	// Match is a catalog id or tool name, with '*' and '?' globs: "native:core:write",
	// "mcp:github:*", "mcp:*:delete*".
	Match string `json:"match"`
	// Prompt is shown to the person; "" means a description of the call.
	Prompt string `json:"prompt,omitempty"`
	// Timeout is how long a decision may take before the call is rejected; 0 means the code-mode
	// run's snapshot TTL.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Fallback applies when no person can be asked (no Approver, or a client that cannot elicit):
	// FallbackDeny (the default) or FallbackAllow.
	Fallback string `json:"fallback,omitempty"`
}

// Fallback values of an ApprovalRule.
const (
	FallbackDeny  = "deny"
	FallbackAllow = "allow"
)

// Approvals is the approval policy of a runtime.
type Approvals struct {
	// Rules are tried in order; the first whose Match fits a call decides that it needs a
	// person's approval, and how.
	Rules []ApprovalRule
	// ExemptReadOnly lets tools declared ReadOnly run without approval even when a rule matches.
	ExemptReadOnly bool
}

// ApprovalRequest is a call waiting for a person's decision.
type ApprovalRequest struct {
	// CallID identifies the call: decisions name it.
	CallID string `json:"id"`
	// Tool is the catalog id of a nested call, or the name of a direct tool.
	Tool string `json:"tool"`
	// Input is the call's input, after hooks.
	Input json.RawMessage `json:"input"`
	// Prompt is what the person is asked: the matching rule's or hook's prompt, or a
	// description of the call.
	Prompt string `json:"prompt"`
	// Expires is when the request is rejected if nobody decided.
	Expires time.Time `json:"expiresAt"`
	// ReadOnly says the tool declares itself free of side effects.
	ReadOnly bool `json:"readOnly,omitempty"`
	// Fallback is what the policy says when nobody can be asked: FallbackDeny or FallbackAllow.
	Fallback string `json:"fallback,omitempty"`
	// Run is the run the call belongs to.
	Run RunContext `json:"-"`
	// RunID is the code-mode runId of the suspended run the call belongs to, when it has one
	// (what Surface.Decide takes).
	RunID string `json:"-"`
}

// Decision is a verdict on an ApprovalRequest.
type Decision struct {
	// Approve lets the call run; false rejects it (the cell gets a catchable error with code
	// "not_approved").
	Approve bool
	// Reason is shown to the cell when the call is rejected, and kept in the trajectory.
	Reason string
	// By names who decided, for the audit log ("terminal", a user name, "elicitation"…).
	By string
}

// ErrNoApprover is what an Approver returns when nobody can be asked for this run (for example
// an MCP client without elicitation): the rule's Fallback then applies.
var ErrNoApprover = errors.New("no person can be asked to approve this call")

// Approver asks a person to decide. Ask blocks until the person answers, ctx ends or the
// request expires; it is called on its own goroutine, and a cell keeps running meanwhile.
// Without an Approver, approval-gated nested calls suspend the run: exec or wait returns waiting
// with reason "approval", and the embedder calls Surface.Decide.
type Approver interface {
	// Ask puts req to a person and returns their decision; ErrNoApprover when nobody can be
	// asked (the rule's Fallback applies), another error rejects the call.
	Ask(ctx context.Context, req ApprovalRequest) (Decision, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Decision, error)

// Ask calls f.
func (f ApproverFunc) Ask(ctx context.Context, req ApprovalRequest) (Decision, error) {
	return f(ctx, req)
}
