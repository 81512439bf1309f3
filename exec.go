package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/admission"
	"github.com/codemode-go/codemode/internal/dispatch"
	"github.com/codemode-go/codemode/internal/durable"
	"github.com/codemode-go/codemode/internal/namespace"
	"github.com/codemode-go/codemode/internal/progress"
	"github.com/codemode-go/codemode/internal/relay"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/sandbox"
	"github.com/codemode-go/codemode/internal/source"
	"github.com/codemode-go/codemode/internal/untrusted"
)

// ExecInput is the input of the exec tool (X1–X2, W6), as Surface.Exec takes it from Go. A
// model's own call goes through Handle, which decodes its JSON arguments strictly.
type ExecInput struct {
	// Code is the cell: the body of an async JavaScript or TypeScript function (top-level await,
	// return the result).
	Code string `json:"code,omitempty"`
	// Command is an alias of Code for hook policies and trusted rewrites; when both are given
	// they must be equal.
	Command string `json:"command,omitempty"`
	// Language is "javascript" ("" means javascript) or "typescript".
	Language string `json:"language,omitempty"`
	// RestartSafe declares read-only work: tools not declared read-only are refused before they
	// run, pending work is never drained automatically, and waiting results say restartSafe (W6).
	RestartSafe bool `json:"restartSafe,omitempty"`
	// Title is an optional short label of the cell, shown in progress and recorded in the
	// trajectory; longer than MaxTitleRunes characters it is shortened, never refused.
	Title string `json:"title,omitempty"`
}

// MaxTitleRunes bounds an exec's title.
const MaxTitleRunes = 120

// cleanTitle keeps a title to one bounded line.
func cleanTitle(t string) string {
	t = strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, t)), " ")
	if r := []rune(t); len(r) > MaxTitleRunes {
		t = string(r[:MaxTitleRunes-1]) + "…"
	}
	return t
}

// execArgs is exec's input as the model sent it: a field that is present, even empty, differs
// from an absent one (X1: when both code and command are present they must be equal).
type execArgs struct {
	Code        *string `json:"code,omitempty"`
	Command     *string `json:"command,omitempty"`
	Language    *string `json:"language,omitempty"`
	RestartSafe bool    `json:"restartSafe,omitempty"`
	Title       string  `json:"title,omitempty"`
}

// args is the input as Handle would have decoded it: an empty string is an absent field.
func (in ExecInput) args() execArgs {
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return execArgs{Code: opt(in.Code), Command: opt(in.Command), Language: opt(in.Language), RestartSafe: in.RestartSafe, Title: in.Title}
}

// WaitInput is the input of the wait tool.
type WaitInput struct {
	// RunID is the runId of a waiting result.
	RunID string `json:"runId"`
}

// CallResult is the outcome of one model tool call handled by Surface.Handle. Exactly one field
// is set.
type CallResult struct {
	// Exec is the CodeModeResult of an exec or wait call.
	Exec *api.ExecResult
	// Tool is the result of a direct tool (a direct-only tool, or any tool when code mode is not
	// active). Tool.IsError is the tool's own verdict.
	Tool *api.Result
	// Err says why a direct tool did not run or failed: unknown tool, invalid input, blocked by a
	// hook, not approved, or the tool's error.
	Err error
	// untrusted are the sources of a direct tool's result when the tool is Untrusted.
	untrusted []string
}

// IsError reports whether the call failed: a failed exec/wait, an error result, or Err.
func (r CallResult) IsError() bool {
	switch {
	case r.Exec != nil:
		return r.Exec.Status == api.StatusFailed
	case r.Tool != nil:
		return r.Tool.IsError
	}
	return true
}

// Text is the result as a model reads it: the CodeModeResult as JSON for exec and wait, the
// text content of a direct tool (its details as JSON when it has no text), or the error.
func (r CallResult) Text() string {
	switch {
	case r.Exec != nil:
		b, err := json.Marshal(r.Exec)
		if err != nil {
			return `{"status":"failed","error":"cannot encode the result","code":"internal_error"}`
		}
		if len(r.Exec.Untrusted) > 0 {
			// issue 22 item 6: what untrusted sources said reaches the model inside a marking
			// it cannot close.
			return untrusted.Wrap(string(b), r.Exec.Untrusted)
		}
		return string(b)
	case r.Tool != nil:
		var parts []string
		for _, c := range r.Tool.Content {
			if c.Type == "text" {
				parts = append(parts, c.Text)
			} else {
				parts = append(parts, "["+c.Type+" content]")
			}
		}
		text := strings.Join(parts, "\n")
		if len(parts) == 0 && len(r.Tool.Details) > 0 {
			text = string(r.Tool.Details)
		}
		if len(r.untrusted) > 0 {
			return untrusted.Wrap(text, r.untrusted)
		}
		return text
	case r.Err != nil:
		return r.Err.Error()
	}
	return ""
}

