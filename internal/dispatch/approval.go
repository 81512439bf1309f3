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
	decided map[string]string // call id → "approved", "rejected", "expired" or "withdrawn"
	carried map[string]carried
}

// carried is what a call withdrawn from waiting (a suspended run left the process, see
// sandbox.Export) brings back when it starts again: the original expiry, and the decision when
// one was made meanwhile.
type carried struct {
	expires time.Time
	dec     *api.Decision
}

type parked struct {
	req  api.ApprovalRequest
	ch   chan verdict // buffered; only the one who claimed the call sends
	call *sandbox.Call
}

type verdict struct {
	dec       api.Decision
	by        string
	withdrawn bool
	expired   bool // the clock decided: the request expired before anyone else did
}

// maxTombstones bounds the decided set of one run.
const maxTombstones = 4096

func stateOf(dec api.Decision) string {
	if dec.Approve {
		return "approved"
	}
	return "rejected"
}

// claim takes the right to decide a waiting call: exactly one claimer (a person, the approver,
// the clock) wins; it returns nil when the call is not waiting any more.
func (a *approvals) claim(callID, state string) *parked {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.waiting[callID]
	if p == nil {
		return nil
	}
	delete(a.waiting, callID)
	if len(a.decided) >= maxTombstones {
		for k := range a.decided {
			delete(a.decided, k)
			break
		}
	}
	a.decided[callID] = state
	return p
}

// offer decides a call unless somebody already did.
func (a *approvals) offer(callID string, v verdict) bool {
	p := a.claim(callID, stateOf(v.dec))
	if p == nil {
		return false
	}
	if p.call != nil {
		// Decided from now on: a wait that resumes before the call's goroutine wakes must not
		// see it as still waiting for a person (and ask again).
		p.call.Decided()
	}
	p.ch <- v
	return true
}

// ErrNoSuchApproval is Decide's error for a call id that is not waiting for a decision in this
// run (never was, or a forged id).
var ErrNoSuchApproval = errors.New("no call of this run is waiting for approval with that id")

// Decide settles a parked call: the embedder's decision (Surface.Decide). It fails for unknown
// ids, for calls already decided and for expired requests.
func (d *Dispatcher) Decide(callID string, dec api.Decision) error {
	a := &d.approvals
	if dec.By == "" {
		dec.By = "library"
	}
	// The clock decides first: a decision that comes after the request expired is refused even
	// when the parked call's goroutine has not woken to its deadline yet (a loaded machine).
	a.mu.Lock()
	p := a.waiting[callID]
	a.mu.Unlock()
	if p != nil && !p.req.Expires.IsZero() && time.Now().After(p.req.Expires) {
		if q := a.claim(callID, "expired"); q != nil {
			q.ch <- verdict{by: "timeout", expired: true}
		}
		return fmt.Errorf("the approval request for %s expired: it was rejected", callID)
	}
	if a.offer(callID, verdict{dec: dec, by: "person"}) {
		return nil
	}
	a.mu.Lock()
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

// Withdraw implements sandbox.Withdrawer: it takes back a call parked for a decision, so that
// this attempt never runs its tool, and reports whether the call was still waiting.
func (d *Dispatcher) Withdraw(c *sandbox.Call) bool {
	p := d.approvals.claim(c.ID, "withdrawn")
	if p == nil {
		return false
	}
	p.ch <- verdict{withdrawn: true}
	return true
}

// Carry prepares a withdrawn call's next start (see carried): it keeps its original expiry and,
// when dec is not nil, is decided at once instead of waiting again.
func (d *Dispatcher) Carry(callID string, expires time.Time, dec *api.Decision) {
	a := &d.approvals
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.carried == nil {
		a.carried = map[string]carried{}
	}
	if len(a.carried) >= maxTombstones {
		return
	}
	a.carried[callID] = carried{expires: expires, dec: dec}
}

// Waiting reports whether callID is parked here for a decision.
func (d *Dispatcher) Waiting(callID string) bool {
	a := &d.approvals
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waiting[callID] != nil
}

// awaitApproval parks a nested call until it is decided, expires or the run ends. It returns
// nil when the call may run, else the guest's error.
func (d *Dispatcher) awaitApproval(ctx context.Context, c *sandbox.Call, need *Need, req api.ApprovalRequest) error {
	g := d.Gate
	req.Prompt = prompt(need, req.Tool, req.Input)
	req.Expires = time.Now().Add(need.Timeout)
	req.Fallback = need.Fallback
	p := &parked{req: req, ch: make(chan verdict, 1), call: c}
	a := &d.approvals
	a.mu.Lock()
	if a.waiting == nil {
		a.waiting, a.decided = map[string]*parked{}, map[string]string{}
	}
	cr, wasCarried := a.carried[req.CallID]
	delete(a.carried, req.CallID)
	if wasCarried && !cr.expires.IsZero() {
		req.Expires, p.req.Expires = cr.expires, cr.expires
	}
	if !wasCarried || cr.dec == nil {
		a.waiting[req.CallID] = p
	}
	a.mu.Unlock()
	if wasCarried && cr.dec != nil {
		// Decided while the run was away (Decide on a shared run store): no second question,
		// unless the request had expired by then.
		if time.Now().After(req.Expires) {
			dec := api.Decision{Reason: "nobody decided within " + need.Timeout.String()}
			g.recordDecision(req, d.ParentCallID, dec, "timeout", true)
			return refusal(req.Tool, dec, true)
		}
		g.recordDecision(req, d.ParentCallID, *cr.dec, "person", false)
		return refusal(req.Tool, *cr.dec, false)
	}
	if !wasCarried {
		g.recordRequest(req, d.ParentCallID)
	}

	asking := false
	actx, cancel := context.WithDeadline(ctx, req.Expires)
	defer cancel()
	if g.Approver != nil {
		asking = true
		go func() {
			dec, err := g.Approver.Ask(actx, req)
			switch {
			case err == nil:
				a.offer(req.CallID, verdict{dec: dec, by: "person"})
			case isNoApprover(err):
				a.offer(req.CallID, verdict{dec: fallback(need), by: "fallback"})
			case actx.Err() == nil:
				a.offer(req.CallID, verdict{dec: api.Decision{Reason: "the approver failed: " + err.Error()}, by: "approver error"})
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
		state := "expired"
		if ctx.Err() != nil {
			state = "rejected" // the run ended (cancelled, expired, completed): nobody reads it
		}
		if a.claim(req.CallID, state) == nil {
			v = <-p.ch // decided just now: the decision stands
			break
		}
		if ctx.Err() != nil {
			if c != nil {
				c.Decided()
			}
			return &api.ToolError{Name: "AbortError", Code: "cancelled", Message: req.Tool + " was cancelled while waiting for approval"}
		}
		expired = true
		v = verdict{dec: api.Decision{Reason: "nobody decided within " + need.Timeout.String()}, by: "timeout"}
	}
	if v.expired { // claimed by a Decide that came after the deadline
		expired = true
		v.dec = api.Decision{Reason: "nobody decided within " + need.Timeout.String()}
	}
	if c != nil {
		c.Decided()
	}
	if v.withdrawn {
		// The run left the process with this call undecided; it starts again elsewhere.
		return &api.ToolError{Name: "AbortError", Code: "withdrawn", Message: req.Tool + " was withdrawn while waiting for approval"}
	}
	g.recordDecision(req, d.ParentCallID, v.dec, v.by, expired)
	return refusal(req.Tool, v.dec, expired)
}

func isNoApprover(err error) bool { return errors.Is(err, api.ErrNoApprover) }
