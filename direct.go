package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/codemode-go/codemode/api"
)

// callDirect invokes a model-visible tool that is not exec or wait: a direct-only tool, or any
// tool when code mode is not active (A4). It goes through the same gate (hooks, approval) as
// nested calls.
func (s *Surface) callDirect(ctx context.Context, callID, name string, input json.RawMessage) (*api.Result, error) {
	tr := api.TrajectoryEvent{Kind: api.EventDirect, Time: time.Now(), Run: s.run, CallID: callID, Tool: name, Input: input,
		ParentCallID: s.parentCall()}
	res, err := s.runDirect(ctx, callID, name, input, &tr)
	if t := s.rt.opts.Trajectory; t != nil {
		tr.DurationMs = time.Since(tr.Time).Milliseconds()
		switch {
		case err != nil:
			tr.Status, tr.Error = "error", err.Error()
		case res != nil && res.IsError:
			tr.Status = "error"
		default:
			tr.Status = "ok"
		}
		if res != nil {
			tr.Result, _ = json.Marshal(res)
		}
		t.Record(tr)
	}
	if s.child != nil {
		failed := err
		if failed == nil && res != nil && res.IsError {
			failed = errors.New("the tool reported an error")
		}
		s.observe(name, "", nil, failed)
	}
	return res, err
}

func (s *Surface) runDirect(ctx context.Context, callID, name string, input json.RawMessage, tr *api.TrajectoryEvent) (*api.Result, error) {
	t := s.byName[name]
	if t == nil || !s.direct[name] {
		if s.active && (name == "exec" || name == "wait") {
			return nil, fmt.Errorf("%s is a code mode control tool", name)
		}
		return nil, fmt.Errorf("unknown tool %q: this run's tools are %v", name, s.ToolNames())
	}
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	if !json.Valid(input) {
		return nil, fmt.Errorf("%s: input is not valid JSON", name)
	}
	ev := &api.ToolCallEvent{ToolID: t.ID(), ToolName: t.Name, Source: t.Source, ToolKind: api.ToolKindTool,
		Input: input, Run: s.run}
	err := s.gateOf().Authorize(ctx, ev, t.ReadOnly, name, callID)
	if !bytes.Equal(ev.Input, input) {
		tr.Input, tr.OriginalInput = ev.Input, input
	}
	if err != nil {
		return nil, err
	}
	if t.Execute == nil {
		return nil, fmt.Errorf("%s has no implementation", name)
	}
	return t.Execute(ctx, &api.Call{ToolID: t.ID(), Input: ev.Input, Run: s.run, ParentCallID: callID})
}
