package codemode

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/dispatch"
)

// ForRun returns the same surface (tools, catalog) for another run: activation depends on the
// tool set, the run context only scopes calls, waits and hooks. Gateways that serve many
// sessions with one tool set activate once and call ForRun per request.
func (s *Surface) ForRun(rc api.RunContext) *Surface {
	c := *s
	c.run = rc
	return &c
}

// Call invokes a model-visible tool that is not exec or wait: a direct-only tool, or any tool
// when code mode is not active (A4). It goes through the same hooks and approval as nested calls.
func (s *Surface) Call(ctx context.Context, callID, name string, input json.RawMessage) (*api.Result, error) {
	t := s.byName[name]
	if t == nil {
		return nil, fmt.Errorf("unknown tool %q", name)
	}
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	if !json.Valid(input) {
		return nil, fmt.Errorf("%s: input is not valid JSON", name)
	}
	ev := &api.ToolCallEvent{ToolID: t.ID(), ToolName: t.Name, Source: t.Source, ToolKind: api.ToolKindTool,
		Input: input, Run: s.run}
	if err := dispatch.Gate(ctx, s.rt.opts.Hooks, s.rt.opts.Approvals, ev, name); err != nil {
		return nil, err
	}
	if t.Execute == nil {
		return nil, fmt.Errorf("%s has no implementation", name)
	}
	return t.Execute(ctx, &api.Call{ToolID: t.ID(), Input: ev.Input, Run: s.run, ParentCallID: callID})
}

// CheckPayload is the fail-closed check on the final tool list an embedder sends to a model
// provider (A10): with code mode active it must hold exactly one exec, one wait, and otherwise
// only this surface's direct-only tools. A runtime that assembles its payload from several
// sources calls it last and fails the run on error, rather than leak the catalog into the prompt.
func (s *Surface) CheckPayload(names []string) error {
	if !s.Active {
		return nil
	}
	allowed := map[string]bool{}
	for _, t := range s.Tools {
		if t.Name != "exec" && t.Name != "wait" {
			allowed[t.Name] = true
		}
	}
	count := map[string]int{}
	for _, n := range names {
		count[n]++
		if n != "exec" && n != "wait" && !allowed[n] {
			return fmt.Errorf("code mode payload check: tool %q is neither exec, wait nor an approved direct-only tool", n)
		}
	}
	for _, n := range []string{"exec", "wait"} {
		if count[n] != 1 {
			return fmt.Errorf("code mode payload check: %d %q tools in the payload, want exactly one", count[n], n)
		}
	}
	for n, c := range count {
		if c > 1 {
			return fmt.Errorf("code mode payload check: tool %q appears %d times", n, c)
		}
	}
	return nil
}
