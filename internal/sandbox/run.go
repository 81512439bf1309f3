package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
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
	// RestartSafe suspends instead of draining nested calls inside the exec (X9): each step of a
	// restart-safe run's pending work is a model-visible wait.
	RestartSafe bool
	// Admit, when set, is called before a VM is created (exec) or restored (wait, once its
	// pending work is ready) and may refuse with an error (process-wide admission control); the
	// slot is released when the VM is gone. While the VM only waits for host work (nested calls,
	// timers) the run marks the slot idle, so that another cell can use the CPU it does not
	// (issue 18 item 4).
	Admit func(ctx context.Context) (Slot, error)
}

// Slot is an admission slot held by one VM from its creation to its end.
type Slot interface {
	// Idle says the VM waits for host work: its share of the CPU may go to another VM (its
	// memory still counts).
	Idle()
	// Busy says the VM has work again; it blocks until the VM may run, ctx ends or deadline
	// passes (then it returns an error and the slot stays idle).
	Busy(ctx context.Context, deadline time.Time) error
	// Release frees the slot; safe to call more than once.
	Release()
}

// ReleaseSlot adapts a release function to a Slot that never idles (admission that counts
// VMs, not CPU).
func ReleaseSlot(release func()) Slot { return releaseSlot(release) }

type releaseSlot func()

func (releaseSlot) Idle()                                 {}
func (releaseSlot) Busy(context.Context, time.Time) error { return nil }
func (s releaseSlot) Release()                            { s() }

// MaxQueued bounds nested calls waiting for a slot beyond MaxPending. A cell that starts more
// gets a catchable error for the excess calls; it never grows host memory without bound.
const MaxQueued = 1024

// Host answers the guest's bridge requests. Sync runs on the VM goroutine between guest
// instructions (search, describe, API files…) and must be quick. Async runs on its own goroutine
// (tool and MCP calls); ctx is cancelled when the run is cancelled or ends.
type Host interface {
	Sync(op string, payload []byte) ([]byte, error)
	Async(ctx context.Context, c *Call) ([]byte, error)
	// PendingLabel names an async request for `pendingToolCalls` (e.g. a catalog id).
	PendingLabel(op string, payload []byte) string
}

// Prechecker is optionally implemented by a Host: Precheck runs on the VM goroutine when the guest
// starts an async request, before any goroutine or concurrency slot. A request it refuses never
// starts; the guest's promise rejects with the error at the next delivery, like any failed call.
// What it returns for an accepted request is handed to Async as Call.Prechecked, so the request
// is not parsed twice.
type Prechecker interface {
	Precheck(c *Call) (any, error)
}

// SlotFree is optionally implemented by a Host: an async request whose op it reports runs at
// once, without one of the run's concurrency slots (MaxPending), because limits of its own bound
// it — the swarm's agents.run, whose children queue by tools.swarm's limits and must not starve
// the cell's tool calls, nor be starved by them. It still counts toward MaxQueued.
type SlotFree interface {
	SlotFree(op string) bool
}

// Call is one asynchronous request as the host sees it.
type Call struct {
	// ID is the call's id, "<parent call id>/<n>": the same in pendingToolCalls, approvals and
	// the trajectory, and stable across suspend and resume.
	ID      string
	Op      string
	Payload []byte
	// Prechecked is what the host's Precheck returned for this call, or nil.
	Prechecked any
	// Sequential, set by the host's Precheck, names the group of calls this one must not overlap
	// with: calls of one run with the same non-empty Sequential start one at a time, in call
	// order, each after the previous one's result was delivered (issue 22 item 8).
	Sequential string
	// untrusted are the sources the host marked the result with (see Untrusted).
	untrusted []string
	run       *Run
	n         int64
	// withdrawn (guarded by run.mu) holds the call's completion back: Export is withdrawing it.
	withdrawn bool
	held      *completion
}