// Handle runs one model tool call by name: exec and wait when code mode is active, otherwise a
// direct tool of the run. It is the one entry point for embedders (the MCP gateway, the agent
// loop, the CLI): they need not route by tool name. args is the call's JSON arguments.
func (s *Surface) Handle(ctx context.Context, callID, name string, args json.RawMessage) CallResult {
	if s.active {
		switch name {
		case "exec":
			var in execArgs
			if err := decodeStrict(args, &in, "exec"); err != nil {
				return CallResult{Exec: s.refuse(callID, name, args, err)}
			}
			res := s.exec(ctx, callID, in, args)
			return CallResult{Exec: &res}
		case "wait":
			var in WaitInput
			if err := decodeStrict(args, &in, "wait"); err != nil {
				return CallResult{Exec: s.refuse(callID, name, args, err)}
			}
			res := s.Wait(ctx, callID, in)
			return CallResult{Exec: &res}
		}
	}
	res, err := s.callDirect(ctx, callID, name, args)
	if err != nil {
		return CallResult{Err: err}
	}
	out := CallResult{Tool: res}
	if t := s.byName[name]; t != nil && t.Untrusted {
		out.untrusted = []string{dispatch.Provenance(t)}
	}
	return out
}

// refuse fails a control call whose arguments do not decode, recording it like any other: the
// trajectory holds every call the model made.
func (s *Surface) refuse(callID, name string, args json.RawMessage, err error) *api.ExecResult {
	now := time.Now()
	res := s.failed(now, api.CodeInvalidInput, err.Error())
	input := args
	if !json.Valid(input) {
		input, _ = json.Marshal(string(args))
	}
	s.record(&api.TrajectoryEvent{Kind: api.EventControl, Time: now, Run: s.run, CallID: callID, Tool: name, Input: input}, res)
	s.observe(name, "", &res, nil)
	return &res
}

// suspendedRun is what the run store keeps between exec and wait.
type suspendedRun struct {
	run         *sandbox.Run
	disp        *dispatch.Dispatcher
	restartSafe bool
}

func (s *suspendedRun) Close() { s.run.Close() }

func decodeStrict(raw json.RawMessage, v any, what string) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := err.Error()
		msg = strings.TrimPrefix(msg, "json: ")
		return fmt.Errorf("%s: invalid input: %s", what, msg)
	}
	if dec.More() {
		return fmt.Errorf("%s: invalid input: trailing data after the JSON object", what)
	}
	return nil
}

// Exec runs a cell (exec, X1–X9). callID identifies the exec tool call: it is the parent of the
// cell's nested calls in hooks and the trajectory.
func (s *Surface) Exec(ctx context.Context, callID string, in ExecInput) api.ExecResult {
	return s.exec(ctx, callID, in.args(), nil)
}

// exec runs a cell and records it; raw is the input as the model sent it, when known (hooks and
// the trajectory see it unchanged).
func (s *Surface) exec(ctx context.Context, callID string, in execArgs, raw json.RawMessage) api.ExecResult {
	if raw == nil {
		raw, _ = json.Marshal(in)
	}
	in.Title = cleanTitle(in.Title)
	tr := api.TrajectoryEvent{Kind: api.EventControl, Time: time.Now(), Run: s.run, CallID: callID, Tool: "exec", Input: raw, Title: in.Title}
	res := s.runExec(ctx, callID, in, raw, &tr)
	tr.CodeModeRunID = res.RunID
	s.record(&tr, res)
	s.observe("exec", "", &res, nil)
	return res
}

