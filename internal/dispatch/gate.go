package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/catalog"
)

// Gate is the one pre-call path of every call: nested calls of a cell, namespace calls, direct
// calls of the model, and the exec and wait calls themselves (E1, X5). It runs the
// before_tool_call hooks in order — the first block wins, rewrites chain into the event's input,
// a hook may require approval — then the approval rules. A Gate is immutable and shared by every
// run of a runtime.
type Gate struct {
	Hooks     []api.BeforeToolCallHook
	Approvals api.Approvals
	// Approver asks a person; nil means decisions come from Surface.Decide (nested calls) and the
	// rules' fallback applies to direct calls.
	Approver api.Approver
	// DefaultTimeout is how long a decision may take when the rule sets none.
	DefaultTimeout time.Duration
	// Trajectory records approval requests and decisions (nil: none).
	Trajectory api.Trajectory
}

// Need says a call needs a person's decision before it runs.
type Need struct {
	Prompt   string
	Timeout  time.Duration
	Fallback string // api.FallbackDeny or api.FallbackAllow
}

// Check runs the hooks, then the approval rules, for a call described by ev (ev.Input is updated
// with any rewrite). It returns nil, nil to go ahead; a Need when a person must decide; or the
// *api.ToolError that refuses the call. readOnly exempts the call from the rules when the policy
// exempts read-only tools; label names the call in messages. The rules never apply to exec and
// wait themselves (approval is for the tools a cell calls), only hooks do.
func (g *Gate) Check(ctx context.Context, ev *api.ToolCallEvent, readOnly bool, label string) (*Need, error) {
	var need *Need
	for _, h := range g.Hooks {
		dec, err := h(ctx, ev)
		if err != nil {
			return nil, &api.ToolError{Name: "Error", Code: string(api.CodeHookFailed), Message: fmt.Sprintf("a before_tool_call hook failed for %s: %v", label, err)}
		}
		if dec.Block {
			reason := dec.Reason
			if reason == "" {
				reason = "blocked by policy"
			}
			return nil, &api.ToolError{Name: "Error", Code: string(api.CodeBlocked), Message: fmt.Sprintf("%s was blocked: %s", label, reason)}
		}
		if dec.Input != nil {
			if !json.Valid(dec.Input) {
				return nil, &api.ToolError{Name: "Error", Code: string(api.CodeHookFailed), Message: "a before_tool_call hook rewrote the input of " + label + " to invalid JSON"}
			}
			ev.Input = dec.Input
		}
		if dec.RequireApproval && need == nil {
			need = &Need{Prompt: dec.ApprovalPrompt, Timeout: g.DefaultTimeout, Fallback: api.FallbackDeny}
		}
	}
	if need != nil {
		return need, nil
	}
	if ev.ToolKind == api.ToolKindCodeModeExec || ev.ToolKind == api.ToolKindCodeModeWait {
		return nil, nil
	}
	if readOnly && g.Approvals.ExemptReadOnly {
		return nil, nil
	}
	for _, r := range g.Approvals.Rules {
		if !catalog.Match(r.Match, ev.ToolName, ev.ToolID) {
			continue
		}
		n := &Need{Prompt: r.Prompt, Timeout: r.Timeout, Fallback: r.Fallback}
		if n.Timeout <= 0 {
			n.Timeout = g.DefaultTimeout
		}
		if n.Fallback == "" {
			n.Fallback = api.FallbackDeny
		}
		return n, nil
	}
	return nil, nil
}

// prompt is the text a person sees when a rule gives none.
func prompt(need *Need, tool string, input json.RawMessage) string {
	if need.Prompt != "" {
		return need.Prompt
	}
	in := string(input)
	if len(in) > 300 {
		in = in[:300] + "…"
	}
	return fmt.Sprintf("Allow %s with input %s?", tool, in)
}

