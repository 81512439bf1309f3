package api

import "encoding/json"

// Status values of an ExecResult.
const (
	StatusCompleted = "completed"
	StatusWaiting   = "waiting"
	StatusFailed    = "failed"
)

// ErrorCode says why an exec or wait failed (the `code` of a failed result; docs/semantics.md
// lists when each is used).
type ErrorCode string

// Error codes of failed results: the contract's six (docs/semantics.md, Z), then ours.
const (
	CodeInvalidInput       ErrorCode = "invalid_input"
	CodeRuntimeUnavailable ErrorCode = "runtime_unavailable"
	CodeTimeout            ErrorCode = "timeout"
	CodeOutputLimit        ErrorCode = "output_limit_exceeded"
	CodeSnapshotLimit      ErrorCode = "snapshot_limit_exceeded"
	CodeInternal           ErrorCode = "internal_error"
	// CodeBlocked: a before_tool_call hook refused the exec or wait itself.
	CodeBlocked ErrorCode = "blocked"
	// CodeHookFailed: a before_tool_call hook returned an error for the exec or wait.
	CodeHookFailed ErrorCode = "hook_failed"
	// CodeOverloaded: the process runs as many execs/waits as its admission limits allow and
	// its queue is full (or the wait for a slot outlasted timeoutMs). Retry later.
	CodeOverloaded ErrorCode = "overloaded"
	// CodeNotApproved: an approval rule or hook asked a person about the exec or wait itself
	// and they (or the fallback) said no. Nested calls refused this way throw a ToolError with
	// this code inside the cell instead.
	CodeNotApproved ErrorCode = "not_approved"
	// CodeApprovalExpired: the decision did not come before the request expired; the call was
	// not run. Seen by cells as a ToolError code.
	CodeApprovalExpired ErrorCode = "approval_expired"
	// CodeRunStore: the shared run store (runStore.redis) cannot be reached or refused a record
	// (another key, a tampered record). The operator's to fix; a wait can be retried later.
	CodeRunStore ErrorCode = "run_store_error"
	// CodeBusy: another wait holds the run — a concurrent wait, or one on a gateway replica
	// that stopped and whose hold has not run out yet. The run is fine: retry the same wait
	// after RetryAfterMs (the result also carries the RunID).
	CodeBusy ErrorCode = "busy"
	// CodeMemoryLimit: the cell needed more guest heap than memoryLimitBytes; its VM was
	// discarded.
	CodeMemoryLimit ErrorCode = "memory_limit_exceeded"
	// CodeCellError: the cell itself failed: its body threw (the message names the error and
	// its position), its return value cannot become JSON, or it awaited a promise that nothing
	// will settle.
	CodeCellError ErrorCode = "cell_error"
)

// Waiting reasons.
const (
	// ReasonPendingTools: nested calls were still running at the deadline.
	ReasonPendingTools = "pending_tools"
	// ReasonYield: the cell called yield_control.
	ReasonYield = "yield"
	// ReasonApproval: calls wait for a person's decision (pendingApprovals lists them) and
	// nothing else can progress.
	ReasonApproval = "approval"
)

// ExecResult is the CodeModeResult union returned by exec and wait (docs/semantics.md, §3). Exactly the fields
// of its Status are set; MarshalJSON writes only those.
type ExecResult struct {
	// Status is StatusCompleted, StatusWaiting or StatusFailed.
	Status string
	// Value is a completed cell's return value, as JSON (or, when it was larger than
	// maxOutputBytes, a preview and a reference for results.load).
	Value json.RawMessage
	// RunID identifies a waiting run: pass it to wait.
	RunID string
	// Reason says why a run waits: ReasonPendingTools, ReasonYield or ReasonApproval.
	Reason string
	// PendingToolCalls are the nested calls a waiting run still has running.
	PendingToolCalls []PendingToolCall
	// PendingApprovals are the calls waiting for a decision (reason "approval"): decide each with
	// Surface.Decide, then call wait.
	PendingApprovals []ApprovalRequest
	// RestartSafe echoes exec's restartSafe: the run does only read-only work and may be rebuilt
	// from the transcript after a restart (W6).
	RestartSafe bool
	// Error says why a failed exec or wait failed, in a sentence a model can act on.
	Error string
	// Code is a failed result's machine-readable reason (the Code* constants).
	Code ErrorCode
	// RetryAfterMs, on a failed result with Code "busy" (which also carries RunID), says how
	// long to wait before retrying: until the hold of the other wait runs out.
	RetryAfterMs int64
	// Output is what the cell printed with text, json and console, in order.
	Output []Output
	// Untrusted names the sources of untrusted content the cell received before this result
	// (MCP servers not configured as trusted, web_fetch, client tools; "results" for a loaded
	// value saved by such a cell): the value, output and error may carry what they said. Nil
	// when the cell saw none. CallResult.Text shows such a result to a model inside an
	// untrusted-content marking.
	Untrusted []string
	// Telemetry reports the run's catalog and its cumulative searches and calls.
	Telemetry Telemetry
}

// PendingToolCall describes a nested call still running when a run suspended.
type PendingToolCall struct {
	// ID is the nested call's id ("<exec call id>/<n>").
	ID string `json:"id"`
	// Tool is the called tool's catalog id, or yield_control("reason").
	Tool string `json:"tool"`
	// RunningMs is how long the call has been running.
	RunningMs int64 `json:"runningMs"`
}

