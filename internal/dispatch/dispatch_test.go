package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/catalog"
	"github.com/codemode-go/codemode/internal/sandbox"
)

func benchDispatcher() *Dispatcher {
	cat := catalog.Build([]*api.Tool{{Name: "get_record", Owner: "plugin1",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["id"]}`)}})
	for _, e := range cat.Entries {
		e.InputSchema() // compiled, as after a tool's first call
	}
	return &Dispatcher{Catalog: cat, Counters: &Counters{}, Gate: &Gate{}}
}

// BenchmarkPrecheck is what starting a valid nested call costs on the VM goroutine: parsing
// the request, resolving the entry and checking the input against the tool's schema.
func BenchmarkPrecheck(b *testing.B) {
	d := benchDispatcher()
	payload := []byte(`{"id":"native:plugin1:get_record","input":{"id":"x"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Precheck(&sandbox.Call{ID: "p/1", Op: "callValue", Payload: payload}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTarget(b *testing.B) {
	d := benchDispatcher()
	payload := []byte(`{"id":"native:plugin1:get_record","input":{"id":"x"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := d.target("callValue", payload); err != nil {
			b.Fatal(err)
		}
	}
}

type records struct{ recs []api.TrajectoryEvent }

func (r *records) Record(ev api.TrajectoryEvent) { r.recs = append(r.recs, ev) }

// TestPrecheckRefusals: the refusals that need no tool happen in Precheck, in order, are counted
// and recorded for the transcript, and never reach hooks.
func TestPrecheckRefusals(t *testing.T) {
	cat := catalog.Build([]*api.Tool{
		{Name: "get_record", ReadOnly: true, InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)},
		{Name: "write", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		{Name: "create_issue", Source: api.SourceMCP, Owner: "github", InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`)},
	})
	// Precheck checks schemas already compiled (a tool's first call compiles its schema on the
	// call's own goroutine: TestFirstCallValidates).
	for _, e := range cat.Entries {
		e.InputSchema()
	}
	hooked := 0
	tests := []struct {
		name, op, payload string
		restartSafe       bool
		code              string // "" accepted
		recorded          bool
	}{
		{"valid", "callValue", `{"id":"native:app:get_record","input":{"id":"x"}}`, false, "", false},
		{"null input is {}", "callValue", `{"id":"native:app:write","input":null}`, false, "invalid_input", true},
		{"schema failure", "callValue", `{"id":"native:app:get_record","input":{"id":1}}`, false, "invalid_input", true},
		{"unknown id", "call", `{"id":"native:app:get_recrd","input":{}}`, false, "unknown_tool", true},
		{"restart-safe refusal comes first", "callValue", `{"id":"native:app:write","input":{}}`, true, "not_replay_safe", true},
		{"MCP schema failure", "mcp.call", `{"server":"github","tool":"create_issue","input":{}}`, false, "invalid_input", true},
		{"MCP unknown tool", "mcp.call", `{"server":"github","tool":"createIssue","input":{}}`, false, "unknown_tool", true},
		{"not a call", "mcp.resources.list", `{"server":"github"}`, false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &records{}
			d := &Dispatcher{Catalog: cat, Counters: &Counters{}, RestartSafe: tt.restartSafe, ParentCallID: "p",
				Gate: &Gate{Trajectory: obs, Hooks: []api.BeforeToolCallHook{func(ctx context.Context, ev *api.ToolCallEvent) (api.HookDecision, error) {
					hooked++
					return api.HookDecision{}, nil
				}}}}
			_, err := d.Precheck(&sandbox.Call{ID: "p/1", Op: tt.op, Payload: []byte(tt.payload)})
			if tt.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			ce, ok := err.(*api.ToolError)
			if !ok || ce.Code != tt.code {
				t.Fatalf("error %v, want code %s", err, tt.code)
			}
			if got := len(obs.recs) == 1 && obs.recs[0].Status == "error" && obs.recs[0].CallID == "p/1"; got != tt.recorded {
				t.Fatalf("recorded %+v, want recorded=%v", obs.recs, tt.recorded)
			}
			if tt.recorded && tt.code != "unknown_tool" && d.Counters.Call.Load() != 1 {
				t.Fatalf("callCount %d", d.Counters.Call.Load())
			}
		})
	}
	if hooked != 0 {
		t.Fatalf("hooks ran %d times for refused calls", hooked)
	}
}

// TestFirstCallValidates: before a tool's schema is compiled, Precheck lets the call start and the
// call's goroutine compiles and checks it; the tool still never sees the invalid input.
func TestFirstCallValidates(t *testing.T) {
	ran := 0
	cat := catalog.Build([]*api.Tool{{Name: "get_record", InputSchema: json.RawMessage(`{"type":"object","required":["id"]}`),
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) { ran++; return &api.Result{}, nil }}})
	d := &Dispatcher{Catalog: cat, Counters: &Counters{}, Gate: &Gate{}}
	payload := []byte(`{"id":"native:app:get_record","input":{}}`)
	c := &sandbox.Call{ID: "p/1", Op: "callValue", Payload: payload}
	pre, err := d.Precheck(c)
	if err != nil {
		t.Fatalf("the first call was checked on the VM goroutine: %v", err)
	}
	c.Prechecked = pre
	if _, err := d.Async(context.Background(), c); err == nil || err.(*api.ToolError).Code != "invalid_input" {
		t.Fatalf("Async: %v", err)
	}
	if _, err := d.Precheck(&sandbox.Call{ID: "p/2", Op: "callValue", Payload: payload}); err == nil {
		t.Fatal("the schema is compiled now: Precheck must check it")
	}
	if ran != 0 {
		t.Fatal("the tool ran with an invalid input")
	}
}

// A decision that comes after its request expired is refused, even when the parked call has
// not woken to its deadline yet (a loaded machine): the clock decided first.
func TestDecideAfterExpiryBeforeTheParkedCallWakes(t *testing.T) {
	d := &Dispatcher{}
	p := &parked{req: api.ApprovalRequest{CallID: "c/1", Expires: time.Now().Add(-time.Millisecond)}, ch: make(chan verdict, 1)}
	d.approvals.waiting, d.approvals.decided = map[string]*parked{"c/1": p}, map[string]string{}
	if err := d.Decide("c/1", api.Decision{Approve: true}); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("decision after expiry: %v", err)
	}
	if v := <-p.ch; !v.expired || v.dec.Approve {
		t.Fatalf("the parked call got %+v", v)
	}
	if err := d.Decide("c/1", api.Decision{Approve: true}); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("second decision: %v", err)
	}
}
