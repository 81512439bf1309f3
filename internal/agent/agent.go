// Package agent is the agent loop of `codemode agent`: it sends the run's model-facing tools
// (exec, wait and the direct-only tools) to a model provider, executes the tool calls the model
// makes through the run's codemode.Surface, and feeds the results back until the model answers
// without calling a tool. It knows nothing about the sandbox: everything goes through
// Surface.Handle, the same entry the MCP gateway uses.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/provider"
)

// DefaultMaxTurns bounds the model calls of one run.
const DefaultMaxTurns = 20

// DefaultSystem is the system prompt when Options.System is empty. The exec tool's description
// carries the instructions for writing cells; this only frames the run.
const DefaultSystem = "You are a capable assistant with tools. Use them to answer; when you have the answer, reply with it in plain text without calling a tool."

// Options configure Run.
type Options struct {
	// Client talks to the model provider. Its CheckPayload should be the surface's (A10).
	Client provider.Client
	// Model is the provider's model name.
	Model string
	// System is the system prompt; "" means DefaultSystem.
	System string
	// MaxTurns bounds the model calls; 0 means DefaultMaxTurns.
	MaxTurns int
	// MaxTokens bounds each reply (0: the provider's default).
	MaxTokens int
	// Progress receives what happens, as it happens (nil: nothing).
	Progress Progress
	// Approver decides the calls a run waits on (reason "approval") when the runtime has no
	// Approver of its own (codemode.Options.Approver nil: "the embedder decides"): the loop asks
	// it about each pending call and settles it with Surface.Decide before continuing the run.
	// Leave it nil when the runtime has an Approver — that one is already asking, and the loop
	// only continues the run until the person answered. With neither, a pending call waits
	// until its approval rule's timeout rejects it.
	Approver api.Approver
	// Trajectory receives a record of each call the loop refuses itself — arguments that are
	// not a JSON object never reach the surface — so the transcript has every call the model
	// made (the surface records the rest through the runtime's trajectory).
	Trajectory api.Trajectory
}

// Progress is told about model turns and control calls. The nested calls of a cell reach it
// through the runtime's trajectory (see NewProgress).
type Progress interface {
	Turn(n int, resp *provider.Response, d time.Duration)
	CallStart(call provider.ToolCall)
	CallEnd(call provider.ToolCall, res codemode.CallResult, d time.Duration)
}

// Result is the outcome of a run.
type Result struct {
	// Answer is the model's final text.
	Answer string
	// Turns is the number of model calls.
	Turns int
	// ToolCalls is the number of tool calls the model made.
	ToolCalls int
	// Usage adds up the tokens the provider reported.
	Usage provider.Usage
	// Messages is the whole conversation, final answer included.
	Messages []provider.Message
}

// ErrMaxTurns is returned when the model still calls tools after MaxTurns model calls.
var ErrMaxTurns = errors.New("the model was still calling tools when the turn limit was reached")

// Run drives one agent run from a user prompt to the model's final answer.
func Run(ctx context.Context, s *codemode.Surface, opts Options, prompt string) (*Result, error) {
	return run(ctx, s, opts, &Result{Messages: []provider.Message{{Role: provider.RoleUser, Text: prompt}}}, loopHooks{})
}

// loopHooks are the child agents' additions to the loop (Runner): a review of the final answer
// and checkpoints of the conversation.
type loopHooks struct {
	review     func(answer string) string
	checkpoint func(res *Result)
}