// AwaitDecision tells the run that the call waits for a person's decision on req. asking says
// whether somebody is being asked right now (an Approver): that counts as progress, like a slow
// tool. When nobody is (the embedder decides later), the run suspends with reason "approval" as
// soon as nothing else can progress, and lists req in pendingApprovals.
func (c *Call) AwaitDecision(req api.ApprovalRequest, asking bool) {
	r := c.run
	r.mu.Lock()
	r.awaiting[c.n] = &awaiting{req: req, asking: asking, call: c}
	r.mu.Unlock()
	r.wake()
}

// Decided says the decision arrived: the call goes on (or fails) like any running call.
func (c *Call) Decided() {
	r := c.run
	r.mu.Lock()
	if a := r.awaiting[c.n]; a != nil && a.call == c {
		delete(r.awaiting, c.n)
	}
	r.mu.Unlock()
	r.wake()
}

type awaiting struct {
	req    api.ApprovalRequest
	asking bool
	call   *Call
}

// The api package's status and reason names, short.
const (
	StatusCompleted    = api.StatusCompleted
	StatusWaiting      = api.StatusWaiting
	StatusFailed       = api.StatusFailed
	ReasonPendingTools = api.ReasonPendingTools
	ReasonYield        = api.ReasonYield
	ReasonApproval     = api.ReasonApproval
)

// Outcome is the result of driving a run until it completes, fails or suspends: the result
// union (without telemetry and run id, which the caller adds) and the nested calls whose results
// this exec or wait delivered into the VM (for the trajectory).
type Outcome struct {
	api.ExecResult
	Delivered []string
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
	host            *Call // what the host sees of a queued tool call
	// running is what the host sees of a started call (withdrawal needs it).
	running *Call
	// owner names the process running the call when it runs elsewhere (imported from a record);
	// such a call has no goroutine here and its result arrives through Deliver.
	owner string
	// deadline is a timer's due time (it survives export as an absolute time).
	deadline time.Time
	// approval is set for a call withdrawn while it waited for a decision: it never ran, and
	// starts again (asking again) when the run is driven next.
	approval *api.ApprovalRequest
	// seq is the call's sequential group ("" for none): see Call.Sequential.
	seq string
}

type completion struct {
	id        int64
	result    []byte
	err       error
	noForward bool // a timer's, or a result that came from elsewhere: never handed to the sink
	reissue   bool // not a result: start the call here (its owner died), see ReissueLater
	untrusted []string
}

// CallResult is a call's outcome as data, the form it takes in a run store: the JSON result, or
// the error the guest's promise rejects with, and the untrusted sources it carries.
type CallResult struct {
	Value     json.RawMessage `json:"value,omitempty"`
	Error     *api.ToolError  `json:"error,omitempty"`
	Untrusted []string        `json:"untrusted,omitempty"`
}

