// Package dispatch answers a cell's bridge requests: searches and descriptions from the run
// catalog, and nested tool calls through the same path as any tool call — exact-id lookup,
// restart-safety, before_tool_call hooks, approval, the tool, the output-contract check — with
// results crossing back as plain JSON (E1, O4, G4).
package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/catalog"
	"github.com/codemode-go/codemode/internal/contract"
	"github.com/codemode-go/codemode/internal/namespace"
	"github.com/codemode-go/codemode/internal/progress"
	"github.com/codemode-go/codemode/internal/relay"
	"github.com/codemode-go/codemode/internal/results"
	"github.com/codemode-go/codemode/internal/sandbox"
	"github.com/codemode-go/codemode/internal/swarm"
)

// MaxResultBytes bounds one nested result crossing into the VM.
const MaxResultBytes = 8 << 20

// Counters are the run's cumulative telemetry (Y1).
type Counters struct {
	Search, Describe, Call atomic.Int64
}

var (
	_ sandbox.Host       = (*Dispatcher)(nil)
	_ sandbox.Prechecker = (*Dispatcher)(nil)
	_ sandbox.SlotFree   = (*Dispatcher)(nil)
)

// Dispatcher implements sandbox.Host (and sandbox.Prechecker) for one run.
type Dispatcher struct {
	Catalog *catalog.Catalog
	// Tools are the run's own implementations by catalog id. The catalog may be shared between
	// runs with identical tool definitions; execution always uses this run's tools (A9).
	Tools map[string]*api.Tool
	Run   api.RunContext
	// ParentCallID is the exec call that started the cell.
	ParentCallID string
	// Gate runs hooks and approval rules before every nested call (required).
	Gate *Gate
	// Resources reaches MCP resources and prompts (M2); nil when no MCP layer is present.
	Resources api.Resources
	// RestartSafe refuses calls to tools not declared read-only (W6).
	RestartSafe bool
	// SearchLimit maps a requested limit to the effective one (config rules).
	SearchLimit func(requested int) int
	Counters    *Counters
	// RunID is the code-mode runId once the run has suspended (for approval requests).
	RunID string
	// Namespaces are the run's namespace scopes by id (N5): what ns.call resolves against.
	Namespaces map[string]*namespace.Scope
	// CheckTool refuses a call before it runs, e.g. to a removed plugin's tool (nil: none).
	CheckTool func(*api.Tool) error
	// Swarm runs the child agents of the run's agents.run calls (nil: swarm is off here).
	Swarm *swarm.Group
	// ResultsRunID, when set, is the run whose saved values this run shares (a child agent's:
	// its swarm's root run).
	ResultsRunID string
	// Results keeps what the run's cells save (results.*) and the final values too large for
	// their result (nil: results.* fail and such values are truncated).
	Results results.Store
	// Title is the exec's title: progress messages of its calls start with it.
	Title     string
	approvals approvals
	// sink is the progress sink of the exec or wait driving the run now (E1): nested calls
	// outlive requests, so their updates go to whichever call is running when they arrive.
	sink atomic.Pointer[progress.Sink]
	// client is the downstream MCP client of the exec or wait that last drove the run: an
	// upstream's log messages, elicitation and sampling during a nested call go there (issue 21).
	client atomic.Pointer[relay.Client]
	// prog combines the progress of the run's nested calls into one stream (progress.go).
	prog combined
}

// SetProgress sets the progress sink of the exec or wait driving the run (nil: none).
func (d *Dispatcher) SetProgress(s progress.Sink) {
	if s == nil {
		d.sink.Store(nil)
		return
	}
	d.sink.Store(&s)
}

// SetClient sets the downstream client of the exec or wait driving the run. Unlike the progress
// sink it stays after that call returns (nil leaves it): a nested call still running after exec
// returned waiting may ask its question on the same session before the model's next wait.
func (d *Dispatcher) SetClient(c relay.Client) {
	if c != nil {
		d.client.Store(&c)
	}
}

func (d *Dispatcher) currentClient() relay.Client {
	if c := d.client.Load(); c != nil {
		return *c
	}
	return nil
}

// Reporting reports whether the exec or wait driving the run has a progress sink.
func (d *Dispatcher) Reporting() bool { return d.sink.Load() != nil }