// record completes a control call's trajectory event with its result and records it.
func (s *Surface) record(tr *api.TrajectoryEvent, res api.ExecResult) {
	t := s.rt.opts.Trajectory
	if t == nil {
		return
	}
	tr.Status, tr.Error = res.Status, res.Error
	tr.ParentCallID = s.parentCall()
	tr.DurationMs = time.Since(tr.Time).Milliseconds()
	tr.Result, _ = json.Marshal(res)
	t.Record(*tr)
}

func (s *Surface) runExec(ctx context.Context, callID string, in execArgs, raw json.RawMessage, tr *api.TrajectoryEvent) api.ExecResult {
	start := tr.Time
	rt := s.rt
	if !s.active {
		return s.failed(start, api.CodeInvalidInput, s.inactive())
	}
	code, lang, err := s.resolveExec(in)
	if err != nil {
		return s.failed(start, api.CodeInvalidInput, err.Error())
	}
	// X5: hooks see the exec itself — with code and command as the model sent them — marked so a
	// policy can tell it from a shell command. A hook may rewrite the input: what it returns is
	// what runs, and the trajectory keeps both.
	ev := &api.ToolCallEvent{ToolID: "exec", ToolName: "exec", ToolKind: api.ToolKindCodeModeExec,
		ToolInputKind: lang, Input: raw, Run: s.run}
	if err := s.gateOf().Authorize(ctx, ev, false, "exec", callID); err != nil {
		return s.failed(start, gateCode(err), err.Error())
	}
	if !bytes.Equal(ev.Input, raw) {
		tr.Input, tr.OriginalInput = ev.Input, raw
		var rewritten execArgs
		if err := decodeStrict(ev.Input, &rewritten, "exec (as rewritten by a before_tool_call hook)"); err != nil {
			return s.failed(start, api.CodeInvalidInput, err.Error())
		}
		in = rewritten
		if code, lang, err = s.resolveExec(in); err != nil {
			return s.failed(start, api.CodeInvalidInput, "exec (as rewritten by a before_tool_call hook): "+err.Error())
		}
	}
	if rt.engine == nil {
		return s.failed(start, api.CodeRuntimeUnavailable, "code mode runtime unavailable: "+errString(rt.Err()))
	}
	prog, code2, err := s.prepare(ctx, code, lang)
	if err != nil {
		return s.failed(start, code2, err.Error())
	}
	prog.OfferTypeScript = slices.Contains(rt.cm.Languages, source.TypeScript)
	tmpl, err := s.template(ctx)
	if err != nil {
		return s.failed(start, api.CodeRuntimeUnavailable, "code mode runtime unavailable: "+err.Error())
	}
	disp := s.dispatcher(callID, in.RestartSafe)
	disp.Title = cleanTitle(in.Title)
	nsJSON := s.buildNamespaces(ctx, disp)
	lim := rt.limits()
	lim.RestartSafe = in.RestartSafe
	s.admit(&lim)
	if sink := progress.From(ctx); sink != nil && disp.Title != "" {
		sink(0, 0, disp.Title) // the cell's title first, then its calls' progress
	}
	disp.SetProgress(progress.From(ctx))
	disp.SetClient(relay.From(ctx))
	defer disp.SetProgress(nil)
	defer flushNotes(disp)
	cellID := callID
	if rt.durable != nil {
		if res, refused := s.storeRefuses(ctx, start); refused {
			return res // before any work: a cell that suspended now could not be saved
		}
		cellID = durablePrefix(callID)
		disp.ParentCallID = cellID
	}
	s.attachSwarm(disp)
	run, out := rt.engine.Start(ctx, disp, tmpl, lim, sandbox.Cell{Program: prog, CallID: cellID, Namespaces: nsJSON, Swarm: disp.Swarm != nil})
	if rt.durable != nil && out.Status == api.StatusWaiting {
		return s.suspendNew(ctx, start, run, disp, out, in.RestartSafe, tr)
	}
	return s.finish(start, run, disp, out, in.RestartSafe, nil, tr)
}