// data is the completion as a CallResult.
func (c completion) data() CallResult {
	if c.err != nil {
		ce, ok := c.err.(*api.ToolError)
		if !ok {
			ce = &api.ToolError{Name: "Error", Message: c.err.Error()}
		}
		return CallResult{Error: ce, Untrusted: c.untrusted}
	}
	v := c.result
	if len(v) == 0 {
		v = []byte("null")
	}
	return CallResult{Value: v, Untrusted: c.untrusted}
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

	// vmMu guards vm, hotEntry, snapshot and snapshotErr: the driver (exec, wait) holds it while
	// it runs the VM, the hot cache takes it to evict.
	vmMu        sync.Mutex
	vm          *quickjs.VM // a hot suspended run's live VM (nil: restore from snapshot)
	hotEntry    *hotEntry
	snapshotErr error // the hot VM could not be captured on eviction

	mu         sync.Mutex // guards ready, readyBytes, running, awaiting and closed, shared with call goroutines
	ready      []completion
	readyBytes int
	notify     chan struct{}
	closed     bool
	running    int                 // async calls holding a concurrency slot
	free       int                 // slot-free async calls running (see SlotFree)
	awaiting   map[int64]*awaiting // running calls waiting for a person's decision
	untrusted  []string            // untrusted sources delivered into the VM (sorted, bounded)
	// detached is set by Export and cleared when a driver resumes the run: completions that
	// arrive meanwhile also go to sink, so that another process resuming the run gets them.
	detached bool
	sink     func(callID string, res CallResult)

	// VM-goroutine state (exec/wait are serialised by the caller).
	idPrefix   string // calls are "<idPrefix>/<n>"
	delivered  []string
	maxPending int
	calls      map[int64]*call
	queue      []*call
	seqBusy    map[string]bool // sequential groups with a call started and not yet delivered
	nextID     int64
	main       quickjs.Value // the cell's promise
	// bodyDone is set once the cell's body settled with a value; value is that value as JSON.
	// The run goes on until no work is pending (X7) and then completes with it.
	bodyDone bool
	value    []byte
	// unhandled are promises rejected with no handler yet, oldest first (bounded); the ones
	// still unhandled when the cell completes are reported in its output.
	unhandled        []rejection
	unhandledDropped int
	snapshot         []byte // compressed VM image while suspended (guarded by vmMu)
	maxSnapshot      int
	yieldAsked       bool
	yielded          *call // the yield_control call to resolve on resume
	output           []api.Output
	outBytes         int // what output and value cost against maxOut (see output.go)
	out              outputState
	maxOut           int
	abortCode        api.ErrorCode // set by the host side; the interrupt handler then stops the guest
	abortMsg         string
	interrupts       bool
	deadline         time.Time
	ended            bool
	memLimit         uint64
	restartSafe      bool // suspend on pending work instead of draining it (X9)
	resumed          bool // a wait just restored the VM: deliver once before suspending again
	// remote counts calls running on other processes (imported): they hold concurrency slots.
	remote int
	// slot is the admission slot of the exec or wait driving the VM (nil without admission).
	slot Slot
}

// Cell is what Start runs.
type Cell struct {
	Program *source.Program
	// CallID is the exec call's id: the run's nested calls are "<CallID>/<n>".
	CallID string
	// Namespaces is the JSON the prelude installs as the run's namespace globals (N5), or nil.
	Namespaces []byte
	// Swarm installs agents.run, phase and log (tools.swarm): only runs with swarm on get them.
	Swarm bool
}

// Start creates a run for a cell from a catalog template and drives it until it completes,
// fails or suspends.
func (e *Engine) Start(ctx context.Context, host Host, tmpl *Template, lim Limits, cell Cell) (*Run, Outcome) {
	rctx, cancel := context.WithCancel(context.Background())
	prog := cell.Program
	r := &Run{
		eng: e, host: host, program: prog, ctx: rctx, cancel: cancel, tmpl: tmpl, idPrefix: cell.CallID,
		notify: make(chan struct{}, 1), calls: map[int64]*call{}, awaiting: map[int64]*awaiting{},
		maxPending: max(1, lim.MaxPending), maxOut: lim.MaxOutputBytes, memLimit: lim.MemoryLimit,
		maxSnapshot: int(lim.MaxSnapshotBytes), restartSafe: lim.RestartSafe, seqBusy: map[string]bool{},
	}
	r.out.reset()
	r.vmMu.Lock()
	defer r.vmMu.Unlock()
	if lim.Admit != nil {
		slot, err := lim.Admit(ctx)
		if err != nil {
			r.end()
			return r, r.fail(admitCode(err), err.Error())
		}
		r.slot = slot
		defer r.releaseSlot()
	}
	vm, err := e.newVM(ctx, tmpl.img, lim.MemoryLimit)
	if err != nil {
		r.end()
		return r, r.fail(api.CodeRuntimeUnavailable, "code mode runtime unavailable: "+err.Error())
	}
	defer r.release(vm)
	r.call = ctx
	stop := r.arm(vm, lim.Timeout)
	defer stop()
	if len(cell.Namespaces) > 0 {
		if err := r.installNamespaces(vm, cell.Namespaces); err != nil {
			return r, r.fail(api.CodeInternal, "cannot install the run's namespaces: "+err.Error())
		}
	}
	if cell.Swarm {
		res, err := vm.Call(e.fns.InstallSwarm, quickjs.Undefined)
		if err != nil {
			return r, r.fail(api.CodeInternal, "cannot install the swarm globals: "+describeInitError(vm, err).Error())
		}
		vm.Free(res)
	}
	if o, ok := r.begin(vm); !ok {
		return r, o
	}
	return r, r.drive(ctx, vm)
}