// Report sends msg to the progress sink of the exec or wait driving the run, if there is one, at
// the run's progress so far (the combined stream of progress.go: the values stay one stream).
func (d *Dispatcher) Report(msg string) {
	if s := d.sink.Load(); s != nil {
		p, t := d.prog.current()
		(*s)(p, t, msg)
	}
}

// SlotFree implements sandbox.SlotFree: a child agent waits for the swarm's own slots, not for
// the ones the cell's tool calls share.
func (d *Dispatcher) SlotFree(op string) bool { return op == swarm.OpRun }

// Sync answers requests that never leave the host.
func (d *Dispatcher) Sync(op string, payload []byte) ([]byte, error) {
	switch op {
	case swarm.OpNote:
		if d.Swarm == nil {
			return nil, notAvailable()
		}
		if err := d.Swarm.Note(payload); err != nil {
			return nil, err
		}
		return []byte("null"), nil
	case "search":
		var p struct {
			Query  string   `json:"query"`
			Limit  *float64 `json:"limit"`
			Server *string  `json:"server"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, badRequest(err)
		}
		d.Counters.Search.Add(1)
		hits := d.Catalog.SearchHits(p.Query, d.limit(p.Limit), deref(p.Server))
		out := make([]map[string]any, len(hits))
		for i, h := range hits {
			out[i] = h.Entry.JSON()
			out[i]["server"] = owner(h.Entry.Tool)
			out[i]["why"] = h.Why
		}
		return json.Marshal(out)
	case "describe":
		var p struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, badRequest(err)
		}
		d.Counters.Describe.Add(1)
		e, err := d.guestEntry(p.ID)
		if err != nil {
			return nil, err
		}
		return json.Marshal(e.DescribeJSON())
	case "mcp.search":
		var p struct {
			Query  string   `json:"query"`
			Limit  *float64 `json:"limit"`
			Server *string  `json:"server"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, badRequest(err)
		}
		d.Counters.Search.Add(1)
		hits := d.Catalog.SearchMCPHits(p.Query, d.limit(p.Limit), deref(p.Server))
		out := make([]map[string]any, len(hits))
		for i, h := range hits {
			out[i] = h.Entry.MCPSearchJSON()
			out[i]["why"] = h.Why
		}
		return json.Marshal(out)
	case "mcp.api":
		var p struct {
			Server string  `json:"server"`
			Tool   *string `json:"tool"`
			Schema bool    `json:"schema"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, badRequest(err)
		}
		tool := ""
		if p.Tool != nil {
			tool = *p.Tool
		}
		return d.Catalog.APIHeader(p.Server, tool, p.Schema)
	case "unknown":
		// A cell reached for tools.<name>, MCP.<server> or MCP.<server>.<tool> that does not
		// exist: the guest throws this message (with suggestions) instead of "not a function".
		var p struct {
			Kind   string `json:"kind"`
			Server string `json:"server"`
			Name   string `json:"name"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, badRequest(err)
		}
		var msg string
		code := "unknown_tool"
		switch p.Kind {
		case "server":
			msg, code = d.Catalog.UnknownServer(p.Name), "unknown_server"
		case "mcp":
			msg = d.Catalog.UnknownMCPTool(p.Server, p.Name)
		default:
			msg = d.Catalog.UnknownGuestName(p.Name)
		}
		return nil, &api.ToolError{Name: "TypeError", Code: code, Message: msg}
	case "api.list":
		var p struct {
			Prefix string `json:"prefix"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, badRequest(err)
		}
		files, err := d.apiList(p.Prefix)
		if err != nil {
			return nil, &api.ToolError{Name: "Error", Code: "invalid_path", Message: err.Error()}
		}
		return json.Marshal(files)
	case "api.read":
		var p struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, badRequest(err)
		}
		text, err := d.apiRead(p.Path)
		if err != nil {
			return nil, &api.ToolError{Name: "Error", Code: "invalid_path", Message: err.Error()}
		}
		return []byte(text), nil // raw text: the prelude does not JSON-decode api.read
	}
	return nil, &api.ToolError{Name: "Error", Code: "unknown_request", Message: "unknown bridge request " + op}
}

func (d *Dispatcher) limit(l *float64) int {
	req := 0
	if l != nil && *l >= 1 {
		req = int(min(*l, 1e6))
	}
	if d.SearchLimit == nil {
		return max(req, 8)
	}
	return d.SearchLimit(req)
}

func badRequest(err error) error {
	return &api.ToolError{Name: "TypeError", Code: string(api.CodeInvalidInput), Message: "malformed request: " + err.Error()}
}

// guestEntry resolves an id for tools.* (K3, K4, S9).
func (d *Dispatcher) guestEntry(id string) (*catalog.Entry, error) {
	e := d.Catalog.Lookup(id)
	if e == nil {
		if id == "exec" || id == "wait" || catalog.ControlTools[id] {
			return nil, &api.ToolError{Name: "Error", Code: "unknown_tool",
				Message: fmt.Sprintf("%q is a code-mode control tool and cannot be called from a cell", id)}
		}
		return nil, &api.ToolError{Name: "Error", Code: "unknown_tool", Message: d.Catalog.UnknownID(id)}
	}
	if !e.Guest() {
		return nil, &api.ToolError{Name: "Error", Code: "unknown_tool",
			Message: fmt.Sprintf("%s is an MCP tool: call it as MCP.%s.%s({...})", id, e.JSServer, e.JSName)}
	}
	return e, nil
}

// PendingLabel names a nested call for pendingToolCalls.
func (d *Dispatcher) PendingLabel(op string, payload []byte) string {
	var p struct {
		ID     string `json:"id"`
		Server string `json:"server"`
		Tool   string `json:"tool"`
		NS     string `json:"ns"`
		Call   int    `json:"call"`
	}
	_ = json.Unmarshal(payload, &p)
	switch {
	case op == swarm.OpRun:
		return swarm.Label(payload)
	case op == "ns.call":
		if sc := d.Namespaces[p.NS]; sc != nil && p.Call >= 0 && p.Call < len(sc.Calls) {
			return namespace.ToolID(sc.PluginID, sc.Calls[p.Call].Tool)
		}
		return "namespace"
	case p.ID != "":
		return p.ID
	case op == "mcp.call":
		return "mcp:" + p.Server + ":" + p.Tool
	case p.Server != "":
		return op + ":" + p.Server
	}
	return op
}

// target parses a nested call's request and resolves its catalog entry; e is nil for requests
// that are not tool calls.
func (d *Dispatcher) target(op string, payload []byte) (e *catalog.Entry, input json.RawMessage, err error) {
	switch op {
	case "callValue", "call":
		var p struct {
			ID    string          `json:"id"`
			Input json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, nil, badRequest(err)
		}
		e, err := d.guestEntry(p.ID)
		return e, normalInput(p.Input), err
	case "mcp.call":
		var p struct {
			Server string          `json:"server"`
			Tool   string          `json:"tool"`
			Input  json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, nil, badRequest(err)
		}
		e := d.Catalog.Lookup("mcp:" + p.Server + ":" + p.Tool)
		if e == nil {
			return nil, nil, &api.ToolError{Name: "Error", Code: "unknown_tool", Message: d.Catalog.UnknownMCPTool(p.Server, p.Tool)}
		}
		return e, normalInput(p.Input), nil
	case "ns.call":
		return d.namespaceTarget(payload)
	}
	return nil, nil, nil
}

// normalInput makes a missing or null input the empty object.
func normalInput(input json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(input); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return json.RawMessage("{}")
	}
	return input
}

// Precheck implements sandbox.Prechecker: it runs on the VM goroutine when a cell starts a nested
// call. A call that cannot run — an unknown tool, or one refused before hooks, approval and the
// tool (see refusal) — rejects at once, without a goroutine or a concurrency slot. Checking the
// input here also keeps the validator's deep recursion off the calls' fresh goroutine stacks.
func (d *Dispatcher) Precheck(c *sandbox.Call) (any, error) {
	if c.Op == swarm.OpRun {
		return d.admitAgent(c)
	}
	e, input, err := d.target(c.Op, c.Payload)
	if err != nil {
		// An unknown, denied or guessed id is an attempt worth auditing: record it.
		if t := d.Gate.Trajectory; t != nil && (c.Op == "callValue" || c.Op == "call" || c.Op == "mcp.call" || c.Op == "ns.call") {
			t.Record(api.TrajectoryEvent{Kind: api.EventNested, Time: time.Now(), Run: d.Run, CallID: c.ID,
				ParentCallID: d.ParentCallID, Tool: d.PendingLabel(c.Op, c.Payload), Status: "error", Error: err.Error()})
		}
		return nil, err
	}
	if e == nil {
		return nil, nil
	}
	// The schema is checked here once compiled; a tool's first call compiles it on its own
	// goroutine (execute), so a large hostile schema never stalls the VM goroutine.
	if e.Tool.Sequential {
		// issue 22 item 8: a run's calls to the sequential tools of one owner never overlap.
		c.Sequential = string(e.Tool.Source) + ":" + e.Tool.Owner
	}
	s, ready := e.CompiledInputSchema()
	if err := d.refusal(e, input, s); err != nil {
		d.Counters.Call.Add(1)
		if t := d.Gate.Trajectory; t != nil {
			t.Record(api.TrajectoryEvent{Kind: api.EventNested, Time: time.Now(), Run: d.Run, CallID: c.ID,
				ParentCallID: d.ParentCallID, Tool: e.ID, Input: input, Status: "error", Error: err.Error()})
		}
		return nil, err
	}
	return &prechecked{e, input, ready}, nil
}

// prechecked is a call Precheck resolved and accepted; Async gets it back in the Call.
type prechecked struct {
	e         *catalog.Entry
	input     json.RawMessage
	validated bool // the input schema was checked (or there is none to check)
}

// Async performs nested calls.
func (d *Dispatcher) Async(ctx context.Context, c *sandbox.Call) ([]byte, error) {
	op, payload := c.Op, c.Payload
	switch op {
	case "callValue", "call", "mcp.call", "ns.call":
		p, ok := c.Prechecked.(*prechecked)
		if !ok {
			e, input, err := d.target(op, payload)
			if err != nil {
				return nil, err
			}
			p = &prechecked{e: e, input: input}
		}
		e := p.e
		res, err := d.runCall(ctx, c, p)
		markUntrusted(c, e) // the result, or the error the tool made of it
		if err != nil {
			return nil, err
		}
		switch {
		case op == "call":
			return json.Marshal(map[string]any{"tool": e.ID, "result": resultJSON(res)})
		case op == "callValue" || op == "ns.call":
			return valueOf(e, res)
		case len(res.Details) > 0:
			return res.Details, nil // the MCP layer puts the McpToolResult here
		}
		return json.Marshal(resultJSON(res))
	case "mcp.resources.list", "mcp.resources.read", "mcp.prompts.list", "mcp.prompts.get":
		res, err := d.resources(ctx, op, payload)
		if server := d.untrustedServer(payload); server != "" {
			c.Untrusted("mcp:" + server)
		}
		return res, err
	case "results.save", "results.load", "results.delete":
		return d.resultsOp(ctx, c)
	case swarm.OpRun:
		if d.Swarm == nil {
			return nil, notAvailable()
		}
		t, _ := c.Prechecked.(*swarm.Ticket) // nil: started again here after its owner died
		v, untrusted, err := d.Swarm.Run(ctx, c.ID, t, payload)
		c.Untrusted(untrusted...) // what the child read, its answer may repeat
		return v, err
	}
	return nil, &api.ToolError{Name: "Error", Code: "unknown_request", Message: "unknown bridge request " + op}
}

// admitAgent checks an agents.run call when the cell makes it: swarm on, a run that may have
// side effects, the group's limits (see swarm.Group.Admit).
func (d *Dispatcher) admitAgent(c *sandbox.Call) (any, error) {
	if d.Swarm == nil {
		return nil, notAvailable()
	}
	if d.RestartSafe {
		return nil, &api.ToolError{Name: "Error", Code: "not_replay_safe",
			Message: "agents.run is not available in a restartSafe exec: a child agent may have side effects"}
	}
	return d.Swarm.Admit(c.ID, c.Payload)
}

func notAvailable() error {
	return &api.ToolError{Name: "Error", Code: "unavailable", Message: swarm.ErrNotAvailable.Error()}
}

// untrustedServer names the MCP server of a resources or prompts request when its content is
// untrusted: any of its tools is (the MCP layer marks a server's tools alike), or it has none
// to say otherwise.
func (d *Dispatcher) untrustedServer(payload []byte) string {
	var p struct {
		Server string `json:"server"`
	}
	if json.Unmarshal(payload, &p) != nil || !d.Catalog.HasServer(p.Server) {
		return ""
	}
	for _, srv := range d.Catalog.Servers() {
		if srv.Name != p.Server {
			continue
		}
		for _, e := range srv.Entries {
			if !e.Tool.Untrusted {
				return ""
			}
		}
	}
	return p.Server
}

func (d *Dispatcher) resources(ctx context.Context, op string, payload []byte) ([]byte, error) {
	var p struct {
		Server    string          `json:"server"`
		URI       string          `json:"uri"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, badRequest(err)
	}
	if d.Resources == nil || !d.Catalog.HasServer(p.Server) {
		return nil, &api.ToolError{Name: "Error", Code: "unknown_server", Message: fmt.Sprintf("MCP server %q is not available in this run", p.Server)}
	}
	d.Counters.Call.Add(1)
	var res json.RawMessage
	var err error
	switch op {
	case "mcp.resources.list":
		res, err = d.Resources.ListResources(ctx, p.Server)
	case "mcp.resources.read":
		res, err = d.Resources.ReadResource(ctx, p.Server, p.URI)
	case "mcp.prompts.list":
		res, err = d.Resources.ListPrompts(ctx, p.Server)
	default:
		res, err = d.Resources.GetPrompt(ctx, p.Server, p.Name, p.Arguments)
	}
	if err != nil {
		return nil, guestError(err)
	}
	if len(res) > MaxResultBytes {
		return nil, &api.ToolError{Name: "RangeError", Code: "result_too_large", Message: fmt.Sprintf("result is %d bytes (limit %d)", len(res), MaxResultBytes)}
	}
	// The declarations promise arrays for the list calls (mcp/index.d.ts): unwrap the MCP result.
	field := map[string]string{"mcp.resources.list": "resources", "mcp.prompts.list": "prompts"}[op]
	if field != "" {
		var m map[string]json.RawMessage
		if json.Unmarshal(res, &m) == nil {
			if v, ok := m[field]; ok && len(v) > 0 && string(v) != "null" {
				return v, nil
			}
			return []byte("[]"), nil
		}
	}
	return res, nil
}

// Execute runs one catalog entry through the shared executor path: every nested call — tools.*,
// MCP.*, namespaces — ends here. c is the sandbox call it answers (nil outside a cell).
func (d *Dispatcher) Execute(ctx context.Context, c *sandbox.Call, e *catalog.Entry, input json.RawMessage) (*api.Result, error) {
	return d.runCall(ctx, c, &prechecked{e: e, input: normalInput(input)})
}

func (d *Dispatcher) runCall(ctx context.Context, c *sandbox.Call, p *prechecked) (*api.Result, error) {
	d.Counters.Call.Add(1)
	e, input := p.e, p.input
	callID := d.ParentCallID + "/direct"
	if c != nil {
		callID = c.ID
	}
	start := time.Now()
	ev := api.TrajectoryEvent{Kind: api.EventNested, Time: start, Run: d.Run, CallID: callID,
		ParentCallID: d.ParentCallID, Tool: e.ID, Input: input}
	res, err := d.execute(ctx, c, p, callID, &ev)
	if t := d.Gate.Trajectory; t != nil {
		ev.DurationMs = time.Since(start).Milliseconds()
		switch {
		case err != nil:
			ev.Status, ev.Error = "error", err.Error()
		case res.IsError:
			ev.Status = "error"
		default:
			ev.Status = "ok"
		}
		if res != nil {
			ev.Result, _ = json.Marshal(resultJSON(res))
		}
		t.Record(ev)
	}
	return res, err
}

// refusal is why a call must not run at all, checked before hooks, approval and the tool: an
// invalid output contract (O4), restart safety (W6), an input that is not JSON and — given the
// compiled input schema — an input that fails it, so the cell learns which field is wrong and why
// and nobody is asked to approve a call that cannot be right.
func (d *Dispatcher) refusal(e *catalog.Entry, input json.RawMessage, schema *contract.Schema) error {
	if err := e.ContractError(); err != nil {
		return &api.ToolError{Name: "Error", Code: "invalid_output_schema", Message: fmt.Sprintf("%s cannot run: %v", e.ID, err)}
	}
	if d.RestartSafe && !e.Tool.ReadOnly {
		return &api.ToolError{Name: "Error", Code: "not_replay_safe",
			Message: fmt.Sprintf("%s is not declared read-only/replay-safe and this exec is restartSafe: it was not called", e.ID)}
	}
	if !json.Valid(input) {
		return &api.ToolError{Name: "TypeError", Code: string(api.CodeInvalidInput), Message: "tool input is not valid JSON"}
	}
	if schema != nil {
		if err := schema.ValidateInput(input); err != nil {
			ce := &api.ToolError{Name: "TypeError", Code: string(api.CodeInvalidInput),
				Message: fmt.Sprintf("%s was not called: the input does not match its input schema: %v", e.ID, err)}
			var ie *contract.InputError
			if errors.As(err, &ie) {
				ce.Details, _ = json.Marshal(map[string]any{"failures": ie.Failures})
			}
			return ce
		}
	}
	return nil
}

// execute runs the call; ev is its trajectory event, completed here with the input that ran.
func (d *Dispatcher) execute(ctx context.Context, c *sandbox.Call, p *prechecked, callID string, ev *api.TrajectoryEvent) (*api.Result, error) {
	e, input := p.e, p.input
	// The refusals again (defense in depth: a caller that skipped Precheck still gets them), and
	// the input schema unless Precheck checked it.
	var schema *contract.Schema
	if !p.validated {
		schema = e.InputSchema()
	}
	if err := d.refusal(e, input, schema); err != nil {
		return nil, err
	}
	hev := &api.ToolCallEvent{ToolID: e.ID, ToolName: e.Tool.Name, Source: e.Tool.Source, ToolKind: api.ToolKindTool,
		Input: input, Run: d.Run, ParentCallID: d.ParentCallID, Nested: true}
	need, err := d.Gate.Check(ctx, hev, e.Tool.ReadOnly, e.ID)
	if !bytes.Equal(hev.Input, input) {
		ev.Input, ev.OriginalInput = hev.Input, input
	}
	if err != nil {
		return nil, err
	}
	if need != nil {
		req := api.ApprovalRequest{CallID: callID, Tool: e.ID, Input: hev.Input, ReadOnly: e.Tool.ReadOnly, Run: d.Run, RunID: d.RunID}
		if err := d.awaitApproval(ctx, c, need, req); err != nil {
			return nil, err
		}
	}
	impl := e.Tool
	if t, ok := d.Tools[e.ID]; ok {
		impl = t
	}
	if d.CheckTool != nil {
		if err := d.CheckTool(impl); err != nil {
			return nil, err
		}
	}
	if impl.Execute == nil {
		return nil, &api.ToolError{Name: "Error", Code: "unavailable", Message: e.ID + " has no implementation"}
	}
	res, err := impl.Execute(relay.WithSource(ctx, d.currentClient), &api.Call{ToolID: e.ID, Input: hev.Input, Run: d.Run, ParentCallID: d.ParentCallID,
		Update: d.updater(callID, e.ID)})
	d.finishProgress(callID, e.ID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &api.ToolError{Name: "AbortError", Code: "cancelled", Message: e.ID + " was cancelled: " + ctx.Err().Error()}
		}
		ge := guestError(err)
		if !strings.Contains(ge.Message, e.ID) {
			// Name the tool (and for MCP the server): "mcp:github:create_issue: server not connected".
			ge = &api.ToolError{Name: ge.Name, Code: ge.Code, Details: ge.Details, Message: e.ID + ": " + ge.Message}
		}
		return nil, ge
	}
	if res == nil {
		res = &api.Result{}
	}
	if n := resultSize(res); n > MaxResultBytes {
		return nil, &api.ToolError{Name: "RangeError", Code: "result_too_large", Message: fmt.Sprintf("%s returned %d bytes (limit %d)", e.ID, n, MaxResultBytes)}
	}
	if len(res.Details) > 0 && !json.Valid(res.Details) {
		return nil, &api.ToolError{Name: "Error", Code: "invalid_result", Message: e.ID + " returned details that are not valid JSON"}
	}
	if c := e.Contract(); c != nil {
		if err := c.Check(res.Details); err != nil {
			// O4: fail without printing the value.
			return nil, &api.ToolError{Name: "Error", Code: "output_contract_violation",
				Message: fmt.Sprintf("%s returned details that do not match its declared outputSchema (%s)", e.ID, err)}
		}
	}
	return res, nil
}

