package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/quickjs"
	"github.com/codemode-go/codemode/internal/source"
)

// Limits bound one exec or wait.
type Limits struct {
	Timeout        time.Duration // wall clock for this exec or wait
	MemoryLimit    uint64        // QuickJS allocator limit in bytes
	MaxOutputBytes int           // output entries plus the final value
	MaxPending     int           // concurrent nested calls; more are queued (up to MaxQueued)
	// MaxSnapshotBytes bounds the compressed snapshot of a suspended run (0 = unlimited).
	MaxSnapshotBytes int64
	// NoDrain suspends instead of draining nested calls inside the exec (restart-safe runs, X9).
	NoDrain bool
	// Admit, when set, is called before a VM is created (exec) or restored (wait, once its
	// pending work is ready) and may refuse with an error (process-wide admission control); its
	// release function is called when the VM is gone.
	Admit func(ctx context.Context) (release func(), err error)
}

// MaxQueued bounds nested calls waiting for a slot beyond MaxPending. A cell that starts more
// gets a catchable error for the excess calls; it never grows host memory without bound.
const MaxQueued = 1024

// Host answers the guest's bridge requests. Sync runs on the VM goroutine between guest
// instructions (search, describe, API files…) and must be quick. Async runs on its own goroutine
// (tool and MCP calls); ctx is cancelled when the run is cancelled or ends.
type Host interface {
	Sync(op string, payload []byte) ([]byte, error)
	Async(ctx context.Context, op string, payload []byte) ([]byte, error)
	// PendingLabel names an async request for `pendingToolCalls` (e.g. a catalog id).
	PendingLabel(op string, payload []byte) string
}