// admitCode is the result code of a refused admission: overloaded, or timeout when the caller
// gave up while queued.
func admitCode(err error) api.ErrorCode {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return api.CodeTimeout
	}
	return api.CodeOverloaded
}

// installNamespaces runs the prelude's installer with the run's namespace descriptors.
func (r *Run) installNamespaces(vm *quickjs.VM, desc []byte) error {
	sv, err := vm.NewString(string(desc))
	if err != nil {
		return err
	}
	defer vm.Free(sv)
	res, err := vm.Call(r.eng.fns.InstallNamespaces, quickjs.Undefined, sv)
	if err != nil {
		return describeInitError(vm, err)
	}
	vm.Free(res)
	return nil
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
			msg := r.describeSyntax(vm, exc)
			vm.Free(exc)
			if r.overran() {
				return r.timeoutFailure(), false
			}
			return r.fail(api.CodeInvalidInput, msg), false
		}
		return r.vmFailure(vm, err), false
	}
	p, err := vm.Call(fn, quickjs.Undefined)
	vm.Free(fn)
	if err != nil {
		return r.vmFailure(vm, err), false
	}
	r.main = p
	if r.overran() {
		// The body's synchronous part ran past the deadline (and swallowed the interrupt, or
		// never reached an interrupt check): still a timeout (R2).
		return r.timeoutFailure(), false
	}
	return Outcome{}, true
}

// arm installs the per-VM interrupt (soft deadline) and the hard-kill timer.
func (r *Run) arm(vm *quickjs.VM, timeout time.Duration) (stop func()) {
	r.deadline = time.Now().Add(timeout)
	r.interrupts = false
	vm.Interrupt = func() bool {
		if r.abortCode != "" {
			return true
		}
		if time.Now().After(r.deadline) || r.ctx.Err() != nil || (r.call != nil && r.call.Err() != nil) {
			// Recorded before the guest sees it: whatever the guest (or an engine callback such
			// as Error.prepareStackTrace, which QuickJS-NG lets swallow it) does with the
			// interrupt, this VM has timed out.
			r.interrupts = true
			return true
		}
		return false
	}
	vm.ErrorFactory = r.makeGuestError
	vm.Rejection = r.onRejection
	vm.Register(hostOut, r.hostOut)
	vm.Register(hostSync, r.hostSync)
	vm.Register(hostAsync, r.hostAsync)
	grace := timeout / 10
	grace = min(max(grace, 50*time.Millisecond), 500*time.Millisecond)
	t := time.AfterFunc(timeout+grace, vm.Kill)
	return func() { t.Stop() }
}

// overran reports whether guest code ran past this VM's deadline: the interrupt fired, or the
// clock is past the deadline when the cell's body returns or fails. It makes the host decide by
// the clock, not by whether the guest caught or swallowed the interrupt: a cell that returns
// after its deadline has still timed out (R1–R3).
func (r *Run) overran() bool {
	return r.interrupts || time.Now().After(r.deadline)
}

