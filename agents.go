package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/catalog"
	"github.com/codemode-go/codemode/internal/contract"
	"github.com/codemode-go/codemode/internal/dispatch"
	"github.com/codemode-go/codemode/internal/swarm"
)

// Child agents (tools.swarm, Options.Swarm): a cell's agents.run starts a one-shot agent whose
// tool calls go through a child Surface — a subset of the parent's tools, its own catalog and
// trajectory subtree, no approval prompts — and whose model conversation an AgentRunner drives.
// internal/swarm decides when a child may run; this file builds and ends it.

// AgentRunner runs the child agents that cells start with agents.run (Options.Swarm). The
// runtime calls RunAgent on a goroutine of its own for each child; it must be safe for
// concurrent use. A runner gives the model task.Surface's tools (Surface.Tools), passes every
// call the model makes to task.Surface.Handle, and returns the model's final text when it
// answers without calling a tool. The runtime checks the structured result, enforces the
// limits and records everything; ctx ends when the child's parent run ends or its time is up.
//
// The built-in runner — the loop `codemode agent` runs, over an OpenAI-compatible or Anthropic
// API, which `codemode agent` and `codemode serve` use — is package agentloop: linked (by an
// import, or through the gateway package) it is the default for a Swarm that names its model.
type AgentRunner interface {
	// RunAgent runs one child agent to its final answer, or fails (the cell's agents.run
	// rejects with the error).
	RunAgent(ctx context.Context, task *AgentTask) (answer string, err error)
}

// AgentTask is one child agent to run.
type AgentTask struct {
	// Prompt is what the cell asked of the child (agents.run's first argument): the first user
	// message.
	Prompt string
	// System is the system prompt the runtime suggests for children.
	System string
	// Model is the model the cell asked for (agents.run's model option, within
	// tools.swarm.model.models), or "" for the runner's own.
	Model string
	// Label names the child (agents.run's label option; may be "").
	Label string
	// Surface is the child's tool surface: exec and wait over a subset of the parent run's tools
	// (tools.swarm.tools), plus the structured_output tool when the cell asked for a schema.
	Surface *Surface
	// MaxTurns bounds the child's model calls (tools.swarm.maxTurns).
	MaxTurns int
	// Review, when not nil, is called with the model's final answer before the runner returns
	// it. A non-empty result is a correction to send the model as a user message, continuing the
	// conversation instead of finishing (it asks at most once: the schema's nudge).
	Review func(answer string) (correction string)
	// Checkpoint, when not nil (a shared run store is configured), records what the runner
	// needs to continue this child on another process if this one stops: call it before the
	// tool calls of each model response run, and after their results. A child that never
	// checkpointed is taken to have run nothing yet, and starts again from its prompt.
	Checkpoint func(state []byte)
	// Resume is the last checkpoint when the child continues here after the process running it
	// stopped; nil for a new child. A runner that cannot use it returns an error.
	Resume []byte
}

// maxAnswerBytes bounds a child's final answer and its structured value.
const maxAnswerBytes = 4 << 20

// ErrNoAgentLoop is New's error when Options.Swarm names a model for the children but the
// program does not link the built-in runner and gives none in Options.Agents.
var ErrNoAgentLoop = errors.New(`the children's model (Swarm.Model, tools.swarm.model) needs the built-in runner: import _ "github.com/codemode-go/codemode/agentloop" (the gateway package links it), or give Options.Agents`)

// newSwarm is the runtime's swarm for Options.Swarm, or nil when it is off. It fills
// opts.Agents with the built-in runner when the program links one.
func newSwarm(opts *Options) (*swarm.Runtime, config.Swarm, error) {
	if opts.Swarm == nil || !opts.Swarm.Enabled {
		return nil, config.Swarm{}, nil
	}
	sw := opts.Swarm.WithDefaults()
	if err := sw.Validate(); err != nil {
		return nil, sw, err
	}
	if opts.Agents == nil {
		switch {
		case sw.Model == nil:
			return nil, sw, errors.New("Options.Swarm is enabled but names no model for the children (Swarm.Model, tools.swarm.model) and Options.Agents is nil: give one or the other")
		case swarm.BuiltinRunner == nil:
			return nil, sw, ErrNoAgentLoop
		}
		r, err := swarm.BuiltinRunner(*sw.Model, opts.Logger)
		if err != nil {
			return nil, sw, fmt.Errorf("tools.swarm.model: %w", err)
		}
		opts.Agents = r.(AgentRunner)
	}
	var models []string
	if sw.Model != nil {
		models = sw.Model.AllowedModels()
	}
	return swarm.New(swarm.Limits{MaxConcurrent: sw.MaxConcurrent, MaxLive: sw.MaxChildrenPerGroup,
		MaxTotal: sw.MaxTotalPerGroup, MaxDepth: sw.MaxDepth, MaxRunning: sw.MaxRunning,
		ChildTimeout: sw.ChildTimeout(), MaxTurns: sw.MaxTurns, Models: models}), sw, nil
}

