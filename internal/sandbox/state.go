package sandbox

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/quickjs"
	"github.com/codemode-go/codemode/internal/source"
)

// A suspended run leaves the process as its snapshot plus a State: everything else a fresh
// process needs to resume it as if it had never left (RATIONALE: "Why is a suspended run
// resumable on any replica"). The promise resolvers and the cell's promise are heap values: they
// stay valid in the VM restored from the snapshot, so they cross as numbers. Calls in flight stay
// with the process running them (their owner); the importer gets their results through Deliver.

// StateVersion is the version of State's JSON form.
const StateVersion = 1

// Bounds of an imported state: a record is authenticated by the store, but a bug, an old format
// or a hostile store must never make the host panic or allocate without bound.
const (
	MaxStateBytes  = 24 << 20
	maxStateCalls  = MaxQueued + 128 + 64 // queue + MaxPendingToolCalls + timers and yields
	maxStateString = 4 << 10              // labels, owners, ops
	maxSourceBytes = 4 << 20
	maxCallNumber  = 1 << 40
	maxRejections  = maxTrackedRejections
)

// Call statuses in a State.
const (
	CallRunning  = "running"  // in flight on Owner
	CallQueued   = "queued"   // never started (no concurrency slot yet)
	CallAwaiting = "awaiting" // withdrawn while it waited for a decision: never ran
	CallTimer    = "timer"    // setTimeout, due at Deadline
	CallYield    = "yield"    // yield_control, resolved by the next resume
	CallDone     = "done"     // settled on the host, not yet delivered into the VM
)

// State is a suspended run's host-side state (see Export).
type State struct {
	Version     int             `json:"v"`
	Prefix      string          `json:"prefix"` // call ids are "<Prefix>/<n>"
	NextID      int64           `json:"next"`
	Language    string          `json:"language"`
	Source      string          `json:"source"`
	RestartSafe bool            `json:"restartSafe,omitempty"`
	Main        uint64          `json:"main"` // the cell's promise
	BodyDone    bool            `json:"bodyDone,omitempty"`
	Value       json.RawMessage `json:"value,omitempty"` // the body's value, once it settled
	Calls       []StateCall     `json:"calls"`
	Unhandled   [][2]uint64     `json:"unhandled,omitempty"` // tracked rejections: promise, reason
	Dropped     int             `json:"dropped,omitempty"`   // rejections past the tracking bound
	// Untrusted are the untrusted sources already delivered into the VM (Call.Untrusted).
	Untrusted []string `json:"untrusted,omitempty"`
	// Snapshot is the VM image (EncodeSnapshot's format). It travels beside the JSON, not in it.
	Snapshot []byte `json:"-"`
}

// StateCall is one pending call of a State.
type StateCall struct {
	ID       int64                `json:"id"`
	Op       string               `json:"op"`
	Payload  string               `json:"payload"`
	Label    string               `json:"label"`
	Started  int64                `json:"started"` // unix milliseconds
	Resolve  uint64               `json:"resolve"`
	Reject   uint64               `json:"reject"`
	Status   string               `json:"status"`
	Owner    string               `json:"owner,omitempty"`    // running: the process running it
	Deadline int64                `json:"deadline,omitempty"` // timer: unix milliseconds
	Approval *api.ApprovalRequest `json:"approval,omitempty"` // awaiting: the request to ask again
	Result   *CallResult          `json:"result,omitempty"`   // done
	Seq      string               `json:"seq,omitempty"`      // sequential group (Call.Sequential)
}

// ErrBadState reports a state that cannot be imported: corrupt, of another version, or not
// matching its snapshot.
var ErrBadState = errors.New("sandbox: invalid suspended-run state")

// Marshal encodes the state's JSON (without the snapshot).
func (st *State) Marshal() ([]byte, error) { return json.Marshal(st) }

// UnmarshalState decodes a state's JSON (the snapshot is set by the caller). It bounds the input
// and rejects unknown fields: an unknown field is a newer format this process cannot honour.
func UnmarshalState(b []byte) (State, error) {
	var st State
	if len(b) > MaxStateBytes {
		return st, fmt.Errorf("%w: %d bytes (limit %d)", ErrBadState, len(b), MaxStateBytes)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return State{}, fmt.Errorf("%w: %v", ErrBadState, err)
	}
	if dec.More() {
		return State{}, fmt.Errorf("%w: trailing data", ErrBadState)
	}
	return st, nil
}

