package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/sandbox"
)

// gate is an Admission that refuses while closed and counts the slots it hands out.
type gate struct {
	closed   atomic.Bool
	sessions []string
	held     atomic.Int32
}

func (g *gate) AcquireSlot(ctx context.Context, session string) (sandbox.Slot, error) {
	if g.closed.Load() {
		return nil, errors.New("code mode is overloaded: test")
	}
	g.sessions = append(g.sessions, session)
	g.held.Add(1)
	return sandbox.ReleaseSlot(func() { g.held.Add(-1) }), nil
}

func TestAdmissionWiring(t *testing.T) { // every exec and wait asks for a slot; refusals are "overloaded"
	g := &gate{}
	rt := newRuntime(t, testConfig(t), func(o *Options) { o.admitter = g })
	s := rt.Activate(api.RunContext{SessionKey: "s1"}, nil)
	r := execCode(t, s, `await yield_control(); return 7`)
	if r.Status != api.StatusWaiting || g.held.Load() != 0 || len(g.sessions) != 1 || g.sessions[0] != "s1" {
		t.Fatalf("%+v held %d sessions %v", r, g.held.Load(), g.sessions)
	}
	g.closed.Store(true)
	if r := execCode(t, s, `return 1`); r.Status != api.StatusFailed || r.Code != api.CodeOverloaded {
		t.Fatalf("%+v", r)
	}
	in, _ := json.Marshal(map[string]string{"runId": r.RunID})
	if w := waitRaw(s, "w", in); w.Status != api.StatusFailed || w.Code != api.CodeOverloaded {
		t.Fatalf("%+v", w)
	}
	// A refused wait leaves the run suspended for a later wait.
	g.closed.Store(false)
	if w := waitRaw(s, "w", in); w.Status != api.StatusCompleted || string(w.Value) != "7" {
		t.Fatalf("%+v", w)
	}
	if g.held.Load() != 0 {
		t.Fatalf("%d slots never released", g.held.Load())
	}
}

// The TypeScript transform runs holding a slot, after its nesting check (issue 18 item 1): a
// refused slot means no transform; a cell past the nesting bound never asks for one.
func TestAdmissionTypeScriptTransform(t *testing.T) {
	g := &gate{}
	rt := newRuntime(t, testConfig(t), func(o *Options) { o.admitter = g })
	s := rt.Activate(api.RunContext{SessionKey: "s1"}, nil)
	ts := func(code string) api.ExecResult {
		in, _ := json.Marshal(map[string]string{"code": code, "language": "typescript"})
		return execRaw(s, "c", in)
	}
	if r := ts(`const n: number = 6; return n + 1`); r.Status != api.StatusCompleted || len(g.sessions) != 2 {
		t.Fatalf("%+v; %d slots asked for, want 2 (the transform's and the VM's)", r, len(g.sessions))
	}
	deep := "return " + strings.Repeat("(", 260000) + "1" + strings.Repeat(")", 260000)
	if r := ts(deep); r.Status != api.StatusFailed || r.Code != api.CodeInvalidInput ||
		!strings.Contains(r.Error, "deeper than 4096 levels") || len(g.sessions) != 2 {
		t.Fatalf("%+v; %d slots asked for", r, len(g.sessions))
	}
	g.closed.Store(true)
	if r := ts(`const n: number = 1; return n`); r.Status != api.StatusFailed || r.Code != api.CodeOverloaded {
		t.Fatalf("%+v", r)
	}
	if g.held.Load() != 0 {
		t.Fatalf("%d slots never released", g.held.Load())
	}
}