// refuseApprovals is the Approver of children: they never ask a person (tools.swarm), so a
// call that needs approval is refused at once and the child can report it.
var refuseApprovals = api.ApproverFunc(func(context.Context, api.ApprovalRequest) (api.Decision, error) {
	return api.Decision{By: "swarm", Reason: "child agents cannot ask a person for approval, so the call was refused"}, nil
})

// childInfo is what a child surface knows of its place in the swarm.
type childInfo struct {
	depth      int
	parentCall string // the agents.run call that started the child
	rootRun    string // the run id of the cell at the root of the swarm: its saved values are shared
	node       *swarm.Child
	submit     *submission // nil without a schema

	mu        sync.Mutex
	runs      map[string]bool // the child's code-mode runs still suspended
	untrusted []string        // sources of untrusted content the child received (bounded)
}

// sawUntrusted adds sources of untrusted content the child received.
func (info *childInfo) sawUntrusted(sources ...string) {
	info.mu.Lock()
	defer info.mu.Unlock()
	for _, src := range sources {
		if src != "" && !slices.Contains(info.untrusted, src) && len(info.untrusted) < 32 {
			info.untrusted = append(info.untrusted, src)
		}
	}
}

func (info *childInfo) sources() []string {
	info.mu.Lock()
	defer info.mu.Unlock()
	out := slices.Clone(info.untrusted)
	slices.Sort(out)
	return out
}

// depth is the surface's spawn depth: 0 for a surface the embedder activated.
func (s *Surface) depth() int {
	if s.child == nil {
		return 0
	}
	return s.child.depth
}

// swarmOn reports whether this surface's cells get agents.run, phase and log.
func (s *Surface) swarmOn() bool {
	return s.active && s.rt.swarm != nil && s.rt.swarm.CanSpawn(s.depth())
}

// rootRun is the run id of the cell at the root of the surface's swarm (its own for a surface
// the embedder activated).
func (s *Surface) rootRun() string {
	if s.child == nil {
		return s.run.RunID
	}
	return s.child.rootRun
}

// parentCall is the trajectory parent of the surface's own calls: for a child, its agents.run
// call ("" for a surface the embedder activated).
func (s *Surface) parentCall() string {
	if s.child == nil {
		return ""
	}
	return s.child.parentCall
}

// attachSwarm gives a run's dispatcher its group of children, when the surface may spawn.
func (s *Surface) attachSwarm(disp *dispatch.Dispatcher) {
	if !s.swarmOn() {
		return
	}
	disp.Swarm = s.rt.swarm.NewGroup(swarm.GroupConfig{Run: s.run, ParentCallID: disp.ParentCallID, Depth: s.depth(),
		Spawn: s.spawn, Trajectory: s.rt.opts.Trajectory, Reporting: disp.Reporting, Report: disp.Report,
		Durable: s.rt.durable != nil})
}

// childTools are the tools a child of this surface gets: the parent's effective tools, in their
// order, filtered by tools.swarm.tools. Never one the parent does not have.
func (s *Surface) childTools() []*api.Tool {
	pol := catalog.Policy{Allow: s.rt.swarmCfg.Tools.Allow, Deny: s.rt.swarmCfg.Tools.Deny}
	out := make([]*api.Tool, 0, len(s.eff))
	for _, t := range s.eff {
		if pol.Permits(t) && t.Name != structuredTool {
			out = append(out, t)
		}
	}
	return out
}

// journal is a child's checkpoint as stored: the runner's state, the structured value accepted
// so far, and — once the child ended — its outcome, so a child is never run twice.
type journal struct {
	V         int             `json:"v"`
	Runner    []byte          `json:"runner,omitempty"`
	Submitted json.RawMessage `json:"submitted,omitempty"`
	Outcome   *swarm.Outcome  `json:"outcome,omitempty"`
}