// run continues the conversation in res until the model answers without calling a tool.
func run(ctx context.Context, s *codemode.Surface, opts Options, res *Result, h loopHooks) (*Result, error) {
	if opts.Client == nil {
		return nil, errors.New("agent: no provider client")
	}
	maxTurns := opts.MaxTurns
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	system := opts.System
	if system == "" {
		system = DefaultSystem
	}
	tools := toolDefs(s)
	for res.Turns < maxTurns {
		start := time.Now()
		resp, err := opts.Client.Complete(ctx, provider.Request{Model: opts.Model, System: system,
			Messages: res.Messages, Tools: tools, MaxTokens: opts.MaxTokens})
		res.Turns++
		if err != nil {
			return res, err
		}
		res.Usage.InputTokens += resp.Usage.InputTokens
		res.Usage.OutputTokens += resp.Usage.OutputTokens
		if opts.Progress != nil {
			opts.Progress.Turn(res.Turns, resp, time.Since(start))
		}
		res.Messages = append(res.Messages, provider.Message{Role: provider.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
		if len(resp.ToolCalls) == 0 {
			if h.review != nil {
				if correction := h.review(resp.Text); correction != "" {
					res.Messages = append(res.Messages, provider.Message{Role: provider.RoleUser, Text: correction})
					continue
				}
			}
			res.Answer = resp.Text
			return res, nil
		}
		if h.checkpoint != nil {
			h.checkpoint(res) // before the calls run: a replica that continues knows they started
		}
		results := make([]provider.ToolResult, 0, len(resp.ToolCalls))
		for _, call := range resp.ToolCalls {
			res.ToolCalls++
			results = append(results, handle(ctx, s, call, &opts))
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
		}
		res.Messages = append(res.Messages, provider.Message{Role: provider.RoleTool, Results: results})
		if h.checkpoint != nil {
			h.checkpoint(res)
		}
	}
	return res, fmt.Errorf("%w (%d)", ErrMaxTurns, maxTurns)
}

// maxBusyRetries bounds the retries of a busy wait (each at most 5 s apart).
const maxBusyRetries = 24

// handle executes one tool call and turns the outcome into the tool result the model reads.
func handle(ctx context.Context, s *codemode.Surface, call provider.ToolCall, opts *Options) provider.ToolResult {
	p := opts.Progress
	out := provider.ToolResult{CallID: call.ID, Name: call.Name}
	if call.Malformed != "" {
		// Never run a call with arguments we had to guess: tell the model what was wrong, and
		// show and record the refusal like any other call.
		out.Content = fmt.Sprintf("The arguments of this %s call are not a JSON object (%s); nothing ran. Call it again with valid JSON arguments.", call.Name, call.Malformed)
		out.IsError = true
		refused(s, call, opts)
		return out
	}
	if p != nil {
		p.CallStart(call)
	}
	start := time.Now()
	r := s.Handle(ctx, call.ID, call.Name, call.Arguments)
	// A busy run (another wait holds it, or a stopped replica's hold has not run out yet) is not
	// the model's to handle: wait the retryAfterMs it names and call again (docs/semantics.md §4).
	for i := 1; r.Exec != nil && r.Exec.Code == api.CodeBusy && i <= maxBusyRetries && ctx.Err() == nil; i++ {
		d := min(max(time.Duration(r.Exec.RetryAfterMs)*time.Millisecond, 10*time.Millisecond), 5*time.Second)
		select {
		case <-ctx.Done():
		case <-time.After(d):
			r = s.Handle(ctx, fmt.Sprintf("%s#busy-%d", call.ID, i), call.Name, call.Arguments)
		}
	}
	// A run waiting for a person's decision is continued by the runtime, not the model: the
	// person is being asked (the Approver), and the model has nothing to add meanwhile. Each
	// continuation is a wait of its own in the trajectory.
	for i := 1; r.Exec != nil && r.Exec.Status == api.StatusWaiting && r.Exec.Reason == api.ReasonApproval && ctx.Err() == nil; i++ {
		if opts.Approver != nil {
			decide(ctx, s, opts.Approver, r.Exec)
		}
		w := s.Wait(ctx, fmt.Sprintf("%s#approval-wait-%d", call.ID, i), codemode.WaitInput{RunID: r.Exec.RunID})
		r = codemode.CallResult{Exec: &w}
	}
	if p != nil {
		p.CallEnd(call, r, time.Since(start))
	}
	out.Content, out.IsError = ResultText(r), r.IsError()
	return out
}

// refused reports a call the loop did not run: a line on the progress stream and a failed event
// in the trajectory, with the arguments as the model sent them (as a JSON string: they are not
// valid JSON).
func refused(s *codemode.Surface, call provider.ToolCall, opts *Options) {
	reason := "refused: " + call.Malformed
	if p := opts.Progress; p != nil {
		p.CallStart(call)
		p.CallEnd(call, codemode.CallResult{Err: errors.New(reason)}, 0)
	}
	if opts.Trajectory == nil {
		return
	}
	kind, status := api.EventDirect, "error"
	if s.Active() && (call.Name == "exec" || call.Name == "wait") {
		kind, status = api.EventControl, api.StatusFailed
	}
	raw, _ := json.Marshal(call.RawArguments)
	opts.Trajectory.Record(api.TrajectoryEvent{Kind: kind, Time: time.Now(), Run: s.RunContext(), CallID: call.ID,
		Tool: call.Name, Input: raw, Status: status, Error: reason})
}

// decide asks a about each call the waiting run res lists and settles it. A failing approver
// rejects (the cell gets a catchable error rather than a run that never ends); a decision the
// runtime refuses (the call expired or was settled meanwhile) changes nothing.
func decide(ctx context.Context, s *codemode.Surface, a api.Approver, res *api.ExecResult) {
	for _, req := range res.PendingApprovals {
		dec, err := a.Ask(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			dec = api.Decision{By: "agent", Reason: "the approver failed: " + err.Error()}
		}
		_ = s.Decide(ctx, res.RunID, req.CallID, dec)
	}
}

// ResultText is a call's result as the model reads it. A waiting exec or wait result says how to
// continue: the JSON alone leaves a model guessing whether to call wait or exec again.
func ResultText(r codemode.CallResult) string {
	text := r.Text()
	if r.Exec != nil && r.Exec.Status == api.StatusWaiting {
		arg, _ := json.Marshal(codemode.WaitInput{RunID: r.Exec.RunID})
		text += "\nThe run is still going (" + r.Exec.Reason + "). To continue it and get its result, call the wait tool with " + string(arg) + "."
	}
	return text
}

func toolDefs(s *codemode.Surface) []provider.ToolDef {
	mts := s.Tools()
	out := make([]provider.ToolDef, len(mts))
	for i, t := range mts {
		out[i] = provider.ToolDef{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	return out
}