// decideNow resolves a need for a call that cannot wait in a suspended run (a direct call of the
// model, an exec): the Approver is asked and waited for until the need's timeout; without one,
// or when it cannot ask anybody, the fallback applies.
func (g *Gate) decideNow(ctx context.Context, need *Need, req api.ApprovalRequest) (api.Decision, string) {
	if g.Approver == nil {
		return fallback(need), "fallback"
	}
	actx, cancel := context.WithDeadline(ctx, req.Expires)
	defer cancel()
	dec, err := g.Approver.Ask(actx, req)
	switch {
	case err == nil:
		return dec, "person"
	case isNoApprover(err):
		return fallback(need), "fallback"
	case actx.Err() != nil && ctx.Err() == nil:
		return api.Decision{Reason: "nobody decided within " + need.Timeout.String()}, "timeout"
	}
	return api.Decision{Reason: "the approver failed: " + err.Error()}, "approver error"
}

func fallback(need *Need) api.Decision {
	if need.Fallback == api.FallbackAllow {
		return api.Decision{Approve: true, Reason: "no person can be asked; the policy allows it", By: "fallback"}
	}
	return api.Decision{Reason: "no person can be asked to approve it", By: "fallback"}
}

// Authorize is the gate for a call that runs now or never: hooks, rules and — when a decision is
// needed — decideNow. It returns the *api.ToolError refusing the call, or nil.
func (g *Gate) Authorize(ctx context.Context, ev *api.ToolCallEvent, readOnly bool, label, callID string) error {
	need, err := g.Check(ctx, ev, readOnly, label)
	if err != nil || need == nil {
		return err
	}
	req := api.ApprovalRequest{CallID: callID, Tool: label, Input: ev.Input, Prompt: prompt(need, label, ev.Input),
		Expires: time.Now().Add(need.Timeout), ReadOnly: readOnly, Fallback: need.Fallback, Run: ev.Run}
	g.recordRequest(req, ev.ParentCallID)
	dec, by := g.decideNow(ctx, need, req)
	g.recordDecision(req, ev.ParentCallID, dec, by, false)
	return refusal(label, dec, false)
}

// refusal is the guest's error for a rejected (or expired) call, nil for an approved one.
func refusal(label string, dec api.Decision, expired bool) error {
	if dec.Approve {
		return nil
	}
	if expired {
		return &api.ToolError{Name: "Error", Code: string(api.CodeApprovalExpired), Message: fmt.Sprintf("%s was not run: the approval request expired (%s)", label, dec.Reason)}
	}
	reason := dec.Reason
	if reason == "" {
		reason = "rejected"
	}
	return &api.ToolError{Name: "Error", Code: string(api.CodeNotApproved), Message: fmt.Sprintf("%s was not approved: %s", label, reason)}
}

func (g *Gate) recordRequest(req api.ApprovalRequest, parent string) {
	if g.Trajectory == nil {
		return
	}
	g.Trajectory.Record(api.TrajectoryEvent{Kind: api.EventApprovalRequest, Time: time.Now(), Run: req.Run,
		CallID: req.CallID, ParentCallID: parent, CodeModeRunID: req.RunID, Tool: req.Tool, Input: req.Input,
		Status: "requested", Approval: &api.ApprovalInfo{Prompt: req.Prompt, Expires: req.Expires}})
}

func (g *Gate) recordDecision(req api.ApprovalRequest, parent string, dec api.Decision, by string, expired bool) {
	if g.Trajectory == nil {
		return
	}
	status := "rejected"
	switch {
	case expired:
		status = "expired"
	case dec.Approve:
		status = "approved"
	}
	who := dec.By
	if who == "" {
		who = by
	} else if by != "" && by != "person" {
		who = by + ": " + who
	}
	g.Trajectory.Record(api.TrajectoryEvent{Kind: api.EventApprovalDecision, Time: time.Now(), Run: req.Run,
		CallID: req.CallID, ParentCallID: parent, CodeModeRunID: req.RunID, Tool: req.Tool, Status: status,
		Approval: &api.ApprovalInfo{By: who, Reason: dec.Reason}})
}
