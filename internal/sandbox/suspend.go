package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/quickjs"
)

// ErrNotSuspended is returned by Resume for a run that has no suspended state.
var ErrNotSuspended = errors.New("sandbox: run is not suspended")

// suspend captures the idle VM (W1): the guest is waiting on promises only the host can settle.
func (r *Run) suspend(vm *quickjs.VM, reason string) Outcome {
	if r.keepHot(vm) {
		return r.waiting(reason)
	}
	img, err := vm.CaptureView()
	if err != nil {
		return r.fail(api.CodeInternal, "cannot snapshot the VM: "+err.Error())
	}
	snap := EncodeSnapshot(r.eng.snapKey, r.tmpl, img)
	if r.maxSnapshot > 0 && len(snap) > r.maxSnapshot {
		return r.fail(api.CodeSnapshotLimit, fmt.Sprintf("snapshot limit exceeded: the suspended VM needs %d bytes and maxSnapshotBytes is %d", len(snap), r.maxSnapshot))
	}
	r.snapshot = snap
	return r.waiting(reason)
}

// waiting is the outcome of a suspended run.
func (r *Run) waiting(reason string) Outcome {
	return Outcome{ExecResult: api.ExecResult{Status: StatusWaiting, Reason: reason, PendingToolCalls: r.PendingInfo(),
		PendingApprovals: r.PendingApprovals(), Output: r.takeOutput(), Untrusted: r.provenance()}, Delivered: r.takeDelivered()}
}

// SnapshotBytes is what the suspended run counts against the run store's byte limits: the
// compressed snapshot plus the body's value when the body already returned. A hot run has no
// snapshot yet; it counts the most its snapshot can take when it is evicted (hotSnapshotBound), so
// the limits hold whichever form the run is in. 0 when not suspended.
func (r *Run) SnapshotBytes() int {
	r.vmMu.Lock()
	defer r.vmMu.Unlock()
	if r.snapshot == nil {
		if r.hotEntry != nil && r.vm != nil {
			return int(hotSnapshotBound(int64(r.vm.MemorySize()))) + len(r.value)
		}
		return 0
	}
	return len(r.snapshot) + len(r.value)
}

// PendingInfo lists the nested calls still outstanding, oldest first.
func (r *Run) PendingInfo() []api.PendingToolCall {
	now := time.Now()
	out := make([]api.PendingToolCall, 0, len(r.calls))
	for _, c := range r.calls {
		if c.settled {
			continue
		}
		out = append(out, api.PendingToolCall{ID: r.callID(c.id), Tool: c.label, RunningMs: now.Sub(c.started).Milliseconds()})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].RunningMs > out[j].RunningMs || out[i].RunningMs == out[j].RunningMs && out[i].ID < out[j].ID
	})
	return out
}

// callID names the run's n-th call: "<exec call id>/<n>".
func (r *Run) callID(n int64) string { return r.idPrefix + "/" + strconv.FormatInt(n, 10) }

// suspended reports whether the run holds a suspended VM: hot, or as a snapshot.
func (r *Run) suspended() bool {
	r.vmMu.Lock()
	defer r.vmMu.Unlock()
	return r.vm != nil || r.snapshot != nil || r.snapshotErr != nil
}

// Ready reports whether resuming would make progress without waiting: a call settled, or the
// run was suspended by yield_control.
func (r *Run) Ready() bool {
	if r.yielded != nil {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ready) > 0
}

// Resume continues a suspended run (wait, W1): it blocks until a pending call settles or the
// timeout passes — no busy polling — then restores the image into a fresh VM, delivers results
// and drives the cell on.
func (r *Run) Resume(ctx context.Context, lim Limits) Outcome {
	if r.ended || !r.suspended() {
		return Outcome{ExecResult: api.ExecResult{Status: StatusFailed, Code: api.CodeInvalidInput, Error: ErrNotSuspended.Error()}}
	}
	deadline := time.Now().Add(lim.Timeout)
	if !r.Ready() {
		// Sleep until a result is ready: a notification may also mean a call started or stopped
		// waiting for a decision, so check again after each.
		t := time.NewTimer(lim.Timeout)
		defer t.Stop()
		for !r.Ready() {
			select {
			case <-r.notify:
			case <-t.C:
				return r.waiting(r.suspendReason())
			case <-ctx.Done():
				return r.fail(api.CodeTimeout, "wait cancelled: "+ctx.Err().Error())
			}
		}
	}
	if lim.Admit != nil {
		// Refused: the run stays suspended (VM or snapshot intact) for a later wait.
		slot, err := lim.Admit(ctx)
		if err != nil {
			return Outcome{ExecResult: api.ExecResult{Status: StatusFailed, Code: admitCode(err), Error: err.Error(), Output: r.takeOutput()}}
		}
		r.slot = slot
		defer r.releaseSlot()
	}
	r.mu.Lock()
	r.detached = false // a driver is back: results go straight into the VM
	r.mu.Unlock()
	r.vmMu.Lock()
	defer r.vmMu.Unlock()
	r.maxSnapshot = int(lim.MaxSnapshotBytes)
	vm := r.vm
	if vm != nil {
		// Hot: continue in place. Any snapshot taken meanwhile is stale once the VM runs.
		r.eng.hot.take(r.hotEntry)
		r.vm, r.hotEntry, r.snapshot = nil, nil, nil
	} else {
		if r.snapshotErr != nil {
			return r.fail(api.CodeInternal, "cannot restore the suspended VM: "+r.snapshotErr.Error())
		}
		img, err := DecodeSnapshot(r.eng.snapKey, r.tmpl, r.snapshot)
		r.snapshot = nil
		if err != nil {
			return r.fail(api.CodeInternal, "cannot restore the suspended VM: "+err.Error())
		}
		vm, err = r.eng.newVM(ctx, img, lim.MemoryLimit)
		if err != nil {
			return r.fail(api.CodeRuntimeUnavailable, "cannot restore the suspended VM: "+err.Error())
		}
	}
	defer r.release(vm)
	r.call = ctx
	stop := r.arm(vm, time.Until(deadline))
	defer stop()
	// The body's value, if it already settled, is part of the result this wait may return.
	r.maxOut, r.outBytes, r.memLimit = lim.MaxOutputBytes, jsonCost(string(r.value), false), lim.MemoryLimit
	r.out.reset()
	r.resumed = true
	if y := r.yielded; y != nil {
		r.yielded = nil
		r.yieldAsked = false
		r.push(completion{id: y.id, result: []byte("null")})
	}
	return r.drive(ctx, vm)
}
