// Package swarm runs the child agents a cell starts with agents.run (tools.swarm): one Group per
// code-mode run holds its children — admission against the group's limits (live and lifetime
// children, spawn depth), a FIFO queue in call order for the running slots (maxConcurrent), the
// process-wide bound on running children, progress notes (phase, log, child status) relayed to
// the exec's progress sink and recorded in the trajectory, and the checkpoints that let a child
// continue on another replica under a shared run store. The child agent itself — its surface,
// its model loop — is the Spawn function's (the codemode runtime): this package only decides
// when a child may run, and turns its outcome into what the cell sees.
package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/contract"
	"github.com/codemode-go/codemode/internal/textcut"
	"golang.org/x/sync/semaphore"
)

// Statuses of a child's outcome: the SwarmAgentError's status (and code) in the cell, the
// trajectory's agent events and the metrics' outcomes.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusTimeout   = "timeout"
	// StatusInvalid: a child asked for a schema gave no value that matches it.
	StatusInvalid = "invalid"
	// StatusRefused: the launch itself was refused (bad options, a limit); no child ran.
	StatusRefused = "refused"
)

// Ops of the bridge (the prelude's agents.run, phase and log).
const (
	OpRun  = "agents.run"
	OpNote = "agents.note"
)

// Bounds of a request and of notes.
const (
	MaxPromptBytes = 256 << 10
	MaxLabelBytes  = 200
	MaxModelBytes  = 200
	MaxNoteBytes   = 2000
	// MaxNotes bounds the phase and log notes one run records and relays; later ones are
	// dropped (one last note says how many), so a loop of log() cannot flood the audit log.
	MaxNotes = 1000
	// maxRelayed bounds the progress messages waiting for a slow client.
	maxRelayed = 256
)

// Limits bound the children (tools.swarm, docs/semantics.md §25).
type Limits struct {
	// MaxConcurrent children of one group run at once; the rest queue in call order.
	MaxConcurrent int
	// MaxLive bounds the running and queued children of one group.
	MaxLive int
	// MaxTotal bounds the children a group starts over its life.
	MaxTotal int
	// MaxDepth is how deep children spawn: a run at depth MaxDepth (a top-level cell is at 0)
	// cannot start children.
	MaxDepth int
	// MaxRunning bounds the children running at once in the process (every group together).
	MaxRunning int
	// ChildTimeout bounds one child's wall time.
	ChildTimeout time.Duration
	// MaxTurns bounds one child's model calls.
	MaxTurns int
	// Models are the globs a per-call model must match; nil accepts any model name.
	Models []string
}

// Runtime is the process's side of the swarm: the bound on running children and the counts of
// outcomes.
type Runtime struct {
	lim     Limits
	running *semaphore.Weighted
	counts  sync.Map // status → *atomic.Int64

	mu     sync.Mutex
	active int           // agents.run calls not yet returned
	idle   chan struct{} // closed while active is 0
}

// New returns a Runtime for lim.
func New(lim Limits) *Runtime {
	return &Runtime{lim: lim, running: semaphore.NewWeighted(int64(max(1, lim.MaxRunning)))}
}

func (rt *Runtime) enter() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.active == 0 {
		rt.idle = make(chan struct{})
	}
	rt.active++
}

func (rt *Runtime) leave() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.active--
	if rt.active == 0 {
		close(rt.idle)
	}
}

// Idle waits until no child is running or queued, or d passes, and reports whether none is: a
// runtime closing after cancelling its runs gives the children that time to record how they
// ended.
func (rt *Runtime) Idle(d time.Duration) bool {
	rt.mu.Lock()
	idle := rt.idle
	active := rt.active
	rt.mu.Unlock()
	if active == 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}

// Limits returns the limits in force.
func (rt *Runtime) Limits() Limits { return rt.lim }

// CanSpawn reports whether a run at depth may start children.
func (rt *Runtime) CanSpawn(depth int) bool { return depth < rt.lim.MaxDepth }