// prepare turns the cell into the program the VM runs. The TypeScript transform (esbuild) is
// the one costly step — up to ~80 MB and 0.6 s for a hostile 64 KiB cell within the nesting
// bounds (RATIONALE.md, "Why is TypeScript measured before esbuild?") — and it cannot be
// interrupted, so it runs holding an admission slot like a VM: a burst of transforms waits in
// the same fair queue instead of running outside the memory budget. The size and nesting checks
// (a token scan) come first and refuse a hostile cell without waiting for a slot.
func (s *Surface) prepare(ctx context.Context, code, lang string) (*source.Program, api.ErrorCode, error) {
	if lang == source.TypeScript {
		if err := source.Check(code, lang); err != nil {
			return nil, api.CodeInvalidInput, err // refused before it waits for a slot
		}
		var lim sandbox.Limits
		if s.admit(&lim); lim.Admit != nil {
			slot, err := lim.Admit(ctx) // the same slot and fair share as the cell's VM
			if err != nil {
				return nil, admitErrCode(err), err
			}
			defer slot.Release()
		}
	}
	prog, err := source.Prepare(code, lang)
	if err != nil {
		return nil, api.CodeInvalidInput, err
	}
	return prog, "", nil
}

// admitErrCode is the result code of a refused admission: timeout when the caller gave up
// while queued, otherwise overloaded.
func admitErrCode(err error) api.ErrorCode {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return api.CodeTimeout
	}
	return api.CodeOverloaded
}

// inactive says why exec cannot run in this run.
func (s *Surface) inactive() string {
	if !s.rt.cm.Enabled {
		return "code mode is not active in this run: it is disabled (Options.CodeMode.Enabled is false; in a configuration file, tools.codeMode is not true)"
	}
	return "code mode is not active in this run: the run has no tools (disableTools, an empty allow list, or a raw model call)"
}

func (s *Surface) resolveExec(in execArgs) (code, lang string, err error) {
	src := source.Input{Code: in.Code, Command: in.Command, Language: in.Language}
	if code, err = source.ResolveCode(src); err != nil {
		return "", "", err
	}
	lang, err = source.ResolveLanguage(src, s.rt.cm.Languages)
	return code, lang, err
}

// gateCode is the error code of a refused exec or wait: the hook's own (blocked, hook_failed,
// not_approved).
func gateCode(err error) api.ErrorCode {
	var te *api.ToolError
	if errors.As(err, &te) && te.Code != "" {
		return api.ErrorCode(te.Code)
	}
	return api.CodeInvalidInput
}

// Wait continues a suspended run (wait, W1–W7).
func (s *Surface) Wait(ctx context.Context, callID string, in WaitInput) api.ExecResult {
	input, _ := json.Marshal(in)
	tr := api.TrajectoryEvent{Kind: api.EventControl, Time: time.Now(), Run: s.run, CallID: callID, Tool: "wait",
		Input: input, CodeModeRunID: in.RunID}
	res := s.runWait(ctx, callID, in, input, &tr)
	s.record(&tr, res)
	s.observe("wait", in.RunID, &res, nil)
	return res
}

func (s *Surface) runWait(ctx context.Context, callID string, in WaitInput, input json.RawMessage, tr *api.TrajectoryEvent) api.ExecResult {
	start := tr.Time
	if strings.TrimSpace(in.RunID) == "" {
		return s.failed(start, api.CodeInvalidInput, "wait: `runId` is required: pass the runId of a waiting result")
	}
	if err := s.gateOf().Authorize(ctx, &api.ToolCallEvent{ToolID: "wait", ToolName: "wait",
		ToolKind: api.ToolKindCodeModeWait, Input: input, Run: s.run}, false, "wait", callID); err != nil {
		return s.failed(start, gateCode(err), err.Error())
	}
	if s.rt.durable != nil {
		return s.waitDurable(ctx, in, start, tr)
	}
	e, err := s.rt.store.Acquire(in.RunID, s.run)
	if errors.Is(err, runstore.ErrBusy) {
		// Another wait of this process runs it: it ends within timeoutMs.
		return s.busy(start, in.RunID, &runstore.BusyError{RetryAfter: s.rt.cm.Timeout()})
	}
	if err != nil {
		return s.failed(start, api.CodeInvalidInput, err.Error())
	}
	sr := e.Value.(*suspendedRun)
	lim := s.rt.limits()
	lim.RestartSafe = sr.restartSafe
	s.admit(&lim)
	sr.disp.SetProgress(progress.From(ctx))
	sr.disp.SetClient(relay.From(ctx))
	defer sr.disp.SetProgress(nil)
	defer flushNotes(sr.disp)
	out := sr.run.Resume(ctx, lim)
	if out.Code == api.CodeOverloaded {
		// Refused a slot before the VM was resumed: the run stays for another wait.
		s.rt.store.Release(e, sr.run.SnapshotBytes())
		res := out.ExecResult
		res.Telemetry = s.telemetry(start)
		return res
	}
	return s.finish(start, sr.run, sr.disp, out, sr.restartSafe, e, tr)
}