// drive runs jobs and delivers completions until the cell is done, the deadline passes or the
// guest yields. The cell is done when its body settled and nothing is pending any more — no
// job, timer or nested call (X7): work a cell started without awaiting it still runs, within
// the deadline, and pending work at the deadline suspends the run like an awaited call.
func (r *Run) drive(ctx context.Context, vm *quickjs.VM) Outcome {
	deadline := time.NewTimer(time.Until(r.deadline))
	defer deadline.Stop()
	for {
		ran, err := r.runJobs(vm)
		if err != nil {
			return r.vmFailure(vm, err)
		}
		if r.abortCode != "" {
			return r.fail(r.abortCode, r.abortMsg)
		}
		if r.interrupts {
			return r.timeoutFailure()
		}
		// A job that crossed the deadline by less than an interrupt check is not a timeout by
		// itself (a timer chain suspends at its deadline), but a cell does not complete late.
		late := ran && time.Now().After(r.deadline)
		if !r.bodyDone {
			switch vm.PromiseState(r.main) {
			case quickjs.PromiseFulfilled:
				if o, ok := r.takeValue(vm); !ok {
					return o
				}
			case quickjs.PromiseRejected:
				reason := vm.PromiseResult(r.main)
				msg := r.describe(vm, reason)
				vm.Free(reason)
				if r.stopped(vm) || r.overran() {
					// Describing the error ran guest code (a getter, a toString) past the deadline.
					return r.timeoutFailure()
				}
				return r.guestFailure(msg)
			}
		}
		if r.bodyDone && len(r.calls) == 0 {
			if late {
				return r.timeoutFailure()
			}
			r.reportUnhandled(vm)
			if r.overran() {
				return r.timeoutFailure() // describing a rejection ran guest code past the deadline
			}
			return r.complete()
		}
		if time.Now().After(r.deadline) {
			return r.suspend(vm, r.suspendReason())
		}
		if r.yieldAsked {
			return r.suspend(vm, ReasonYield)
		}
		if r.restartSafe && len(r.calls) > 0 && !r.resumed {
			// X9: restart-safe runs are never drained automatically; each step of pending work
			// becomes a model-visible wait, so a replay after a restart can rebuild it.
			return r.suspend(vm, ReasonPendingTools)
		}
		r.resumed = false
		if r.deliverReady(vm) > 0 {
			if vm.Dead() != nil {
				return r.vmFailure(vm, vm.Dead())
			}
			continue
		}
		if len(r.calls) == 0 {
			return r.fail(api.CodeCellError, "the cell is awaiting a promise that nothing will settle (no tool call, timer or yield is pending)")
		}
		if r.stuckOnDecisions() {
			// Only calls waiting for a decision nobody is being asked for remain: the embedder
			// must decide (Surface.Decide), so return now rather than at the deadline.
			return r.suspend(vm, ReasonApproval)
		}
		if r.spinForCompletion() {
			continue
		}
		// Idle until something happens: the admission slot's CPU share is free meanwhile.
		if r.slot != nil {
			r.slot.Idle()
		}
		select {
		case <-r.notify:
		case <-deadline.C:
		case <-ctx.Done():
			return r.fail(api.CodeTimeout, "exec cancelled: "+ctx.Err().Error())
		}
		if r.slot != nil {
			if err := r.slot.Busy(ctx, r.deadline); err != nil {
				if ctx.Err() != nil {
					return r.fail(api.CodeTimeout, "exec cancelled: "+ctx.Err().Error())
				}
				// No CPU before the deadline: the run suspends as if its work were still pending.
				return r.suspend(vm, r.suspendReason())
			}
		}
	}
}

// releaseSlot releases the run's admission slot (the VM is gone or kept hot).
func (r *Run) releaseSlot() {
	if r.slot != nil {
		r.slot.Release()
		r.slot = nil
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

// wake tells the VM goroutine that something changed (a completion, a decision awaited).
func (r *Run) wake() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// suspendReason is "approval" while a call waits for a decision, else "pending_tools".
func (r *Run) suspendReason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.awaiting) > 0 {
		return ReasonApproval
	}
	return ReasonPendingTools
}