// Count is the number of children that ended with status (refused launches included).
func (rt *Runtime) Count(status string) int64 {
	if v, ok := rt.counts.Load(status); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

func (rt *Runtime) count(status string) {
	v, _ := rt.counts.LoadOrStore(status, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// Request is one agents.run call as the host understood it.
type Request struct {
	Prompt string          `json:"prompt"`
	Label  string          `json:"label,omitempty"`
	Model  string          `json:"model,omitempty"`
	Phase  string          `json:"phase,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

// Outcome is how a child ended.
type Outcome struct {
	Status string `json:"status"`
	// Text is the child's final answer (for StatusInvalid, its raw answer).
	Text string `json:"text,omitempty"`
	// Structured is the value the child submitted, checked against the schema.
	Structured json.RawMessage `json:"structured,omitempty"`
	// SchemaError says why no structured value was accepted (StatusInvalid).
	SchemaError string `json:"schemaError,omitempty"`
	// Error says why the child failed, timed out or was cancelled.
	Error string `json:"error,omitempty"`
	// Untrusted are the sources of untrusted content the child received (MCP servers, web
	// fetches…): its answer may repeat them, so the parent's cell is marked as having seen them.
	Untrusted []string `json:"untrusted,omitempty"`
}

// Child is one child agent handed to Spawn.
type Child struct {
	// CallID is the agents.run call ("<exec call id>/<n>"): the child's parent in the trajectory.
	CallID string
	// RunID is the child's run id (api.RunContext.RunID), the runId its errors carry.
	RunID string
	Request
	// Schema is the compiled Request.Schema (nil without one).
	Schema *contract.Schema
	// Depth is the child's own depth (1 for a child of a top-level cell).
	Depth int
	// Resume is the child's last checkpoint when it continues here after the process that ran it
	// stopped; nil for a new child.
	Resume []byte
	g      *Group
}

// Status reports a step of the child as progress of the parent exec and in the trajectory.
func (c *Child) Status(msg string) { c.g.status(c.CallID, c.name(), msg) }

// Durable reports whether checkpoints are kept (a shared run store).
func (c *Child) Durable() bool { return c.g.cfg.Durable }

// Checkpoint records what the child needs to continue elsewhere (Durable runs only): kept here
// until the run's record exists, then written to the store with the run's results.
func (c *Child) Checkpoint(state []byte) {
	if c.g.cfg.Durable {
		c.g.checkpoint(c.CallID, state)
	}
}

func (c *Child) name() string {
	if c.Label != "" {
		return "agent " + c.Label
	}
	return "agent " + c.CallID
}

// Spawn runs a child to its end. ctx ends when the parent run ends (the child is cancelled) or
// the child's timeout passes.
type Spawn func(ctx context.Context, c *Child) Outcome

// GroupConfig configures a Group.
type GroupConfig struct {
	// Run is the parent run; ParentCallID the exec call of its cell (the prefix of its calls).
	Run          api.RunContext
	ParentCallID string
	// Depth is the parent run's depth (0 for a cell the model wrote).
	Depth int
	Spawn Spawn
	// Trajectory receives agent events and progress notes (nil: none).
	Trajectory api.Trajectory
	// Reporting tells whether a progress sink listens; Report sends it one message. Both may
	// be nil.
	Reporting func() bool
	Report    func(msg string)
	// Durable keeps children's checkpoints (a shared run store).
	Durable bool
}

// Group is the children of one code-mode run: its exec and every wait that continues it.
type Group struct {
	rt    *Runtime
	cfg   GroupConfig
	relay relay

	mu      sync.Mutex
	live    int // admitted and not yet ended
	total   int // ever admitted (a resumed child is not counted again)
	running int // holding a group slot
	seq     uint64
	queue   []*Ticket // admitted, waiting for a group slot, in call order
	notes   int
	dropped int
	resume  map[string][]byte // stored checkpoints by call id (a resuming replica)
	ckpts   map[string][]byte // latest checkpoint of each running child
	sink    func(key string, data []byte)
}

// NewGroup starts the group of a run.
func (rt *Runtime) NewGroup(cfg GroupConfig) *Group {
	g := &Group{rt: rt, cfg: cfg}
	g.relay.send = cfg.Report
	return g
}

// Depth is the depth of the group's run.
func (g *Group) Depth() int { return g.cfg.Depth }

// Ticket is an admitted agents.run call.
type Ticket struct {
	callID  string
	req     Request
	seq     uint64
	ready   chan struct{} // closed when the ticket holds a group slot
	waiting bool          // its call waits for a slot
	granted bool
	done    bool
}

// Admit checks an agents.run request when the cell makes it (on the VM's goroutine, so tickets
// are numbered in call order): the options, the depth and the group's limits. A refused request
// rejects the cell's promise; an admitted one counts as live until it ends.
func (g *Group) Admit(callID string, payload []byte) (*Ticket, error) {
	req, err := ParseRequest(payload, g.rt.lim)
	if err == nil {
		err = g.admit()
	}
	if err != nil {
		g.refused(callID, req, err)
		return nil, err
	}
	if req.Phase != "" {
		g.note("phase", req.Phase)
	}
	g.mu.Lock()
	g.seq++
	t := &Ticket{callID: callID, req: req, seq: g.seq, ready: make(chan struct{})}
	g.queue = append(g.queue, t)
	ahead := g.running + len(g.queue) - 1
	g.mu.Unlock()
	if ahead >= g.rt.lim.MaxConcurrent {
		g.status(callID, name(callID, req), fmt.Sprintf("queued (%d running or ahead)", ahead))
	}
	return t, nil
}

func (g *Group) admit() error {
	lim := g.rt.lim
	if !g.rt.CanSpawn(g.cfg.Depth) {
		return &api.ToolError{Name: "Error", Code: "depth_exceeded",
			Message: fmt.Sprintf("agents.run: this agent is at spawn depth %d and cannot start children (tools.swarm.maxDepth is %d)", g.cfg.Depth, lim.MaxDepth)}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.live >= lim.MaxLive:
		return &api.ToolError{Name: "RangeError", Code: "too_many_agents",
			Message: fmt.Sprintf("agents.run: this run already has %d children running or queued (tools.swarm.maxChildrenPerGroup is %d): await some before starting more", g.live, lim.MaxLive)}
	case g.total >= lim.MaxTotal:
		return &api.ToolError{Name: "RangeError", Code: "too_many_agents",
			Message: fmt.Sprintf("agents.run: this run has started %d children, the most it may (tools.swarm.maxTotalPerGroup is %d)", g.total, lim.MaxTotal)}
	}
	g.live++
	g.total++
	return nil
}

// Run runs an admitted child (t from Admit; nil when the call starts again on another replica,
// which continues the child from its checkpoint) and returns what the cell's promise resolves
// to, or the error it rejects with, and the untrusted sources the child saw.
func (g *Group) Run(ctx context.Context, callID string, t *Ticket, payload []byte) ([]byte, []string, error) {
	g.rt.enter()
	defer g.rt.leave()
	if t == nil {
		req, err := ParseRequest(payload, g.rt.lim)
		if err != nil {
			return nil, nil, err
		}
		g.mu.Lock()
		g.live++ // already counted in total where it started
		g.seq++
		t = &Ticket{callID: callID, req: req, seq: g.seq, ready: make(chan struct{})}
		g.queue = append(g.queue, t)
		g.mu.Unlock()
	}
	var schema *contract.Schema
	if len(t.req.Schema) > 0 {
		// Compiled here, off the VM's goroutine (a hostile schema can take long to compile),
		// before anything runs: an unusable one is a bad option, like the others.
		s, err := contract.CompileResult("agents.run", t.req.Schema)
		if err != nil {
			g.end(t)
			err = &api.ToolError{Name: "TypeError", Code: string(api.CodeInvalidInput), Message: "agents.run: options.schema " + err.Error()}
			g.refused(callID, t.req, err)
			return nil, nil, err
		}
		schema = s
	}
	start := time.Now()
	out := g.run(ctx, t, schema)
	g.record(callID, t.req, out, start)
	g.rt.count(out.Status)
	v, err := result(g.childRunID(callID), t.req.Label, out)
	return v, out.Untrusted, err
}

func (g *Group) run(ctx context.Context, t *Ticket, schema *contract.Schema) Outcome {
	defer g.end(t)
	g.mu.Lock()
	t.waiting = true
	g.grantLocked()
	g.mu.Unlock()
	select {
	case <-t.ready:
	case <-ctx.Done():
		return Outcome{Status: StatusCancelled, Error: "the parent run ended before the child started"}
	}
	if err := g.rt.running.Acquire(ctx, 1); err != nil {
		return Outcome{Status: StatusCancelled, Error: "the parent run ended before the child started"}
	}
	defer g.rt.running.Release(1)
	g.mu.Lock()
	resume := g.resume[t.callID]
	delete(g.resume, t.callID)
	g.mu.Unlock()
	c := &Child{CallID: t.callID, RunID: g.childRunID(t.callID), Request: t.req, Schema: schema,
		Depth: g.cfg.Depth + 1, Resume: resume, g: g}
	if resume == nil {
		c.Status("started")
	} else {
		c.Status("continues here from its last checkpoint (the process that ran it stopped)")
	}
	cctx, cancel := context.WithTimeout(ctx, g.rt.lim.ChildTimeout)
	defer cancel()
	out := g.spawn(cctx, c)
	switch {
	case out.Status == "":
		out.Status = StatusFailed
	case out.Status == StatusCompleted || out.Status == StatusInvalid:
	case ctx.Err() != nil:
		out.Status = StatusCancelled
		if out.Error == "" {
			out.Error = "the parent run ended"
		}
	case cctx.Err() != nil:
		out.Status = StatusTimeout
		out.Error = fmt.Sprintf("the child ran longer than tools.swarm.childTimeoutSeconds (%s)", g.rt.lim.ChildTimeout)
	}
	c.Status(done(out))
	return out
}

// spawn calls Spawn, turning a panic into a failure: a runner's bug must not take the process
// down.
func (g *Group) spawn(ctx context.Context, c *Child) (out Outcome) {
	defer func() {
		if p := recover(); p != nil {
			out = Outcome{Status: StatusFailed, Error: fmt.Sprintf("the child agent failed: internal error (%v)", p)}
		}
	}()
	return g.cfg.Spawn(ctx, c)
}

func done(out Outcome) string {
	var b strings.Builder
	b.WriteString(out.Status)
	switch {
	case out.Error != "":
		b.WriteString(": " + textcut.Ellipsis(out.Error, 300))
	case out.SchemaError != "":
		b.WriteString(": " + textcut.Ellipsis(out.SchemaError, 300))
	}
	return b.String()
}

// grantLocked hands free group slots to the queued tickets in call order. A ticket whose call
// has not reached Run yet keeps its place (the calls start microseconds apart).
func (g *Group) grantLocked() {
	for g.running < g.rt.lim.MaxConcurrent && len(g.queue) > 0 {
		t := g.queue[0]
		if !t.waiting {
			return
		}
		g.queue = g.queue[1:]
		g.running++
		t.granted = true
		close(t.ready)
	}
}

// end releases a ticket's place: its slot, or its place in the queue.
func (g *Group) end(t *Ticket) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.done {
		return
	}
	t.done = true
	g.live--
	if t.granted {
		g.running--
	} else {
		for i, q := range g.queue {
			if q == t {
				g.queue = append(g.queue[:i], g.queue[i+1:]...)
				break
			}
		}
	}
	delete(g.ckpts, t.callID)
	g.grantLocked()
}

// childRunID is the run id of the child started by callID: the parent's run id and the call,
// the same on every replica (its suspended runs and checkpoints are found by it).
func (g *Group) childRunID(callID string) string {
	if g.cfg.Run.RunID == "" {
		return callID
	}
	return g.cfg.Run.RunID + "/" + callID
}

// result is what the cell's promise gets.
func result(runID, label string, out Outcome) ([]byte, error) {
	if out.Status == StatusCompleted {
		if len(out.Structured) > 0 {
			return out.Structured, nil
		}
		return json.Marshal(out.Text)
	}
	detail := out.Error
	if detail == "" {
		detail = out.SchemaError
	}
	if detail == "" {
		detail = "the child agent gave no result"
	}
	det := map[string]string{"runId": runID, "status": out.Status}
	if label != "" {
		det["label"] = label
	}
	if out.Text != "" {
		det["text"] = textcut.Ellipsis(out.Text, 8000)
	}
	if out.SchemaError != "" {
		det["schemaError"] = out.SchemaError
	}
	b, _ := json.Marshal(det)
	return nil, &api.ToolError{Name: "SwarmAgentError", Code: out.Status, Details: b,
		Message: fmt.Sprintf("agent %s %s: %s", runID, out.Status, textcut.Ellipsis(detail, 2000))}
}

// Label names an agents.run call in pendingToolCalls.
func Label(payload []byte) string {
	var p struct {
		Options struct {
			Label string `json:"label"`
		} `json:"options"`
	}
	_ = json.Unmarshal(payload, &p)
	if l := textcut.Line(p.Options.Label, MaxLabelBytes); l != "" {
		return OpRun + "(" + l + ")"
	}
	return OpRun
}

// Note handles phase(title) and log(message): recorded and relayed, never waited for.
func (g *Group) Note(payload []byte) error {
	var p struct {
		Kind string `json:"kind"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(payload, &p); err != nil || p.Kind != "phase" && p.Kind != "log" {
		return &api.ToolError{Name: "TypeError", Code: string(api.CodeInvalidInput), Message: "malformed progress note"}
	}
	g.note(p.Kind, p.Text)
	return nil
}

func (g *Group) note(kind, text string) {
	text = textcut.Line(text, MaxNoteBytes)
	if text == "" {
		return
	}
	g.mu.Lock()
	if g.notes >= MaxNotes {
		g.dropped++
		n := g.dropped
		g.mu.Unlock()
		if n == 1 {
			g.emit(g.cfg.ParentCallID, kind, fmt.Sprintf("(more than %d notes: later ones are dropped)", MaxNotes))
		}
		return
	}
	g.notes++
	g.mu.Unlock()
	g.emit(g.cfg.ParentCallID, kind, kind+": "+text)
}

// status reports a child's step.
func (g *Group) status(callID, who, msg string) { g.emit(callID, OpRun, who+": "+msg) }

// emit records an update in the trajectory and relays it to the progress sink.
func (g *Group) emit(callID, tool, msg string) {
	if t := g.cfg.Trajectory; t != nil {
		t.Record(api.TrajectoryEvent{Kind: api.EventUpdate, Time: time.Now(), Run: g.cfg.Run, CallID: callID,
			ParentCallID: g.cfg.ParentCallID, Tool: tool, Update: &api.ContentBlock{Type: "text", Text: msg}})
	}
	if g.cfg.Reporting != nil && g.cfg.Reporting() {
		g.relay.push(msg)
	}
}

// record writes the child's agent event: its request, how it ended and how long it took.
func (g *Group) record(callID string, req Request, out Outcome, start time.Time) {
	t := g.cfg.Trajectory
	if t == nil {
		return
	}
	in, _ := json.Marshal(req)
	res, _ := json.Marshal(struct {
		RunID string `json:"runId"`
		Outcome
	}{g.childRunID(callID), out})
	ev := api.TrajectoryEvent{Kind: api.EventAgent, Time: start, Run: g.cfg.Run, CallID: callID,
		ParentCallID: g.cfg.ParentCallID, Tool: name(callID, req), Input: in, Result: res, Status: out.Status,
		DurationMs: time.Since(start).Milliseconds()}
	if out.Status != StatusCompleted {
		ev.Error = out.Error
		if ev.Error == "" {
			ev.Error = out.SchemaError
		}
	}
	t.Record(ev)
}

// refused records and counts a launch that never started.
func (g *Group) refused(callID string, req Request, err error) {
	g.rt.count(StatusRefused)
	if t := g.cfg.Trajectory; t != nil {
		in, _ := json.Marshal(req)
		t.Record(api.TrajectoryEvent{Kind: api.EventAgent, Time: time.Now(), Run: g.cfg.Run, CallID: callID,
			ParentCallID: g.cfg.ParentCallID, Tool: name(callID, req), Input: in, Status: StatusRefused, Error: err.Error()})
	}
}

func name(callID string, req Request) string {
	if req.Label != "" {
		return OpRun + " " + req.Label
	}
	return OpRun
}

// relay hands progress messages to a sink on its own goroutine, in order: a note made on the
// VM's goroutine never waits for a slow client. Past maxRelayed waiting messages, new ones are
// dropped.
type relay struct {
	send func(string)
	mu   sync.Mutex
	buf  []string
	idle chan struct{} // closed when the draining goroutine is done; nil when none runs
}

func (r *relay) push(msg string) {
	if r.send == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) >= maxRelayed {
		return
	}
	r.buf = append(r.buf, msg)
	if r.idle == nil {
		r.idle = make(chan struct{})
		go r.drain(r.idle)
	}
}

func (r *relay) drain(idle chan struct{}) {
	for {
		r.mu.Lock()
		if len(r.buf) == 0 {
			r.idle = nil
			r.mu.Unlock()
			close(idle)
			return
		}
		msg := r.buf[0]
		r.buf = r.buf[1:]
		r.mu.Unlock()
		r.send(msg)
	}
}

// flush waits until the messages pushed so far are sent, or d passes.
func (r *relay) flush(d time.Duration) {
	r.mu.Lock()
	idle := r.idle
	r.mu.Unlock()
	if idle == nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}

// FlushNotes waits (at most a second: a slow client never holds a result back longer) until the
// progress messages made so far are sent: the exec or wait ending now sends them before its
// result, while its sink is still there.
func (g *Group) FlushNotes() { g.relay.flush(time.Second) }

// BuiltinRunner builds the built-in runner of children (a codemode.AgentRunner) for a model.
// It is set by package agentloop when a program links it, so that programs without children
// never link the model client; the root package uses it when Options.Agents is nil.
var BuiltinRunner func(model config.SwarmModel, logger *slog.Logger) (any, error)

// ErrNotAvailable is the error of an agents.run or note reaching a run without swarm.
var ErrNotAvailable = errors.New("agents.run is not available in this run (tools.swarm is off, or no model is configured for children)")