// updater is the Update function of a nested call (E1): progress a tool streams (an MCP server's
// notifications/progress included) reaches the trajectory and, when the exec or wait driving the
// run has a progress sink (an MCP client asked for progress), that client.
func (d *Dispatcher) updater(callID, toolID string) func(api.ContentBlock) {
	return func(b api.ContentBlock) {
		if t := d.Gate.Trajectory; t != nil {
			t.Record(api.TrajectoryEvent{Kind: api.EventUpdate, Time: time.Now(), Run: d.Run, CallID: callID,
				ParentCallID: d.ParentCallID, Tool: toolID, Update: &b})
		}
		p, total, msg := d.prog.report(callID, b)
		if s := d.sink.Load(); s != nil {
			(*s)(p, total, d.label(toolID)+": "+msg)
		}
	}
}

// label names a nested call in progress messages: its tool id, after the exec's title if any.
func (d *Dispatcher) label(toolID string) string {
	if d.Title != "" {
		return d.Title + " — " + toolID
	}
	return toolID
}

// finishProgress completes a nested call's part of the run's progress stream (progress.go).
func (d *Dispatcher) finishProgress(callID, toolID string) {
	if p, total, moved := d.prog.finish(callID); moved {
		if s := d.sink.Load(); s != nil {
			(*s)(p, total, d.label(toolID)+": done")
		}
	}
}