// Owner names the process in exported states: running calls belong to it.
func (e *Engine) Owner() string { return e.owner }

// SetOwner names the process for exported states (default: random per engine). Two engines that
// may export runs of the same store must have different owners. Call it before any run starts.
func (e *Engine) SetOwner(name string) { e.owner = name }

// SetResultSink sets where completions go once the run is exported: while the run is suspended
// after Export, every nested call that completes here is also handed to fn (on the call's
// goroutine), so that a process that resumes the run elsewhere gets the result.
func (r *Run) SetResultSink(fn func(callID string, res CallResult)) {
	r.mu.Lock()
	r.sink = fn
	r.mu.Unlock()
}

// Export captures a suspended run for another process: its snapshot (taken now from a hot VM,
// which stays hot) and its State. Calls parked for a decision nobody is being asked for are
// withdrawn first when the host can (Withdrawer): they never ran, and start again wherever the
// run is driven next. From now until the next Resume, completions of calls running here also go
// to the result sink. Call it only between drives.
func (r *Run) Export() (State, error) {
	if r.ended {
		return State{}, ErrNotSuspended
	}
	r.vmMu.Lock()
	switch {
	case r.snapshot != nil:
	case r.vm != nil:
		if err := r.captureLocked(); err != nil {
			r.vmMu.Unlock()
			return State{}, fmt.Errorf("cannot snapshot the VM: %w", err)
		}
	case r.snapshotErr != nil:
		err := r.snapshotErr
		r.vmMu.Unlock()
		return State{}, fmt.Errorf("cannot snapshot the VM: %w", err)
	default:
		r.vmMu.Unlock()
		return State{}, ErrNotSuspended
	}
	snap := r.snapshot
	r.vmMu.Unlock()
	if r.maxSnapshot > 0 && len(snap) > r.maxSnapshot {
		return State{}, &SnapshotLimitError{Size: len(snap), Limit: r.maxSnapshot}
	}
	r.withdraw()

	st := State{Version: StateVersion, Prefix: r.idPrefix, NextID: r.nextID, RestartSafe: r.restartSafe,
		Main: uint64(r.main), BodyDone: r.bodyDone, Dropped: r.unhandledDropped, Snapshot: snap}
	if r.program != nil {
		st.Language, st.Source = r.program.Language, r.program.Source
	}
	if r.bodyDone {
		st.Value = json.RawMessage(r.value)
	}
	for _, u := range r.unhandled {
		st.Unhandled = append(st.Unhandled, [2]uint64{uint64(u.promise), uint64(u.reason)})
	}
	st.Untrusted = r.provenance()
	r.mu.Lock()
	done := make(map[int64]completion, len(r.ready))
	for _, c := range r.ready {
		if _, seen := done[c.id]; !seen && !c.reissue {
			done[c.id] = c
		}
	}
	r.detached = true
	r.mu.Unlock()
	queued := map[int64]bool{}
	for _, c := range r.queue {
		queued[c.id] = true
	}
	for _, c := range r.calls {
		if c.settled {
			continue
		}
		sc := StateCall{ID: c.id, Op: c.op, Payload: string(c.payload), Label: c.label, Started: c.started.UnixMilli(),
			Resolve: uint64(c.resolve), Reject: uint64(c.reject), Seq: c.seq}
		d, isDone := done[c.id]
		switch {
		case isDone:
			res := d.data()
			sc.Status, sc.Result = CallDone, &res
		case c == r.yielded:
			sc.Status = CallYield
		case c.op == "sleep":
			sc.Status, sc.Deadline = CallTimer, c.deadline.UnixMilli()
		case queued[c.id] && c.approval != nil:
			a := *c.approval
			sc.Status, sc.Approval = CallAwaiting, &a
		case queued[c.id]:
			sc.Status = CallQueued
		case c.owner != "":
			sc.Status, sc.Owner = CallRunning, c.owner
		default:
			sc.Status, sc.Owner = CallRunning, r.eng.owner
		}
		st.Calls = append(st.Calls, sc)
	}
	slices.SortFunc(st.Calls, func(a, b StateCall) int { return int(a.ID - b.ID) })
	return st, nil
}