// admit wires admission control (Options.Admission) into one exec or wait: the sandbox asks for
// a slot, keyed by principal (or session) for fairness, right before it runs a VM, and gives
// its CPU share back while the VM only waits for nested calls or timers (issue 18 item 4).
func (s *Surface) admit(lim *sandbox.Limits) {
	a := s.rt.adm
	if a == nil {
		return
	}
	key := s.run.SessionKey
	if s.run.Principal != "" {
		key = "principal:" + s.run.Principal // one principal's sessions share one fair share
	}
	lim.Admit = func(ctx context.Context) (sandbox.Slot, error) {
		sl, err := a.AcquireSlot(ctx, key)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return sl, nil
	}
}

// admitter hands out VM slots: internal/admission's Controller, or a test's stand-in.
type admitter interface {
	AcquireSlot(ctx context.Context, session string) (sandbox.Slot, error)
}

// controllerAdmitter is the admission controller as an admitter.
type controllerAdmitter struct{ c *admission.Controller }

func (a controllerAdmitter) AcquireSlot(ctx context.Context, session string) (sandbox.Slot, error) {
	sl, err := a.c.AcquireSlot(ctx, session)
	if err != nil {
		return nil, err
	}
	return sl, nil
}

// finish turns a sandbox outcome into the result union, storing or dropping the run; tr (the
// control call's trajectory event) learns which nested calls this call delivered.
func (s *Surface) finish(start time.Time, run *sandbox.Run, disp *dispatch.Dispatcher, out sandbox.Outcome, restartSafe bool, stored *runstore.Entry, tr *api.TrajectoryEvent) api.ExecResult {
	res := out.ExecResult
	tr.Delivered = out.Delivered
	switch res.Status {
	case api.StatusWaiting:
		res.RestartSafe = restartSafe
		if stored != nil {
			res.RunID = stored.ID
			s.rt.store.Release(stored, run.SnapshotBytes())
		} else {
			id := runstore.NewID()
			disp.RunID = id
			if err := s.rt.store.Put(id, s.run, &suspendedRun{run: run, disp: disp, restartSafe: restartSafe}, run.SnapshotBytes()); err != nil {
				run.Close()
				res = api.ExecResult{Status: api.StatusFailed, Code: api.CodeInvalidInput, Error: err.Error(), Output: out.Output}
				break
			}
			res.RunID = id
		}
	case api.StatusCompleted:
	default:
		res.Status = api.StatusFailed
	}
	if res.Status != api.StatusWaiting {
		if stored != nil {
			s.rt.store.Remove(stored) // W4: terminal → the snapshot is gone
		} else {
			run.Close()
		}
	}
	res.Telemetry = s.telemetry(start)
	return res
}

func (s *Surface) failed(start time.Time, code api.ErrorCode, msg string) api.ExecResult {
	return api.ExecResult{Status: api.StatusFailed, Code: code, Error: msg, Telemetry: s.telemetry(start)}
}

// busy is the result of a wait on a run another wait holds (W3): not a failure of the run —
// it carries the runId and when to retry (the other wait's end, or its lease running out when
// its replica died).
func (s *Surface) busy(start time.Time, runID string, err error) api.ExecResult {
	res := durable.Busy(runID, err)
	res.Telemetry = s.telemetry(start)
	return res
}

// telemetry reports the run's cumulative counters (Y1): see runCounters.
func (s *Surface) telemetry(start time.Time) api.Telemetry {
	t := api.Telemetry{VisibleTools: s.ToolNames(), DurationMs: time.Since(start).Milliseconds()}
	if s.cached != nil {
		t.CatalogSize = len(s.cached.cat.Entries)
		t.Sources = s.cached.cat.Counts()
	}
	c := s.rt.counters.get(s.run)
	t.SearchCount, t.DescribeCount, t.CallCount = int(c.Search.Load()), int(c.Describe.Load()), int(c.Call.Load())
	return t
}