// spawn runs one child agent (swarm.Spawn).
func (s *Surface) spawn(ctx context.Context, node *swarm.Child) swarm.Outcome {
	rt := s.rt
	var jr journal
	if node.Resume != nil {
		if json.Unmarshal(node.Resume, &jr) != nil || jr.V != 1 {
			return swarm.Outcome{Status: swarm.StatusFailed, Error: "the child's checkpoint cannot be read: it was lost with the process that ran it"}
		}
		if jr.Outcome != nil {
			return *jr.Outcome // it ended before its process stopped: never run it again
		}
	}
	info := &childInfo{depth: node.Depth, parentCall: node.CallID, rootRun: s.rootRun(), node: node, runs: map[string]bool{}}
	if node.Schema != nil {
		info.submit = &submission{schema: node.Schema, raw: node.Request.Schema, value: jr.Submitted}
	}
	crc := s.run
	crc.RunID = node.RunID
	if node.Model != "" {
		crc.Model = node.Model
	}
	child := rt.activate(crc, s.childTools(), info)
	// The parent's gate — its hooks and approval rules — with approvals refused: a child never
	// asks a person.
	cg := *s.gateOf()
	cg.Approver = refuseApprovals
	child.gate = &cg
	defer child.endChild()
	task := &AgentTask{Prompt: node.Prompt, System: childSystem(info.submit != nil), Model: node.Model,
		Label: node.Label, Surface: child, MaxTurns: rt.swarmCfg.MaxTurns, Resume: jr.Runner}
	var mu sync.Mutex
	save := func(runner []byte, out *swarm.Outcome) {
		mu.Lock()
		defer mu.Unlock()
		if runner != nil {
			jr.Runner = runner
		}
		jr.V, jr.Outcome = 1, out
		if info.submit != nil {
			jr.Submitted = info.submit.accepted()
		}
		b, _ := json.Marshal(jr)
		node.Checkpoint(b)
	}
	if node.Durable() {
		task.Checkpoint = func(state []byte) { save(slices.Clone(state), nil) }
	}
	if sub := info.submit; sub != nil {
		task.Review = sub.review
	}
	answer, err := rt.opts.Agents.RunAgent(ctx, task)
	out := outcome(answer, err, info.submit)
	out.Untrusted = info.sources()
	if node.Durable() && ctx.Err() == nil {
		save(nil, &out)
	}
	return out
}

// outcome turns what the runner returned into the child's outcome.
func outcome(answer string, err error, sub *submission) swarm.Outcome {
	switch {
	case err != nil:
		return swarm.Outcome{Status: swarm.StatusFailed, Error: err.Error(), Text: clipAnswer(answer)}
	case len(answer) > maxAnswerBytes:
		return swarm.Outcome{Status: swarm.StatusFailed, Error: fmt.Sprintf("the child's answer is %d bytes (limit %d)", len(answer), maxAnswerBytes)}
	case sub == nil:
		return swarm.Outcome{Status: swarm.StatusCompleted, Text: answer}
	}
	if v := sub.accepted(); v != nil {
		return swarm.Outcome{Status: swarm.StatusCompleted, Structured: v, Text: answer}
	}
	return swarm.Outcome{Status: swarm.StatusInvalid, Text: answer, SchemaError: sub.problem()}
}

func clipAnswer(s string) string {
	if len(s) > 8000 {
		return s[:8000]
	}
	return s
}

// childSystem is the system prompt the runtime suggests for children.
func childSystem(structured bool) string {
	s := "You are a sub-agent started by another agent's program to do one task. Use your tools as needed, then answer with the result itself, concisely: your final answer is returned to the program that started you, not shown to a person. Nobody can approve actions for you: a call that needs approval is refused; say so in your answer if it matters."
	if structured {
		s += " Submit your result by calling the " + structuredTool + " tool with a value that matches its schema, then finish with a one-line summary."
	}
	return s
}

// observe follows a child's own calls: each one reported as the child's progress, and its
// suspended runs tracked so they end with it.
func (s *Surface) observe(name, runID string, res *api.ExecResult, callErr error) {
	info := s.child
	if info == nil {
		return
	}
	status := "ok"
	if t := s.byName[name]; res == nil && t != nil && t.Untrusted {
		info.sawUntrusted(dispatch.Provenance(t))
	}
	switch {
	case res != nil:
		status = res.Status
		info.sawUntrusted(res.Untrusted...)
		info.mu.Lock()
		if name == "wait" && res.Status != api.StatusWaiting {
			delete(info.runs, runID)
		}
		if res.Status == api.StatusWaiting && res.RunID != "" && len(info.runs) < 1024 {
			info.runs[res.RunID] = true
		}
		info.mu.Unlock()
		if res.Status == api.StatusWaiting {
			status += " (" + res.Reason + ")"
		}
	case callErr != nil:
		status = "error"
	}
	info.node.Status(name + " " + status)
}