// SnapshotLimitError is Export's error for a snapshot over maxSnapshotBytes.
type SnapshotLimitError struct{ Size, Limit int }

func (e *SnapshotLimitError) Error() string {
	return fmt.Sprintf("snapshot limit exceeded: the suspended VM needs %d bytes and maxSnapshotBytes is %d", e.Size, e.Limit)
}

// Withdrawer is optionally implemented by a Host: Withdraw takes back a call that waits for a
// decision nobody is being asked for, guaranteeing its tool never runs from this attempt; it
// reports false when the call is no longer waiting (somebody decided meanwhile).
type Withdrawer interface {
	Withdraw(c *Call) bool
}

// withdraw takes back the calls parked for a decision nobody is being asked for and queues them
// again, marked with their approval request. Their goroutines end with a completion that never
// reaches the guest.
func (r *Run) withdraw() {
	w, ok := r.host.(Withdrawer)
	if !ok {
		return
	}
	type cand struct {
		hc  *Call
		req api.ApprovalRequest
	}
	var cands []cand
	r.mu.Lock()
	for _, a := range r.awaiting {
		if !a.asking && a.call != nil {
			a.call.withdrawn = true
			cands = append(cands, cand{a.call, a.req})
		}
	}
	r.mu.Unlock()
	slices.SortFunc(cands, func(a, b cand) int { return int(a.hc.n - b.hc.n) })
	var front []*call
	for _, cd := range cands {
		hc := cd.hc
		ok := w.Withdraw(hc)
		r.mu.Lock()
		held := hc.held
		hc.held = nil
		if ok {
			if a := r.awaiting[hc.n]; a != nil && a.call == hc {
				delete(r.awaiting, hc.n)
			}
		} else {
			hc.withdrawn = false
		}
		r.mu.Unlock()
		if !ok {
			if held != nil {
				r.push(*held)
			}
			continue
		}
		c := r.calls[hc.n]
		if c == nil || c.settled || c.running != hc {
			continue
		}
		if c.cancel != nil {
			c.cancel()
		}
		req := cd.req
		c.running, c.approval = nil, &req
		c.host = &Call{ID: hc.ID, Op: hc.Op, Payload: hc.Payload, Prechecked: hc.Prechecked, run: r, n: hc.n}
		front = append(front, c)
	}
	r.queue = append(front, r.queue...)
}

