package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/sandbox"
)

// A nested call that needs approval does not block the VM: its goroutine parks here while the
// cell goes on. The run learns (Call.AwaitDecision) that the call waits; when nothing else can
// progress, exec or wait returns waiting with reason "approval". The decision arrives from the
// Approver (somebody is being asked now), from Surface.Decide (the embedder, while the run is
// suspended), or from the clock (expiry rejects). Nothing that ran before re-runs: the call has
// not started, and the rest of the cell lives on in the VM.

// approvals is a dispatcher's table of calls waiting for a decision. Decisions are one-shot: a
// decided call leaves a tombstone so a second decision, or one after expiry, fails clearly.
type approvals struct {
	mu      sync.Mutex
	waiting map[string]*parked
	decided map[string]string // call id → "approved", "rejected" or "expired"
}

type parked struct {
	req api.ApprovalRequest
	ch  chan verdict // buffered: the first verdict wins
}

type verdict struct {
	dec api.Decision
	by  string
}

// maxTombstones bounds the decided set of one run.
const maxTombstones = 4096

// offer delivers a verdict unless one was already delivered.
func (p *parked) offer(v verdict) bool {
	select {
	case p.ch <- v:
		return true
	default:
		return false
	}
}

// ErrNoSuchApproval is Decide's error for a call id that is not waiting for a decision in this
// run (never was, or a forged id).
var ErrNoSuchApproval = errors.New("no call of this run is waiting for approval with that id")

// Decide settles a parked call: the embedder's decision (Surface.Decide). It fails for unknown
// ids, for calls already decided and for expired requests.
func (d *Dispatcher) Decide(callID string, dec api.Decision) error {
	a := &d.approvals
	a.mu.Lock()
	p := a.waiting[callID]
	if p == nil {
		state := a.decided[callID]
		a.mu.Unlock()
		switch state {
		case "expired":
			return fmt.Errorf("the approval request for %s expired: it was rejected", callID)
		case "":
			return fmt.Errorf("%w (%q)", ErrNoSuchApproval, callID)
		}
		return fmt.Errorf("%s was already %s: decisions are one-shot", callID, state)
	}
	a.mu.Unlock()
	if dec.By == "" {
		dec.By = "library"
	}
	if !p.offer(verdict{dec: dec, by: "person"}) {
		return fmt.Errorf("%s was already decided: decisions are one-shot", callID)
	}
	return nil
}

// awaitApproval parks a nested call until it is decided, expires or the run ends. It returns
// nil when the call may run, else the guest's error.
func (d *Dispatcher) awaitApproval(ctx context.Context, c *sandbox.Call, need *Need, req api.ApprovalRequest) error {
	g := d.Gate
	req.Prompt = prompt(need, req.Tool, req.Input)
	req.Expires = time.Now().Add(need.Timeout)
	p := &parked{req: req, ch: make(chan verdict, 1)}
	a := &d.approvals
	a.mu.Lock()
	if a.waiting == nil {
		a.waiting, a.decided = map[string]*parked{}, map[string]string{}
	}
	a.waiting[req.CallID] = p
	a.mu.Unlock()
	g.recordRequest(req, d.ParentCallID)

	asking := false
	actx, cancel := context.WithDeadline(ctx, req.Expires)
	defer cancel()
	if g.Approver != nil {
		asking = true
		go func() {
			dec, err := g.Approver.Ask(actx, req)
			switch {
			case err == nil:
				p.offer(verdict{dec: dec, by: "person"})
			case isNoApprover(err):
				p.offer(verdict{dec: fallback(need), by: "fallback"})
			case actx.Err() == nil:
				p.offer(verdict{dec: api.Decision{Reason: "the approver failed: " + err.Error()}, by: "approver error"})
			}
		}()
	}
	if c != nil {
		c.AwaitDecision(req, asking)
	}
	var v verdict
	expired := false
	select {
	case v = <-p.ch:
	case <-actx.Done():
		if ctx.Err() != nil {
			// The run ended (cancelled, expired or completed): nobody will read the result.
			a.settle(req.CallID, "rejected")
			if c != nil {
				c.Decided()
			}
			return &api.ToolError{Name: "AbortError", Code: "cancelled", Message: req.Tool + " was cancelled while waiting for approval"}
		}
		expired = true
		v = verdict{dec: api.Decision{Reason: "nobody decided within " + need.Timeout.String()}, by: "timeout"}
	}
	state := "rejected"
	switch {
	case expired:
		state = "expired"
	case v.dec.Approve:
		state = "approved"
	}
	a.settle(req.CallID, state)
	if c != nil {
		c.Decided()
	}
	g.recordDecision(req, d.ParentCallID, v.dec, v.by, expired)
	return refusal(req.Tool, v.dec, expired)
}

// settle moves a call from waiting to decided.
func (a *approvals) settle(callID, state string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.waiting, callID)
	if len(a.decided) >= maxTombstones {
		for k := range a.decided {
			delete(a.decided, k)
			break
		}
	}
	a.decided[callID] = state
}

func isNoApprover(err error) bool { return errors.Is(err, api.ErrNoApprover) }
