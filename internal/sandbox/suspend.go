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
	img, err := vm.CaptureView()
	if err != nil {
		return r.fail(CodeInternal, "cannot snapshot the VM: "+err.Error())
	}
	snap := EncodeSnapshot(r.eng.snapKey, r.tmpl, img)
	if r.maxSnapshot > 0 && len(snap) > r.maxSnapshot {
		return r.fail(CodeSnapshotLimit, fmt.Sprintf("snapshot limit exceeded: the suspended VM needs %d bytes and maxSnapshotBytes is %d", len(snap), r.maxSnapshot))
	}
	r.snapshot = snap
	return Outcome{Status: StatusWaiting, Reason: reason, Pending: r.PendingInfo(), Output: r.takeOutput()}
}

// Suspended reports whether the run holds a snapshot waiting for Resume.
func (r *Run) Suspended() bool { return r.snapshot != nil && !r.ended }

// SnapshotBytes is the stored (compressed) snapshot size, 0 when not suspended.
func (r *Run) SnapshotBytes() int { return len(r.snapshot) }

// PendingInfo lists the nested calls still outstanding, oldest first.
func (r *Run) PendingInfo() []api.PendingToolCall {
	now := time.Now()
	out := make([]api.PendingToolCall, 0, len(r.calls))
	for _, c := range r.calls {
		if c.settled {
			continue
		}
		out = append(out, api.PendingToolCall{ID: callID(c.id), Tool: c.label, RunningMs: now.Sub(c.started).Milliseconds()})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].RunningMs > out[j].RunningMs || out[i].RunningMs == out[j].RunningMs && out[i].ID < out[j].ID
	})
	return out
}

func callID(n int64) string { return "call_" + strconv.FormatInt(n, 10) }

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
	if r.snapshot == nil || r.ended {
		return Outcome{Status: StatusFailed, Code: CodeInvalidInput, Error: ErrNotSuspended.Error()}
	}
	deadline := time.Now().Add(lim.Timeout)
	if !r.Ready() {
		t := time.NewTimer(lim.Timeout)
		select {
		case <-r.notify:
			// Put the token back for drive's first check; it re-reads r.ready anyway.
		case <-t.C:
			t.Stop()
			return Outcome{Status: StatusWaiting, Reason: ReasonPendingTools, Pending: r.PendingInfo(), Output: r.takeOutput()}
		case <-ctx.Done():
			t.Stop()
			return r.fail(CodeTimeout, "wait cancelled: "+ctx.Err().Error())
		}
		t.Stop()
	}
	if lim.Admit != nil {
		// Refused: the run stays suspended (snapshot intact) for a later wait.
		release, err := lim.Admit(ctx)
		if err != nil {
			return Outcome{Status: StatusFailed, Code: admitCode(err), Error: err.Error(), Output: r.takeOutput()}
		}
		defer release()
	}
	img, err := DecodeSnapshot(r.eng.snapKey, r.tmpl, r.snapshot)
	r.snapshot = nil
	if err != nil {
		return r.fail(CodeInternal, "cannot restore the suspended VM: "+err.Error())
	}
	r.maxSnapshot = int(lim.MaxSnapshotBytes)
	vm, err := r.eng.newVM(ctx, img, lim.MemoryLimit)
	img = nil
	if err != nil {
		return r.fail(CodeRuntimeUnavailable, "cannot restore the suspended VM: "+err.Error())
	}
	defer vm.Close()
	r.call = ctx
	stop := r.arm(vm, time.Until(deadline))
	defer stop()
	r.maxOut, r.outBytes, r.memLimit = lim.MaxOutputBytes, 0, lim.MemoryLimit
	r.resumed = true
	if y := r.yielded; y != nil {
		r.yielded = nil
		r.yieldAsked = false
		r.push(completion{id: y.id, result: []byte("null")})
	}
	return r.drive(ctx, vm)
}