// Import rebuilds a suspended run from a template, a State (with its snapshot) and this process's
// host, so that Resume continues it as if it had never left. Timers are re-armed for their
// deadlines; results that were settled are ready; calls that ran elsewhere wait for Deliver (or
// Reissue). A state that does not validate fails with ErrBadState, never a panic.
func (e *Engine) Import(tmpl *Template, st State, host Host, lim Limits) (*Run, error) {
	bad := func(format string, args ...any) (*Run, error) {
		return nil, fmt.Errorf("%w: %s", ErrBadState, fmt.Sprintf(format, args...))
	}
	if tmpl == nil || host == nil {
		return bad("no template or host")
	}
	size, err := snapshotSize(e.snapKey, tmpl, st.Snapshot)
	if err != nil {
		return nil, err
	}
	if err := st.check(size); err != nil {
		return bad("%v", err)
	}
	prog, err := source.Prepare(st.Source, st.Language)
	if err != nil {
		return bad("the cell does not prepare again: %v", err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	r := &Run{
		eng: e, host: host, program: prog, ctx: rctx, cancel: cancel, tmpl: tmpl, idPrefix: st.Prefix,
		notify: make(chan struct{}, 1), calls: map[int64]*call{}, awaiting: map[int64]*awaiting{},
		maxPending: max(1, lim.MaxPending), maxOut: lim.MaxOutputBytes, memLimit: lim.MemoryLimit,
		maxSnapshot: int(lim.MaxSnapshotBytes), restartSafe: st.RestartSafe, nextID: st.NextID,
		main: quickjs.Value(st.Main), bodyDone: st.BodyDone, snapshot: st.Snapshot, unhandledDropped: st.Dropped,
		seqBusy: map[string]bool{}, untrusted: addSources(nil, st.Untrusted...),
	}
	r.out.reset()
	if st.BodyDone {
		r.value = []byte(st.Value)
	}
	for _, u := range st.Unhandled {
		r.unhandled = append(r.unhandled, rejection{quickjs.Value(u[0]), quickjs.Value(u[1])})
	}
	now := time.Now()
	for _, sc := range st.Calls {
		c := &call{id: sc.ID, op: sc.Op, payload: []byte(sc.Payload), label: sc.Label,
			started: time.UnixMilli(sc.Started), resolve: quickjs.Value(sc.Resolve), reject: quickjs.Value(sc.Reject), seq: sc.Seq}
		r.calls[c.id] = c
		switch sc.Status {
		case CallRunning:
			c.owner = sc.Owner
			r.remote++
			if c.seq != "" {
				r.seqBusy[c.seq] = true
			}
		case CallQueued, CallAwaiting:
			c.host = &Call{ID: r.callID(c.id), Op: c.op, Payload: c.payload, run: r, n: c.id}
			if sc.Approval != nil {
				a := *sc.Approval
				c.approval = &a
			}
			r.queue = append(r.queue, c)
		case CallTimer:
			c.deadline = time.UnixMilli(sc.Deadline)
			id := c.id
			c.timer = time.AfterFunc(max(0, c.deadline.Sub(now)), func() { r.push(completion{id: id, result: []byte("true"), noForward: true}) })
		case CallYield:
			r.yielded = c
		case CallDone:
			res := *sc.Result
			cp := completion{id: c.id, result: res.Value, noForward: true, untrusted: res.Untrusted}
			if c.seq != "" {
				r.seqBusy[c.seq] = true // started, not yet delivered
			}
			if res.Error != nil {
				cp.err = res.Error
			}
			r.ready = append(r.ready, cp)
			r.readyBytes += len(res.Value)
		}
	}
	return r, nil
}

// snapshotSize checks a snapshot's header against the engine and template and returns the VM
// memory size it restores.
func snapshotSize(key [32]byte, tmpl *Template, data []byte) (uint32, error) {
	if len(data) < snapshotHeader || string(data[:4]) != snapshotMagic {
		return 0, fmt.Errorf("%w: bad header", ErrBadSnapshot)
	}
	if string(data[4:36]) != string(key[:]) {
		return 0, fmt.Errorf("%w: made by a different QuickJS module or prelude", ErrBadSnapshot)
	}
	if string(data[36:68]) != string(tmpl.hash[:]) {
		return 0, fmt.Errorf("%w: made from a different template (the tool catalog differs)", ErrBadSnapshot)
	}
	size := binary.LittleEndian.Uint32(data[84:])
	if size == 0 || size%65536 != 0 || uint64(size) > maxSnapshotMemory || int(size) < len(tmpl.img.Memory) {
		return 0, fmt.Errorf("%w: memory size %d", ErrBadSnapshot, size)
	}
	return size, nil
}

// check validates a state against the memory size of its snapshot.
func (st *State) check(size uint32) error {
	if st.Version != StateVersion {
		return fmt.Errorf("version %d (this process reads %d)", st.Version, StateVersion)
	}
	if st.Prefix == "" || len(st.Prefix) > maxStateString || !utf8.ValidString(st.Prefix) {
		return errors.New("bad call-id prefix")
	}
	if st.NextID < 0 || st.NextID > maxCallNumber {
		return fmt.Errorf("bad next call number %d", st.NextID)
	}
	if st.Language != source.JavaScript && st.Language != source.TypeScript {
		return fmt.Errorf("bad language %q", st.Language)
	}
	if len(st.Source) > maxSourceBytes {
		return errors.New("source too large")
	}
	if !isObject(st.Main, size) {
		return errors.New("bad cell promise")
	}
	if st.BodyDone != (len(st.Value) > 0) || (st.BodyDone && !json.Valid(st.Value)) {
		return errors.New("bad body value")
	}
	if len(st.Unhandled) > maxRejections || st.Dropped < 0 || st.Dropped > maxCallNumber {
		return errors.New("bad unhandled rejections")
	}
	for _, u := range st.Unhandled {
		if !isObject(u[0], size) || !isValue(u[1], size) {
			return errors.New("bad unhandled rejection")
		}
	}
	if len(st.Untrusted) > maxProvenance || !boundedStrings(st.Untrusted) {
		return errors.New("bad untrusted sources")
	}
	if len(st.Calls) > maxStateCalls {
		return fmt.Errorf("%d calls (limit %d)", len(st.Calls), maxStateCalls)
	}
	seen := make(map[int64]bool, len(st.Calls))
	yields := 0
	for i := range st.Calls {
		c := &st.Calls[i]
		if c.ID <= 0 || c.ID > st.NextID || seen[c.ID] {
			return fmt.Errorf("bad call id %d", c.ID)
		}
		seen[c.ID] = true
		if len(c.Op) > 64 || len(c.Label) > maxStateString || len(c.Owner) > maxStateString || len(c.Seq) > maxStateString ||
			len(c.Payload) > max(maxBridgePayload, MaxSavedValueBytes) || c.Result != nil && (len(c.Result.Untrusted) > maxProvenance || !boundedStrings(c.Result.Untrusted)) {
			return fmt.Errorf("call %d: field too large", c.ID)
		}
		if !isObject(c.Resolve, size) || !isObject(c.Reject, size) {
			return fmt.Errorf("call %d: bad resolvers", c.ID)
		}
		if c.Started < 0 || c.Started > 1<<50 || c.Deadline < 0 || c.Deadline > 1<<50 {
			return fmt.Errorf("call %d: bad time", c.ID)
		}
		hostOp := c.Op != "sleep" && c.Op != "yield" && c.Op != ""
		switch c.Status {
		case CallRunning:
			if !hostOp || c.Owner == "" {
				return fmt.Errorf("call %d: bad running call", c.ID)
			}
		case CallQueued:
			if !hostOp {
				return fmt.Errorf("call %d: bad queued call", c.ID)
			}
		case CallAwaiting:
			if !hostOp || c.Approval == nil || len(c.Approval.Input) > maxBridgePayload {
				return fmt.Errorf("call %d: bad awaiting call", c.ID)
			}
		case CallTimer:
			if c.Op != "sleep" {
				return fmt.Errorf("call %d: bad timer", c.ID)
			}
		case CallYield:
			if c.Op != "yield" {
				return fmt.Errorf("call %d: bad yield", c.ID)
			}
			yields++
		case CallDone:
			if c.Result == nil || (c.Result.Error == nil) == (len(c.Result.Value) == 0) ||
				(len(c.Result.Value) > 0 && !json.Valid(c.Result.Value)) || c.Op == "yield" {
				return fmt.Errorf("call %d: bad result", c.ID)
			}
		default:
			return fmt.Errorf("call %d: unknown status %q", c.ID, c.Status)
		}
		if c.Status != CallAwaiting && c.Approval != nil || c.Status != CallDone && c.Result != nil {
			return fmt.Errorf("call %d: fields of another status", c.ID)
		}
	}
	if yields > 1 {
		return errors.New("more than one pending yield")
	}
	return nil
}

// boundedStrings reports whether every string is short, valid UTF-8 and not empty.
func boundedStrings(ss []string) bool {
	for _, s := range ss {
		if s == "" || len(s) > 256 || !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// isObject reports whether v can be an object reference into a memory of size bytes.
func isObject(v uint64, size uint32) bool {
	return quickjs.Value(v).Tag() == quickjs.TagObject && pointerIn(v, size)
}

// isValue reports whether v is a JavaScript value a memory of size bytes can hold.
func isValue(v uint64, size uint32) bool {
	switch quickjs.Value(v).Tag() {
	case quickjs.TagInt, quickjs.TagBool, quickjs.TagNull, quickjs.TagUndefined, quickjs.TagShortBigInt, quickjs.TagFloat64:
		return true
	case quickjs.TagObject, quickjs.TagString, quickjs.TagStringRope, quickjs.TagSymbol, quickjs.TagBigInt:
		return pointerIn(v, size)
	}
	return false
}

func pointerIn(v uint64, size uint32) bool {
	p := uint32(v)
	return p >= 8 && p < size && p%4 == 0
}

// PendingCall is a call of a suspended run as the durable layer sees it.
type PendingCall struct {
	ID      string
	Op      string
	Payload []byte
	Label   string
	Owner   string // the process running it
}

// Remote lists the calls running on other processes (imported, not yet delivered). Call it only
// between drives.
func (r *Run) Remote() []PendingCall {
	var out []PendingCall
	for _, c := range r.calls {
		if c.owner != "" && !c.settled {
			out = append(out, PendingCall{ID: r.callID(c.id), Op: c.op, Payload: c.payload, Label: c.label, Owner: c.owner})
		}
	}
	slices.SortFunc(out, func(a, b PendingCall) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Withdrawn lists the calls waiting, as data, for a decision (see Export). Call it only between
// drives.
func (r *Run) Withdrawn() []api.ApprovalRequest {
	var out []api.ApprovalRequest
	for _, c := range r.queue {
		if c.approval != nil {
			out = append(out, *c.approval)
		}
	}
	return out
}

// HasQueued reports whether calls wait to start here (queued, withdrawn or reissued). Call it only
// between drives.
func (r *Run) HasQueued() bool { return len(r.queue) > 0 }

// callNumber parses "<prefix>/<n>".
func (r *Run) callNumber(id string) (int64, bool) {
	rest, ok := strings.CutPrefix(id, r.idPrefix+"/")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil && n > 0 && strconv.FormatInt(n, 10) == rest
}

// Deliver settles a call with a result obtained elsewhere (a run store). It is safe from any
// goroutine; a result for an unknown or already settled call is ignored when delivered. It
// reports whether id names a call of this run.
func (r *Run) Deliver(id string, res CallResult) bool {
	n, ok := r.callNumber(id)
	if !ok {
		return false
	}
	c := completion{id: n, result: res.Value, noForward: true} // it came from elsewhere
	if res.Error != nil {
		c.err = res.Error
	} else if len(c.result) == 0 {
		c.result = []byte("null")
	}
	r.push(c)
	return true
}

// Reissue moves a call that was running on another (dead) process here: it starts again when the
// run is driven or StartPending runs. Only for replay-safe calls. Call it only between drives.
func (r *Run) Reissue(id string) bool {
	n, ok := r.callNumber(id)
	if !ok {
		return false
	}
	c := r.calls[n]
	if c == nil || c.settled || c.owner == "" {
		return false
	}
	r.reissueLocked(c)
	return true
}

// reissueLocked queues a remote call to start here. VM-goroutine state.
func (r *Run) reissueLocked(c *call) {
	if c.owner == "" {
		return
	}
	c.owner = ""
	r.remote--
	c.host = &Call{ID: r.callID(c.id), Op: c.op, Payload: c.payload, run: r, n: c.id}
	r.queue = append(r.queue, c)
}

// ReissueLater is Reissue from any goroutine, while a driver may run: the call starts here when
// the run is driven next (a wait already running makes the run ready to do so).
func (r *Run) ReissueLater(id string) bool {
	n, ok := r.callNumber(id)
	if ok {
		r.push(completion{id: n, reissue: true, noForward: true})
	}
	return ok
}

// StartPending starts queued calls while concurrency slots are free, without a VM (a wait that
// must make progress before anything is ready). Call it only between drives.
func (r *Run) StartPending() { r.startQueued() }

// Changed is signalled when something happened to the run's calls (a completion, a decision
// awaited). Between drives only one waiter may use it.
func (r *Run) Changed() <-chan struct{} { return r.notify }

// Running is the number of calls running here (goroutines of this run): while it is not zero, a
// suspended run's process must stay its calls' owner.
func (r *Run) Running() int { return r.runningCalls() }

// DropVM frees a suspended run's VM and snapshot but keeps its calls running: a run that will
// never be resumed here (another process continues it) but whose calls' results are still wanted.
func (r *Run) DropVM() {
	r.vmMu.Lock()
	r.dropVMLocked()
	r.snapshot = nil
	r.vmMu.Unlock()
}