// Output is one entry of the output array: {type:"text", text} or {type:"json", value}.
type Output struct {
	// Type is "text" (text and console lines) or "json".
	Type string `json:"type"`
	// Text is a text entry's text.
	Text string `json:"text,omitempty"`
	// Value is a json entry's value.
	Value json.RawMessage `json:"value,omitempty"`
}

// MarshalJSON writes exactly the fields of the entry's type.
func (o Output) MarshalJSON() ([]byte, error) {
	if o.Type == "json" {
		v := o.Value
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		return json.Marshal(struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		}{o.Type, v})
	}
	return json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{o.Type, o.Text})
}

// Telemetry is reported on every result (Y1). Counts are cumulative for the run.
type Telemetry struct {
	// CatalogSize is the number of tools hidden behind exec, MCP tools included.
	CatalogSize int `json:"catalogSize"`
	// Sources splits CatalogSize by source.
	Sources SourceCounts `json:"sources"`
	// SearchCount counts the run's tools.search and MCP.$search calls so far.
	SearchCount int `json:"searchCount"`
	// DescribeCount counts the run's tools.describe calls so far.
	DescribeCount int `json:"describeCount"`
	// CallCount counts the run's nested tool calls so far.
	CallCount int `json:"callCount"`
	// VisibleTools are the tools the model sees (exec, wait and the direct-only tools).
	VisibleTools []string `json:"visibleTools"`
	// DurationMs is this exec's or wait's wall time.
	DurationMs int64 `json:"durationMs"`
}

// SourceCounts splits the catalog size by source.
type SourceCounts struct {
	// Native counts the built-in, the embedding program's and the plugins' tools.
	Native int `json:"native"`
	// MCP counts the MCP servers' tools.
	MCP int `json:"mcp"`
	// Client counts the client's tools.
	Client int `json:"client"`
}

// MarshalJSON writes the union member selected by Status.
func (r ExecResult) MarshalJSON() ([]byte, error) {
	tel := r.Telemetry
	if tel.VisibleTools == nil {
		tel.VisibleTools = []string{}
	}
	switch r.Status {
	case StatusCompleted:
		v := r.Value
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		return json.Marshal(struct {
			Status    string          `json:"status"`
			Value     json.RawMessage `json:"value"`
			Output    []Output        `json:"output,omitempty"`
			Untrusted []string        `json:"untrusted,omitempty"`
			Telemetry Telemetry       `json:"telemetry"`
		}{r.Status, v, r.Output, r.Untrusted, tel})
	case StatusWaiting:
		return json.Marshal(struct {
			Status           string            `json:"status"`
			RunID            string            `json:"runId"`
			Reason           string            `json:"reason"`
			PendingToolCalls []PendingToolCall `json:"pendingToolCalls,omitempty"`
			PendingApprovals []ApprovalRequest `json:"pendingApprovals,omitempty"`
			RestartSafe      bool              `json:"restartSafe,omitempty"`
			Output           []Output          `json:"output,omitempty"`
			Untrusted        []string          `json:"untrusted,omitempty"`
			Telemetry        Telemetry         `json:"telemetry"`
		}{r.Status, r.RunID, r.Reason, r.PendingToolCalls, r.PendingApprovals, r.RestartSafe, r.Output, r.Untrusted, tel})
	default:
		var runID string
		var retry int64
		if r.Code == CodeBusy { // the run is alive: say which, and when to try again
			runID, retry = r.RunID, max(r.RetryAfterMs, 1)
		}
		return json.Marshal(struct {
			Status       string    `json:"status"`
			Error        string    `json:"error"`
			Code         ErrorCode `json:"code,omitempty"`
			RunID        string    `json:"runId,omitempty"`
			RetryAfterMs int64     `json:"retryAfterMs,omitempty"`
			Output       []Output  `json:"output,omitempty"`
			Untrusted    []string  `json:"untrusted,omitempty"`
			Telemetry    Telemetry `json:"telemetry"`
		}{StatusFailed, r.Error, r.Code, runID, retry, r.Output, r.Untrusted, tel})
	}
}

// UnmarshalJSON reads any member of the union.
func (r *ExecResult) UnmarshalJSON(b []byte) error {
	var w struct {
		Status           string            `json:"status"`
		Value            json.RawMessage   `json:"value"`
		RunID            string            `json:"runId"`
		Reason           string            `json:"reason"`
		PendingToolCalls []PendingToolCall `json:"pendingToolCalls"`
		PendingApprovals []ApprovalRequest `json:"pendingApprovals"`
		RestartSafe      bool              `json:"restartSafe"`
		Error            string            `json:"error"`
		Code             ErrorCode         `json:"code"`
		RetryAfterMs     int64             `json:"retryAfterMs"`
		Output           []Output          `json:"output"`
		Untrusted        []string          `json:"untrusted"`
		Telemetry        Telemetry         `json:"telemetry"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = ExecResult{Status: w.Status, Value: w.Value, RunID: w.RunID, Reason: w.Reason,
		PendingToolCalls: w.PendingToolCalls, PendingApprovals: w.PendingApprovals, RestartSafe: w.RestartSafe, Error: w.Error, Code: w.Code, RetryAfterMs: w.RetryAfterMs,
		Output: w.Output, Untrusted: w.Untrusted, Telemetry: w.Telemetry}
	return nil
}