// CallError is a host error delivered to the guest as a plain, catchable Error (G4–G5, Z3).
type CallError struct {
	Name    string          `json:"name"`
	Message string          `json:"message"`
	Code    string          `json:"code,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
}

func (e *CallError) Error() string { return e.Message }

// Status, error codes and reasons are the api package's (SPEC §3, Z).
const (
	StatusCompleted        = api.StatusCompleted
	StatusWaiting          = api.StatusWaiting
	StatusFailed           = api.StatusFailed
	CodeInvalidInput       = api.CodeInvalidInput
	CodeRuntimeUnavailable = api.CodeRuntimeUnavailable
	CodeTimeout            = api.CodeTimeout
	CodeOutputLimit        = api.CodeOutputLimit
	CodeSnapshotLimit      = api.CodeSnapshotLimit
	CodeInternal           = api.CodeInternal
	CodeOverloaded         = api.CodeOverloaded
	ReasonPendingTools     = api.ReasonPendingTools
	ReasonYield            = api.ReasonYield
)

// Outcome is the result of driving a run until it completes, fails or suspends.
type Outcome struct {
	Status  string
	Value   json.RawMessage       // completed
	Error   string                // failed
	Code    string                // failed (optional)
	Reason  string                // waiting
	Pending []api.PendingToolCall // waiting
	Output  []api.Output          // produced since the previous outcome of this run
}

// call is one async bridge request: in flight, queued, or settled but not yet delivered.
type call struct {
	id      int64
	op      string
	payload []byte
	label   string
	started time.Time
	// The promise resolvers live in the VM heap; these values stay valid across snapshots.
	resolve, reject quickjs.Value
	cancel          context.CancelFunc
	timer           *time.Timer
	settled         bool
}

type completion struct {
	id     int64
	result []byte
	err    error
}

// Run is one cell: created by Start, driven by the exec and later waits. It outlives VMs: while
// suspended it holds the VM image and the pending calls, which keep running on the host.
type Run struct {
	eng     *Engine
	tmpl    *Template // the image this run started from; snapshots are relative to it
	host    Host
	program *source.Program
	ctx     context.Context
	cancel  context.CancelFunc
	// call is the context of the exec or wait driving the VM now: when it ends (the client's
	// session closed) the guest is interrupted too, even in a loop that awaits nothing.
	call context.Context
	wg   sync.WaitGroup

	mu         sync.Mutex // guards ready, readyBytes, running and closed, shared with call goroutines
	ready      []completion
	readyBytes int
	notify     chan struct{}
	closed     bool
	running    int // async calls holding a concurrency slot

	// VM-goroutine state (exec/wait are serialised by the caller).
	maxPending  int
	calls       map[int64]*call
	queue       []*call
	nextID      int64
	main        quickjs.Value // the cell's promise
	snapshot    []byte        // compressed VM image while suspended
	maxSnapshot int
	yieldAsked  bool
	yielded     *call // the yield_control call to resolve on resume
	output      []api.Output
	outBytes    int
	maxOut      int
	abortCode   string // set by the host side; the interrupt handler then stops the guest
	abortMsg    string
	interrupts  bool
	deadline    time.Time
	ended       bool
	memLimit    uint64
	noDrain     bool // restart-safe: suspend on pending work instead of draining it
	resumed     bool // a wait just restored the VM: deliver once before suspending again
}

// Start creates a run for a prepared program from a catalog template and drives it until it
// completes, fails or suspends.
func (e *Engine) Start(ctx context.Context, host Host, prog *source.Program, tmpl *Template, lim Limits) (*Run, Outcome) {
	rctx, cancel := context.WithCancel(context.Background())
	r := &Run{
		eng: e, host: host, program: prog, ctx: rctx, cancel: cancel, tmpl: tmpl,
		notify: make(chan struct{}, 1), calls: map[int64]*call{},
		maxPending: max(1, lim.MaxPending), maxOut: lim.MaxOutputBytes, memLimit: lim.MemoryLimit,
		maxSnapshot: int(lim.MaxSnapshotBytes), noDrain: lim.NoDrain,
	}
	if lim.Admit != nil {
		release, err := lim.Admit(ctx)
		if err != nil {
			r.Close()
			return r, r.fail(admitCode(err), err.Error())
		}
		defer release()
	}
	vm, err := e.newVM(ctx, tmpl.img, lim.MemoryLimit)
	if err != nil {
		r.Close()
		return r, r.fail(CodeRuntimeUnavailable, "code mode runtime unavailable: "+err.Error())
	}
	defer vm.Close()
	r.call = ctx
	stop := r.arm(vm, lim.Timeout)
	defer stop()
	if o, ok := r.begin(vm); !ok {
		return r, o
	}
	return r, r.drive(ctx, vm)
}

// admitCode is the result code of a refused admission: overloaded, or timeout when the caller
// gave up while queued.
func admitCode(err error) string {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return CodeTimeout
	}
	return CodeOverloaded
}

// begin re-seeds Math.random, compiles the cell and calls it.
func (r *Run) begin(vm *quickjs.VM) (Outcome, bool) {
	var seed [16]byte
	_, _ = rand.Read(seed[:])
	var args [4]quickjs.Value
	for i := range args {
		args[i] = quickjs.Int32(int32(binary.LittleEndian.Uint32(seed[4*i:])))
	}
	res, err := vm.Call(r.eng.fns.Reseed, quickjs.Undefined, args[:]...)
	if err != nil {
		return r.vmFailure(vm, err), false
	}
	vm.Free(res)
	fn, err := vm.Eval(r.program.JS, source.Filename, quickjs.EvalGlobal)
	if err != nil {
		if errors.Is(err, quickjs.ErrPendingException) && !r.stopped(vm) {
			// A syntax error: the cell never ran, so this is bad input (Z1).
			exc := vm.TakeException()
			msg := r.describe(vm, exc)
			vm.Free(exc)
			return r.fail(CodeInvalidInput, msg), false
		}
		return r.vmFailure(vm, err), false
	}
	p, err := vm.Call(fn, quickjs.Undefined)
	vm.Free(fn)
	if err != nil {
		return r.vmFailure(vm, err), false
	}
	r.main = p
	return Outcome{}, true
}

// arm installs the per-VM interrupt (soft deadline) and the hard-kill timer.
func (r *Run) arm(vm *quickjs.VM, timeout time.Duration) (stop func()) {
	r.deadline = time.Now().Add(timeout)
	r.interrupts = false
	vm.Interrupt = func() bool {
		if r.abortCode != "" || time.Now().After(r.deadline) || r.ctx.Err() != nil || (r.call != nil && r.call.Err() != nil) {
			r.interrupts = true
			return true
		}
		return false
	}
	vm.ErrorFactory = r.makeGuestError
	vm.Register(hostOut, r.hostOut)
	vm.Register(hostSync, r.hostSync)
	vm.Register(hostAsync, r.hostAsync)
	grace := timeout / 10
	grace = min(max(grace, 50*time.Millisecond), 500*time.Millisecond)
	t := time.AfterFunc(timeout+grace, vm.Kill)
	return func() { t.Stop() }
}

// drive runs jobs and delivers completions until the cell settles, the deadline passes or the
// guest yields.
func (r *Run) drive(ctx context.Context, vm *quickjs.VM) Outcome {
	deadline := time.NewTimer(time.Until(r.deadline))
	defer deadline.Stop()
	for {
		if err := r.runJobs(vm); err != nil {
			return r.vmFailure(vm, err)
		}
		if r.abortCode != "" {
			return r.fail(r.abortCode, r.abortMsg)
		}
		switch vm.PromiseState(r.main) {
		case quickjs.PromiseFulfilled:
			return r.complete(vm)
		case quickjs.PromiseRejected:
			reason := vm.PromiseResult(r.main)
			msg := r.describe(vm, reason)
			vm.Free(reason)
			if r.stopped(vm) {
				// Describing the error ran guest code (a getter, a toString) that hit the deadline.
				return r.timeoutFailure()
			}
			return r.guestFailure(msg)
		}
		if time.Now().After(r.deadline) {
			return r.suspend(vm, ReasonPendingTools)
		}
		if r.yieldAsked {
			return r.suspend(vm, ReasonYield)
		}
		if r.noDrain && len(r.calls) > 0 && !r.resumed {
			// X9: restart-safe runs are never drained automatically; each step of pending work
			// becomes a model-visible wait, so a replay after a restart can rebuild it.
			return r.suspend(vm, ReasonPendingTools)
		}
		r.resumed = false
		if r.deliverReady(vm) > 0 {
			continue
		}
		if len(r.calls) == 0 {
			return r.fail("", "the cell is awaiting a promise that nothing will settle (no tool call, timer or yield is pending)")
		}
		if r.spinForCompletion() {
			continue
		}
		select {
		case <-r.notify:
		case <-deadline.C:
		case <-ctx.Done():
			return r.fail(CodeTimeout, "exec cancelled: "+ctx.Err().Error())
		}
	}
}

// spinWait is how long the VM goroutine polls for a completion before sleeping. Most nested
// calls are quick host functions that finish in microseconds on another core; yielding for a
// moment instead of parking on the channel saves a futex sleep and wake-up per call (measured: 100
// sequential calls ~8.5 → ~5 ms).
const spinWait = 50 * time.Microsecond

func (r *Run) spinForCompletion() bool {
	if r.runningCalls() == 0 {
		return false // only timers or yields pending: nothing to spin for
	}
	start := time.Now()
	for time.Since(start) < spinWait {
		runtime.Gosched()
		r.mu.Lock()
		n := len(r.ready)
		r.mu.Unlock()
		if n > 0 {
			return true
		}
	}
	return false
}

func (r *Run) runningCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running
}

// runJobs drains the QuickJS job queue.
func (r *Run) runJobs(vm *quickjs.VM) error {
	for {
		n, err := vm.ExecutePendingJob()
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if n < 0 {
			return quickjs.ErrPendingException
		}
	}
}

func (r *Run) complete(vm *quickjs.VM) Outcome {
	val := vm.PromiseResult(r.main)
	defer vm.Free(val)
	s, err := vm.Call(r.eng.fns.Encode, quickjs.Undefined, val)
	if err != nil {
		if errors.Is(err, quickjs.ErrPendingException) && !r.stopped(vm) {
			exc := vm.TakeException()
			msg := r.describe(vm, exc)
			vm.Free(exc)
			if r.stopped(vm) {
				return r.timeoutFailure()
			}
			return r.fail("", "the return value cannot be converted to JSON: "+msg)
		}
		return r.vmFailure(vm, err)
	}
	defer vm.Free(s)
	budget := r.maxOut - r.outBytes
	text, err := vm.ToString(s, max(budget, 0))
	if err != nil {
		var tl *quickjs.TooLongError
		if errors.As(err, &tl) {
			return r.fail(CodeOutputLimit, fmt.Sprintf("output limit exceeded: the return value is %d bytes and %d of maxOutputBytes (%d) remain", tl.Len, max(budget, 0), r.maxOut))
		}
		return r.vmFailure(vm, err)
	}
	r.end()
	return Outcome{Status: StatusCompleted, Value: json.RawMessage(text), Output: r.takeOutput()}
}

func (r *Run) fail(code, msg string) Outcome {
	r.end()
	return Outcome{Status: StatusFailed, Error: msg, Code: code, Output: r.takeOutput()}
}

func (r *Run) timeoutFailure() Outcome {
	if r.ctx.Err() != nil {
		return r.fail(CodeTimeout, "code mode run was cancelled")
	}
	if r.call != nil && r.call.Err() != nil {
		return r.fail(CodeTimeout, "exec cancelled: "+r.call.Err().Error())
	}
	return r.fail(CodeTimeout, "code mode exec timed out: the cell was still running at the deadline (timeoutMs)")
}

// vmFailure classifies an error from the VM: interrupt, hard kill, memory limit, guest exception.
func (r *Run) vmFailure(vm *quickjs.VM, err error) Outcome {
	switch {
	case r.abortCode != "":
		return r.fail(r.abortCode, r.abortMsg)
	case vm.Killed() || r.interrupts && !errors.Is(err, quickjs.ErrPendingException):
		return r.timeoutFailure()
	case errors.Is(err, quickjs.ErrKilled):
		return r.fail(CodeRuntimeUnavailable, "the QuickJS VM stopped abnormally: "+err.Error())
	case errors.Is(err, quickjs.ErrPendingException):
		exc := vm.TakeException()
		defer vm.Free(exc)
		if r.stopped(vm) {
			return r.timeoutFailure()
		}
		msg := r.describe(vm, exc)
		if r.stopped(vm) {
			return r.timeoutFailure()
		}
		return r.guestFailure(msg)
	default:
		return r.fail(CodeInternal, err.Error())
	}
}

// stopped reports whether the deadline (soft interrupt or hard kill) ended the guest's code.
func (r *Run) stopped(vm *quickjs.VM) bool {
	return r.interrupts || vm.Killed() || vm.Dead() != nil
}

// guestFailure reports an exception that escaped the cell. Out-of-memory is the memory limit
// (R3): QuickJS makes it uncatchable, and the VM is discarded with the run.
func (r *Run) guestFailure(msg string) Outcome {
	if strings.HasPrefix(msg, "InternalError: out of memory") {
		return r.fail("", fmt.Sprintf("memory limit exceeded: the cell needed more than memoryLimitBytes (%d bytes)", r.memLimit))
	}
	return r.fail("", msg)
}

func (r *Run) takeOutput() []api.Output {
	o := r.output
	r.output = nil
	return o
}

// end cancels everything still pending: the run reached a terminal state.
func (r *Run) end() {
	if r.ended {
		return
	}
	r.ended = true
	r.Close()
}

// Close cancels pending calls and releases the run's state. Safe to call more than once.
func (r *Run) Close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		for _, c := range r.calls {
			if c.timer != nil {
				c.timer.Stop()
			}
		}
	}
	r.mu.Unlock()
	r.cancel()
	r.snapshot = nil
}

// WaitIdle blocks until every goroutine the run started has returned (tests, shutdown).
func (r *Run) WaitIdle() { r.wg.Wait() }