// resultSize is what a result counts against MaxResultBytes: its details and content blocks,
// once. An MCP result (Raw set) carries its content blocks inside Details already, as the
// server's own {content, structuredContent?, …}: counting Content again made a 4.1 MiB result
// fail the 8 MiB limit (issue 18 item 8).
func resultSize(res *api.Result) int {
	if res.Raw != nil {
		return len(res.Details)
	}
	return len(res.Details) + contentSize(res.Content)
}

func contentSize(blocks []api.ContentBlock) int {
	n := 0
	for _, b := range blocks {
		n += len(b.Text) + len(b.Data) + len(b.Resource)
	}
	return n
}

// guestError converts a tool error into plain guest data.
func guestError(err error) *api.ToolError {
	var ce *api.ToolError
	if errors.As(err, &ce) {
		return ce
	}
	msg := err.Error()
	if len(msg) > 4000 {
		msg = msg[:4000] + "…"
	}
	return &api.ToolError{Name: "Error", Code: "tool_error", Message: msg}
}

func resultJSON(res *api.Result) map[string]any {
	m := map[string]any{"content": res.Content}
	if res.Content == nil {
		m["content"] = []api.ContentBlock{}
	}
	if len(res.Details) > 0 {
		m["details"] = res.Details
	}
	if res.IsError {
		m["isError"] = true
	}
	return m
}

