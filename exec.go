package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/dispatch"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/sandbox"
	"github.com/codemode-go/codemode/internal/source"
)

// ExecInput is exec's input (X1–X2, W6).
type ExecInput struct {
	Code        *string `json:"code,omitempty"`
	Command     *string `json:"command,omitempty"`
	Language    *string `json:"language,omitempty"`
	RestartSafe bool    `json:"restartSafe,omitempty"`
}

// WaitInput is wait's input.
type WaitInput struct {
	RunID string `json:"runId"`
}

// suspendedRun is what the run store keeps between exec and wait.
type suspendedRun struct {
	run        *sandbox.Run
	disp       *dispatch.Dispatcher
	replaySafe bool
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

// Exec runs a cell (SPEC §3). callID identifies the exec tool call (the parent of nested calls).
func (s *Surface) Exec(ctx context.Context, callID string, raw json.RawMessage) api.ExecResult {
	start := time.Now()
	if !s.Active {
		return s.failed(start, nil, api.CodeInvalidInput, "code mode is not active in this run")
	}
	var in ExecInput
	if err := decodeStrict(raw, &in, "exec"); err != nil {
		return s.failed(start, nil, api.CodeInvalidInput, err.Error())
	}
	return s.ExecInput(ctx, callID, in)
}

// ExecInput runs a decoded exec input.
func (s *Surface) ExecInput(ctx context.Context, callID string, in ExecInput) api.ExecResult {
	start := time.Now()
	rt := s.rt
	if !s.Active {
		return s.failed(start, nil, api.CodeInvalidInput, "code mode is not active in this run")
	}
	src := source.Input{Code: in.Code, Command: in.Command, Language: in.Language}
	code, err := source.ResolveCode(src)
	if err != nil {
		return s.failed(start, nil, api.CodeInvalidInput, err.Error())
	}
	lang, err := source.ResolveLanguage(src, rt.cm.Languages)
	if err != nil {
		return s.failed(start, nil, api.CodeInvalidInput, err.Error())
	}
	counters := &dispatch.Counters{}
	// X5: hooks see the exec itself, marked so a policy can tell it from a shell command.
	input, _ := json.Marshal(map[string]any{"code": code, "language": lang})
	if msg, blocked := s.runHooks(ctx, &api.ToolCallEvent{ToolID: "exec", ToolName: "exec",
		ToolKind: api.ToolKindCodeModeExec, ToolInputKind: lang, Input: input, Run: s.run}); blocked {
		return s.failed(start, counters, "", msg)
	}
	if rt.engine == nil {
		return s.failed(start, counters, api.CodeRuntimeUnavailable, "code mode runtime unavailable: "+errString(rt.engineErr))
	}
	prog, err := source.Prepare(code, lang)
	if err != nil {
		return s.failed(start, counters, api.CodeInvalidInput, err.Error())
	}
	tmpl, err := s.template(ctx)
	if err != nil {
		return s.failed(start, counters, api.CodeRuntimeUnavailable, "code mode runtime unavailable: "+err.Error())
	}
	disp := s.dispatcher(callID, counters, in.RestartSafe)
	lim := rt.limits()
	lim.NoDrain = in.RestartSafe
	s.admit(&lim)
	run, out := rt.engine.Start(ctx, disp, prog, tmpl, lim)
	return s.finish(start, run, disp, out, in.RestartSafe, nil)
}

// Wait continues a suspended run (SPEC §4).
func (s *Surface) Wait(ctx context.Context, callID string, raw json.RawMessage) api.ExecResult {
	start := time.Now()
	var in WaitInput
	if err := decodeStrict(raw, &in, "wait"); err != nil {
		return s.failed(start, nil, api.CodeInvalidInput, err.Error())
	}
	return s.WaitInput(ctx, callID, in)
}

// WaitInput continues a suspended run from a decoded input.
func (s *Surface) WaitInput(ctx context.Context, callID string, in WaitInput) api.ExecResult {
	start := time.Now()
	if strings.TrimSpace(in.RunID) == "" {
		return s.failed(start, nil, api.CodeInvalidInput, "wait: `runId` is required: pass the runId of a waiting result")
	}
	input, _ := json.Marshal(in)
	if msg, blocked := s.runHooks(ctx, &api.ToolCallEvent{ToolID: "wait", ToolName: "wait",
		ToolKind: api.ToolKindCodeModeWait, Input: input, Run: s.run}); blocked {
		return s.failed(start, nil, "", msg)
	}
	e, err := s.rt.store.Acquire(in.RunID, s.run)
	if err != nil {
		return s.failed(start, nil, api.CodeInvalidInput, err.Error())
	}
	sr := e.Value.(*suspendedRun)
	lim := s.rt.limits()
	lim.NoDrain = sr.replaySafe
	s.admit(&lim)
	out := sr.run.Resume(ctx, lim)
	if out.Code == api.CodeOverloaded {
		// Refused a slot before the VM was restored: the run stays for another wait.
		s.rt.store.Release(e, sr.run.SnapshotBytes())
		return api.ExecResult{Status: api.StatusFailed, Code: out.Code, Error: out.Error, Output: out.Output,
			Telemetry: s.telemetry(start, sr.disp.Counters)}
	}
	return s.finish(start, sr.run, sr.disp, out, sr.replaySafe, e)
}

// admit wires process-wide admission control (Options.Admission) into one exec or wait: the
// sandbox asks for a slot, keyed by session for fairness, right before it creates a VM.
func (s *Surface) admit(lim *sandbox.Limits) {
	if a := s.rt.opts.Admission; a != nil {
		key := s.run.SessionKey
		lim.Admit = func(ctx context.Context) (func(), error) { return a.Acquire(ctx, key) }
	}
}

// finish turns a sandbox outcome into the result union, storing or dropping the run.
func (s *Surface) finish(start time.Time, run *sandbox.Run, disp *dispatch.Dispatcher, out sandbox.Outcome, replaySafe bool, stored *runstore.Entry) api.ExecResult {
	res := api.ExecResult{Status: out.Status, Output: out.Output}
	switch out.Status {
	case api.StatusCompleted:
		res.Value = out.Value
	case api.StatusWaiting:
		res.Reason, res.PendingToolCalls, res.ReplaySafe = out.Reason, out.Pending, replaySafe
		if stored != nil {
			res.RunID = stored.ID
			s.rt.store.Release(stored, run.SnapshotBytes())
		} else {
			id := runstore.NewID()
			if err := s.rt.store.Put(id, s.run, &suspendedRun{run: run, disp: disp, replaySafe: replaySafe}, run.SnapshotBytes()); err != nil {
				run.Close()
				res = api.ExecResult{Status: api.StatusFailed, Code: api.CodeInvalidInput, Error: err.Error(), Output: out.Output}
				break
			}
			res.RunID = id
		}
	default:
		res.Status, res.Error, res.Code = api.StatusFailed, out.Error, out.Code
	}
	if res.Status != api.StatusWaiting {
		if stored != nil {
			s.rt.store.Remove(stored) // W4: terminal → the snapshot is gone
		} else {
			run.Close()
		}
	}
	res.Telemetry = s.telemetry(start, disp.Counters)
	return res
}

func (s *Surface) failed(start time.Time, c *dispatch.Counters, code, msg string) api.ExecResult {
	return api.ExecResult{Status: api.StatusFailed, Code: code, Error: msg, Telemetry: s.telemetry(start, c)}
}

func (s *Surface) telemetry(start time.Time, c *dispatch.Counters) api.Telemetry {
	t := api.Telemetry{VisibleTools: s.VisibleToolNames(), DurationMs: time.Since(start).Milliseconds()}
	if cat := s.Catalog(); cat != nil {
		t.CatalogSize = len(cat.Entries)
		t.Sources = cat.Counts()
	}
	if c != nil {
		t.SearchCount, t.DescribeCount, t.CallCount = int(c.Search.Load()), int(c.Describe.Load()), int(c.Call.Load())
	}
	return t
}

// runHooks runs the before_tool_call hooks on the exec or wait call itself (X5). Approval is
// for the tools a cell calls, not for the cell.
func (s *Surface) runHooks(ctx context.Context, ev *api.ToolCallEvent) (string, bool) {
	if err := dispatch.Gate(ctx, s.rt.opts.Hooks, nil, ev, ev.ToolName); err != nil {
		return err.Error(), true
	}
	return "", false
}

func (s *Surface) dispatcher(callID string, c *dispatch.Counters, restartSafe bool) *dispatch.Dispatcher {
	rt := s.rt
	d := &dispatch.Dispatcher{
		Catalog: s.cached.cat, Tools: s.byID, Run: s.run, ParentCallID: callID,
		Hooks: rt.opts.Hooks, Approvals: rt.opts.Approvals, Observer: rt.opts.Observer,
		RestartSafe: restartSafe, SearchLimit: rt.cm.SearchLimit, Counters: c,
	}
	if rt.opts.Resources != nil {
		d.Resources = rt.opts.Resources
	}
	return d
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
