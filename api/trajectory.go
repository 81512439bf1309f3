package api

import (
	"encoding/json"
	"time"
)

// Kinds of trajectory events.
const (
	// EventControl is a code-mode control call made by the model: exec or wait.
	EventControl = "control"
	// EventDirect is a model-visible tool called directly by the model (a direct-only tool, or any
	// tool when code mode is off).
	EventDirect = "direct"
	// EventNested is a tool call made by a cell (tools.*, MCP.*, a namespace).
	EventNested = "nested"
	// EventApprovalRequest says a call waits for a person's decision.
	EventApprovalRequest = "approval_request"
	// EventApprovalDecision is that decision (or its expiry).
	EventApprovalDecision = "approval_decision"
	// EventUpdate is a progress update a tool streamed while it ran (E1), a cell's phase() or
	// log() note, or a child agent's step.
	EventUpdate = "update"
	// EventDropped says how many events of the call it names a bounded recorder left out
	// (Result: {count, reason, message}): the audit log's own limits, said in the log.
	EventDropped = "dropped"
	// EventAgent is a child agent a cell started with agents.run (tools.swarm), recorded when it
	// ends: CallID is the agents.run call, ParentCallID its exec; the child's own calls are
	// recorded under its own run (RunID "<parent run id>/<call id>") with ParentCallID the
	// agents.run call.
	EventAgent = "agent"
)

// TrajectoryEvent is one record of a run's trajectory (E2): every control call, direct call and
// nested call as a real tool call — who made it, its input and result, how it ended — plus
// approvals and progress updates. Nested calls name the exec call that made them (ParentCallID);
// an exec or wait lists the nested calls whose results it delivered into the VM (Delivered), so
// a support bundle can show exec → nested calls, wait → the calls it delivered.
type TrajectoryEvent struct {
	// Kind is one of the Event* constants.
	Kind string `json:"kind"`
	// Time is when the call started, or when the event happened.
	Time time.Time `json:"time"`
	// Run is the run the event belongs to.
	Run RunContext `json:"run"`
	// CallID identifies the call: the model's tool call id for control and direct calls,
	// "<exec call id>/<n>" for nested calls.
	CallID string `json:"callId"`
	// ParentCallID is the exec call that made a nested call (or started a child agent); for the
	// calls of a child agent's own model, the agents.run call that started the child.
	ParentCallID string `json:"parentCallId,omitempty"`
	// CodeModeRunID is the runId of a suspended code-mode run the call belongs to, when it has one.
	CodeModeRunID string `json:"codeModeRunId,omitempty"`
	// Tool is "exec" or "wait", a catalog id for nested calls, the tool's name for direct calls.
	Tool string `json:"tool"`
	// Title is an exec's optional title (one bounded line).
	Title string `json:"title,omitempty"`
	// Input is what ran.
	Input json.RawMessage `json:"input,omitempty"`
	// OriginalInput is what was asked for, when a hook rewrote it.
	OriginalInput json.RawMessage `json:"originalInput,omitempty"`
	// Status: completed, waiting or failed for control calls; ok or error for tool calls;
	// requested for approval requests; approved, rejected or expired for decisions; for child
	// agents completed, failed, cancelled, timeout, invalid (no valid structured value) or
	// refused (never started).
	Status string `json:"status"`
	// Result is the call's result (bounded, secrets redacted): the CodeModeResult of a control
	// call, the tool's result of a tool call.
	Result json.RawMessage `json:"result,omitempty"`
	// Error says why a call failed.
	Error string `json:"error,omitempty"`
	// DurationMs is the call's wall time.
	DurationMs int64 `json:"durationMs,omitempty"`
	// Delivered lists the nested calls whose results this exec or wait delivered into the VM.
	Delivered []string `json:"delivered,omitempty"`
	// Approval details an approval request or decision.
	Approval *ApprovalInfo `json:"approval,omitempty"`
	// Update is the content of a progress update.
	Update *ContentBlock `json:"update,omitempty"`
}

// ApprovalInfo details an approval event.
type ApprovalInfo struct {
	// Prompt is what the person was asked.
	Prompt string `json:"prompt,omitempty"`
	// By says who decided: "person" (through an Approver or the library's Decide), "fallback"
	// (nobody could be asked), "timeout", "policy".
	By string `json:"by,omitempty"`
	// Reason is the decision's reason (shown to the cell on a rejection).
	Reason string `json:"reason,omitempty"`
	// Expires is when an approval request is rejected if nobody decides.
	Expires time.Time `json:"expires,omitzero"`
}

// Trajectory receives trajectory events. Record is called synchronously on the path of the call
// it describes, possibly from many goroutines at once: implementations must be quick and safe for
// concurrent use (buffer, never block on a slow disk or network).
type Trajectory interface {
	// Record receives one event.
	Record(ev TrajectoryEvent)
}