// valueOf is what tools.callValue returns: the details value. A result flagged isError throws;
// a tool with no details yields its text content (or null).
func valueOf(e *catalog.Entry, res *api.Result) ([]byte, error) {
	if res.IsError {
		msg := textOf(res.Content)
		if msg == "" {
			msg = "the tool reported an error"
		}
		return nil, &api.ToolError{Name: "Error", Code: "tool_error", Message: e.ID + ": " + msg, Details: res.Details}
	}
	if len(res.Details) > 0 {
		return res.Details, nil
	}
	if t := textOf(res.Content); t != "" {
		return json.Marshal(t)
	}
	return []byte("null"), nil
}

func textOf(blocks []api.ContentBlock) string {
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ReplaySafe reports whether a nested request may run again without harm when the process that
// ran it died before its result was saved: a call of a tool declared read-only (never an MCP
// tool, whose annotations are untrusted), or a read of MCP resources and prompts (W6).
func (d *Dispatcher) ReplaySafe(op string, payload []byte) bool {
	switch op {
	case swarm.OpRun:
		// Not replayed from the start: the child continues from its last checkpoint, and a
		// child that never checkpointed has run no tool yet.
		return d.Swarm != nil
	case "mcp.resources.list", "mcp.resources.read", "mcp.prompts.list", "mcp.prompts.get", "results.load":
		return true
	case "callValue", "call", "mcp.call":
		e, _, err := d.target(op, payload)
		return err == nil && e != nil && e.Tool.ReadOnly && e.Tool.Source != api.SourceMCP
	case "ns.call":
		var p struct {
			NS   string `json:"ns"`
			Call int    `json:"call"`
		}
		if json.Unmarshal(payload, &p) != nil {
			return false
		}
		sc := d.Namespaces[p.NS]
		if sc == nil || p.Call < 0 || p.Call >= len(sc.Calls) {
			return false
		}
		e := d.Catalog.Lookup(namespace.ToolID(sc.PluginID, sc.Calls[p.Call].Tool))
		return e != nil && e.Tool.ReadOnly && e.Tool.Source != api.SourceMCP
	}
	return false
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// owner is a tool's server or plugin id as search results name it ("core" for built-ins).
func owner(t *api.Tool) string {
	if t.Owner == "" {
		return api.CoreOwner
	}
	return t.Owner
}