// stuckOnDecisions reports whether the run cannot progress until someone decides: every running
// call waits for a decision nobody is being asked for, no result is ready and no timer runs.
// (Queued calls wait for the slots those calls hold.)
func (r *Run) stuckOnDecisions() bool {
	for _, c := range r.calls {
		if c.op == "sleep" && !c.settled {
			return false
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	manual := 0
	for _, a := range r.awaiting {
		if !a.asking {
			manual++
		}
	}
	return manual > 0 && manual == r.running && r.free == 0 && r.remote == 0 && len(r.ready) == 0
}

// PendingApprovals lists the calls waiting for a decision, oldest first.
func (r *Run) PendingApprovals() []api.ApprovalRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	ns := make([]int64, 0, len(r.awaiting))
	for n := range r.awaiting {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	out := make([]api.ApprovalRequest, len(ns), len(ns)+len(r.queue))
	for i, n := range ns {
		out[i] = r.awaiting[n].req
	}
	// Calls withdrawn from waiting (Export) still wait for their decision.
	for _, c := range r.queue {
		if c.approval != nil {
			out = append(out, *c.approval)
		}
	}
	return out
}

func (r *Run) runningCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running + r.free
}

// runJobs drains the QuickJS job queue and reports whether any job ran.
func (r *Run) runJobs(vm *quickjs.VM) (bool, error) {
	ran := false
	for {
		n, err := vm.ExecutePendingJob()
		if err != nil {
			return ran, err
		}
		if n == 0 {
			return ran, nil
		}
		ran = true
		if n < 0 {
			return ran, quickjs.ErrPendingException
		}
	}
}

// takeValue converts the settled body's value to JSON as the body returned it (X7: the final
// value is the body's value, whatever pending work does afterwards). The value counts against
// maxOutputBytes of the result that will carry it.
func (r *Run) takeValue(vm *quickjs.VM) (Outcome, bool) {
	val := vm.PromiseResult(r.main)
	defer vm.Free(val)
	s, err := vm.Call(r.eng.fns.Encode, quickjs.Undefined, val)
	if err != nil {
		if errors.Is(err, quickjs.ErrPendingException) && !r.stopped(vm) {
			exc := vm.TakeException()
			msg := r.describe(vm, exc)
			vm.Free(exc)
			if r.stopped(vm) || r.overran() {
				return r.timeoutFailure(), false
			}
			if isOutOfMemory(msg) {
				return r.guestFailure(msg), false
			}
			return r.fail(api.CodeCellError, "the return value cannot be converted to JSON: "+msg), false
		}
		return r.vmFailure(vm, err), false
	}
	defer vm.Free(s)
	if r.overran() {
		// toJSON, a getter or a Proxy trap on the value ran past the deadline.
		return r.timeoutFailure(), false
	}
	budget := r.maxOut - r.outBytes
	text, err := r.valueText(vm, s, budget)
	if err != nil {
		var tl *quickjs.TooLongError
		if errors.As(err, &tl) {
			return r.fail(api.CodeOutputLimit, fmt.Sprintf("output limit exceeded: the return value is %d bytes and %d of maxOutputBytes (%d) remain", tl.Len, max(budget, 0), r.maxOut)), false
		}
		return r.vmFailure(vm, err), false
	}
	r.bodyDone = true
	r.value = []byte(text)
	r.outBytes += jsonCost(text, false)
	return Outcome{}, true
}

// complete ends the run with the body's value: nothing is pending any more.
func (r *Run) complete() Outcome {
	r.end()
	return Outcome{ExecResult: api.ExecResult{Status: StatusCompleted, Value: json.RawMessage(r.value), Output: r.takeOutput(), Untrusted: r.provenance()}, Delivered: r.takeDelivered()}
}

func (r *Run) fail(code api.ErrorCode, msg string) Outcome {
	r.end()
	return Outcome{ExecResult: api.ExecResult{Status: StatusFailed, Error: msg, Code: code, Output: r.takeOutput(), Untrusted: r.provenance()}, Delivered: r.takeDelivered()}
}

func (r *Run) timeoutFailure() Outcome {
	if r.ctx.Err() != nil {
		return r.fail(api.CodeTimeout, "code mode run was cancelled"+r.cancelledNote())
	}
	if r.call != nil && r.call.Err() != nil {
		return r.fail(api.CodeTimeout, "exec cancelled: "+r.call.Err().Error()+r.cancelledNote())
	}
	return r.fail(api.CodeTimeout, "code mode exec timed out: the cell was still running at the deadline (timeoutMs)"+r.cancelledNote())
}

// cancelledNote tells the model which pending work a failure cancels: a call the cell started
// without awaiting it may or may not have reached its tool.
func (r *Run) cancelledNote() string {
	pending := r.PendingInfo()
	if len(pending) == 0 {
		return ""
	}
	const show = 5
	names := make([]string, 0, show)
	for i, p := range pending {
		if i == show {
			names = append(names, "…")
			break
		}
		names = append(names, p.Tool)
	}
	what := "1 pending call was"
	if len(pending) > 1 {
		what = fmt.Sprintf("%d pending calls were", len(pending))
	}
	return fmt.Sprintf(" (%s cancelled: %s)", what, strings.Join(names, ", "))
}

// vmFailure classifies an error from the VM: interrupt, hard kill, memory limit, guest exception.
func (r *Run) vmFailure(vm *quickjs.VM, err error) Outcome {
	switch {
	case r.abortCode != "":
		return r.fail(r.abortCode, r.abortMsg)
	case vm.Killed() || r.interrupts:
		return r.timeoutFailure()
	case errors.Is(err, quickjs.ErrKilled):
		return r.fail(api.CodeRuntimeUnavailable, "the QuickJS VM stopped abnormally: "+err.Error())
	case errors.Is(err, quickjs.ErrPendingException):
		exc := vm.TakeException()
		defer vm.Free(exc)
		if r.stopped(vm) {
			return r.timeoutFailure()
		}
		msg := r.describe(vm, exc)
		if r.stopped(vm) || r.overran() {
			return r.timeoutFailure()
		}
		return r.guestFailure(msg)
	default:
		return r.fail(api.CodeInternal, err.Error())
	}
}

// stopped reports whether the deadline (soft interrupt or hard kill) ended the guest's code.
func (r *Run) stopped(vm *quickjs.VM) bool {
	return r.interrupts || vm.Killed() || vm.Dead() != nil
}

// guestFailure reports an exception that escaped the cell. Out-of-memory is the memory limit
// (R3): QuickJS makes it uncatchable, and the VM is discarded with the run.
func (r *Run) guestFailure(msg string) Outcome {
	if isOutOfMemory(msg) {
		return r.fail(api.CodeMemoryLimit, fmt.Sprintf("memory limit exceeded: the cell needed more than memoryLimitBytes (%d bytes)", r.memLimit)+r.cancelledNote())
	}
	return r.fail(api.CodeCellError, msg+r.cancelledNote())
}

// isOutOfMemory reports whether a described exception is QuickJS's out-of-memory error.
func isOutOfMemory(msg string) bool { return strings.HasPrefix(msg, "InternalError: out of memory") }

func (r *Run) takeDelivered() []string {
	d := r.delivered
	r.delivered = nil
	return d
}

// release closes the VM that drove the run unless the run kept it hot. The caller holds r.vmMu.
func (r *Run) release(vm *quickjs.VM) {
	if r.vm != vm {
		vm.Close()
	}
}

// end cancels everything still pending: the run reached a terminal state. The driver calls it
// holding r.vmMu; the VM it drove is closed by release.
func (r *Run) end() {
	if r.ended {
		return
	}
	r.ended = true
	r.closeCalls()
	r.snapshot = nil
}

// Close cancels pending calls and releases the run's state, hot VM and snapshot included. Safe to
// call more than once; not while an exec or wait drives the run.
func (r *Run) Close() {
	r.closeCalls()
	r.vmMu.Lock()
	r.dropVMLocked()
	r.snapshot = nil
	r.vmMu.Unlock()
}

func (r *Run) closeCalls() {
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
}

// WaitIdle blocks until every goroutine the run started has returned (tests, shutdown).
func (r *Run) WaitIdle() { r.wg.Wait() }