func (s *Surface) dispatcher(callID string, restartSafe bool) *dispatch.Dispatcher {
	rt := s.rt
	return &dispatch.Dispatcher{
		Catalog: s.cached.cat, Tools: s.byID, Run: s.run, ParentCallID: callID, Gate: s.gateOf(),
		Resources: rt.opts.Resources, RestartSafe: restartSafe, SearchLimit: rt.cm.SearchLimit,
		Counters: s.rt.counters.get(s.run), CheckTool: rt.checkTool, Results: rt.results,
		ResultsRunID: s.rootRun(),
	}
}

// buildNamespaces creates the run's namespace scopes (N3) for one exec and returns what the
// guest installs. A namespace whose createScope fails is left out of this exec (and logged): a
// broken plugin must not break cells that never use it.
func (s *Surface) buildNamespaces(ctx context.Context, disp *dispatch.Dispatcher) []byte {
	if len(s.namespaces) == 0 {
		return nil
	}
	disp.Namespaces = map[string]*namespace.Scope{}
	guest := make([]namespace.Guest, 0, len(s.namespaces))
	for _, e := range s.namespaces {
		sc, err := namespace.Build(ctx, e, api.NamespaceContext{Run: s.run})
		if err != nil {
			s.rt.log.Warn("namespace left out of this exec", "namespace", e.NS.ID, "plugin", e.PluginID, "err", err)
			continue
		}
		disp.Namespaces[sc.ID] = sc
		guest = append(guest, sc.GuestJSON())
	}
	b, _ := json.Marshal(guest)
	return b
}

func (rt *Runtime) limits() sandbox.Limits {
	return sandbox.Limits{
		Timeout:          rt.cm.Timeout(),
		MemoryLimit:      uint64(rt.cm.MemoryLimitBytes),
		MaxOutputBytes:   rt.cm.MaxOutputBytes,
		MaxPending:       rt.cm.MaxPendingToolCalls,
		MaxSnapshotBytes: rt.cm.MaxSnapshotBytes,
	}
}

// template returns the VM template with this surface's catalog installed (built once per
// catalog version).
func (s *Surface) template(ctx context.Context) (*sandbox.Template, error) {
	cc := s.cached
	cc.tmplOnce.Do(func() {
		setup, err := json.Marshal(setupData(cc))
		if err != nil {
			cc.tmplErr = err
			return
		}
		cc.tmpl, cc.tmplErr = s.rt.engine.NewTemplate(context.WithoutCancel(ctx), setup)
	})
	return cc.tmpl, cc.tmplErr
}

func setupData(cc *cachedCatalog) map[string]any {
	cat := cc.cat
	tools := make([]map[string]any, 0, len(cat.Guest()))
	names := [][2]string{}
	for _, e := range cat.Guest() {
		tools = append(tools, e.JSON())
		if e.SafeName != "" {
			names = append(names, [2]string{e.SafeName, e.ID})
		}
	}
	servers := []map[string]any{}
	for _, srv := range cat.Servers() {
		ts := make([][2]string, len(srv.Entries))
		for i, e := range srv.Entries {
			ts[i] = [2]string{e.JSName, e.Tool.Name}
		}
		servers = append(servers, map[string]any{"server": srv.Name, "js": srv.JS, "tools": ts})
	}
	return map[string]any{"tools": tools, "safeNames": names, "mcp": servers}
}

func errString(err error) string {
	if err == nil {
		return "unknown reason"
	}
	return err.Error()
}

// Decide settles a call that waits for a person's decision in a suspended run: one listed in
// the pendingApprovals of a waiting result (reason "approval"). Approved, the call runs (the next
// wait delivers its result); rejected, the cell gets a catchable error with dec.Reason. Nothing
// that ran before runs again. Decisions are scoped like wait (agent, session, run), one-shot, and
// fail for unknown, forged or expired call ids.
func (s *Surface) Decide(ctx context.Context, runID, callID string, dec api.Decision) error {
	if s.rt.durable != nil {
		return s.decideDurable(ctx, runID, callID, dec)
	}
	e, err := s.rt.store.Lookup(runID, s.run)
	if err != nil {
		return err
	}
	return e.Value.(*suspendedRun).disp.Decide(callID, dec)
}