// endChild drops what a child leaves behind: its suspended runs (their calls are cancelled).
func (s *Surface) endChild() {
	info := s.child
	info.mu.Lock()
	runs := make([]string, 0, len(info.runs))
	for id := range info.runs {
		runs = append(runs, id)
	}
	info.runs = map[string]bool{}
	info.mu.Unlock()
	for _, id := range runs {
		s.rt.CancelRun(id)
	}
}

// structuredTool is the synthetic tool a child submits its structured result with.
const structuredTool = "structured_output"

// submission is a child's structured result: the schema the cell gave and the value accepted.
type submission struct {
	schema *contract.Schema
	raw    json.RawMessage // the schema as given (the tool's input schema)

	mu      sync.Mutex
	value   json.RawMessage
	invalid int    // values refused
	last    string // why the last one was refused
	nudged  bool   // the one correction was asked for
}

func (sub *submission) accepted() json.RawMessage {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.value
}

func (sub *submission) problem() string {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.last != "" {
		return "the value does not match the schema: " + sub.last
	}
	return "the child gave no value with " + structuredTool
}

// review is AgentTask.Review: one nudge when the child ends without a valid value.
func (sub *submission) review(string) string {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.value != nil || sub.nudged {
		return ""
	}
	sub.nudged = true
	return "You have not submitted your result. Call the " + structuredTool + " tool with a value that matches its schema, then finish."
}

// wrapped reports whether the schema is not an object schema: the tool's input is then
// {value: …} (a tool's input must be an object).
func (sub *submission) wrapped() bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(sub.raw, &m) != nil {
		return true
	}
	var typ string
	return json.Unmarshal(m["type"], &typ) != nil || typ != "object"
}

// tool is the structured_output tool of the child.
func (sub *submission) tool() *api.Tool {
	schema := sub.raw
	if sub.wrapped() {
		schema = json.RawMessage(`{"type":"object","properties":{"value":` + string(sub.raw) + `},"required":["value"],"additionalProperties":false}`)
	}
	return &api.Tool{Name: structuredTool, Owner: "swarm", DirectOnly: true, ReadOnly: true, InputSchema: schema,
		Description: "Submit your final result: call this once with a value matching this schema. It is checked; a value that does not match is returned to you with what is wrong.",
		Execute:     func(ctx context.Context, c *api.Call) (*api.Result, error) { return sub.submit(c.Input) }}
}

// submit checks a value the child submits: accepted, or the failures for one correction.
func (sub *submission) submit(input json.RawMessage) (*api.Result, error) {
	value := input
	if sub.wrapped() {
		var w struct {
			Value json.RawMessage `json:"value"`
		}
		if json.Unmarshal(input, &w) != nil || len(w.Value) == 0 {
			return sub.refuse(`the input must be {"value": …}`), nil
		}
		value = w.Value
	}
	if len(value) > maxAnswerBytes {
		return sub.refuse(fmt.Sprintf("the value is %d bytes (limit %d)", len(value), maxAnswerBytes)), nil
	}
	if err := sub.schema.ValidateValue(value); err != nil {
		return sub.refuse(err.Error()), nil
	}
	sub.mu.Lock()
	sub.value = slices.Clone(value)
	sub.last = ""
	sub.mu.Unlock()
	return &api.Result{Content: []api.ContentBlock{{Type: "text", Text: "Accepted. Finish now with a one-line summary; do not call " + structuredTool + " again."}}}, nil
}

func (sub *submission) refuse(why string) *api.Result {
	sub.mu.Lock()
	sub.invalid++
	sub.last = why
	n := sub.invalid
	sub.mu.Unlock()
	text := "Refused: the value does not match the schema: " + why + "."
	if n == 1 {
		// The one correction (the review does not ask again).
		sub.mu.Lock()
		sub.nudged = true
		sub.mu.Unlock()
		text += " Call " + structuredTool + " again with a corrected value."
	}
	return &api.Result{IsError: true, Content: []api.ContentBlock{{Type: "text", Text: text}}}
}

// flushNotes sends the progress notes of the run's children made so far before the exec or wait
// driving it returns (and its progress sink goes).
func flushNotes(disp *dispatch.Dispatcher) {
	if g := disp.Swarm; g != nil && disp.Reporting() {
		g.FlushNotes()
	}
}
