package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/dispatch"
	"github.com/codemode-go/codemode/internal/progress"
	"github.com/codemode-go/codemode/internal/relay"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/sandbox"
	"github.com/codemode-go/codemode/internal/swarm"
)

// Surface is what the lifecycle needs of the surface a run is driven under (the root package's
// Surface): its scope, its tool set, its limits and how it rebuilds a run.
type Surface interface {
	// Scope is the run context runs are stored under and checked against.
	Scope() api.RunContext
	// Fingerprint identifies the surface's tool set: a run resumes only under the same one.
	Fingerprint() string
	// Limits are the sandbox limits of one drive of a run, admission control included.
	Limits(restartSafe bool) sandbox.Limits
	// Import rebuilds a run on this process from its state: a new dispatcher for its calls (with
	// the surface's namespace scopes built when namespaces is true), which check vets before the
	// VM is made from the surface's template.
	Import(ctx context.Context, st sandbox.State, namespaces bool, check func(*dispatch.Dispatcher) error) (*sandbox.Run, *dispatch.Dispatcher, error)
}

// Results of Suspend and Wait carry no Telemetry: the surface adds its own.

// failed is a failed result.
func failed(code api.ErrorCode, msg string) api.ExecResult {
	return api.ExecResult{Status: api.StatusFailed, Code: code, Error: msg}
}

// Busy is the result of a wait on a run another wait holds (W3): not a failure of the run — it
// carries the runId and when to retry (the other wait's end, or its lease running out when its
// replica died). err is the store's runstore.ErrBusy.
func Busy(runID string, err error) api.ExecResult {
	res := failed(api.CodeBusy, err.Error()+" Retry the same wait after retryAfterMs.")
	res.RunID = runID
	res.RetryAfterMs = max(runstore.RetryAfter(err).Milliseconds(), 1)
	return res
}

// publish writes a suspended run's record — a new run (lease nil) or the next version of one
// this wait holds — and makes it this process's current run. It is synchronous: `waiting` is
// returned only once the record is stored.
func (d *Runs) publish(ctx context.Context, s Surface, e *durableEntry, dr *durableRun, lease *runstore.Lease, consumed []string) error {
	st, err := dr.run.Export()
	if err != nil {
		return err
	}
	rs, err := st.Marshal()
	if err != nil {
		return err
	}
	fingerprint := s.Fingerprint()
	env := recordState{V: recordVersion, Version: newVersion(), Fingerprint: fingerprint, Namespaces: dr.layout, Run: rs}
	if g := dr.disp.Swarm; g != nil {
		env.Swarm = g.Export()
	}
	b, err := json.Marshal(env)
	if err != nil {
		return err
	}
	rec := runstore.Record{Scope: s.Scope(), Snapshot: st.Snapshot, State: b, Version: env.Version}
	ctx = context.WithoutCancel(ctx)
	if lease == nil {
		err = d.store.Put(ctx, e.id, rec, d.ttl)
	} else {
		err = d.store.Release(ctx, *lease, &rec, consumed, d.ttl)
	}
	d.noteStore(err)
	if err != nil {
		return err
	}
	dr.version, dr.fingerprint = env.Version, fingerprint
	e.setCurrent(dr)
	if dr.run.Running() > 0 {
		// Before `waiting` goes out: a wait elsewhere must find this process alive.
		if err := e.heartbeat(); err != nil {
			d.log.Warn("run store: heartbeat failed", "run", e.id, "err", err)
		}
	}
	e.flush()
	return nil
}

// Suspend stores the run an exec suspended (out is waiting; the first record of the run) and
// returns the exec's result: waiting with the new runId, or failed when the record could not be
// stored (the run is closed then, and the message names the calls that already ran).
func (d *Runs) Suspend(ctx context.Context, s Surface, run *sandbox.Run, disp *dispatch.Dispatcher, out sandbox.Outcome, restartSafe bool) api.ExecResult {
	res := out.ExecResult
	id := runstore.NewID()
	disp.RunID = id
	e := d.entry(id, s.Scope())
	run.SetResultSink(e.sink)
	if g := disp.Swarm; g != nil {
		g.SetCheckpointSink(e.saveCheckpoint) // children keep their progress with the run
	}
	dr := &durableRun{run: run, disp: disp, restartSafe: restartSafe, layout: nsLayout(disp)}
	if err := d.publish(ctx, s, e, dr, nil, nil); err != nil {
		d.drop(e)
		run.Close()
		code, msg := suspendFailure(err, "cannot store the suspended run")
		msg += callsThatRan(out.Delivered, res.PendingToolCalls)
		return api.ExecResult{Status: api.StatusFailed, Code: code, Error: msg, Output: out.Output}
	}
	res.RunID, res.RestartSafe = id, restartSafe
	return res
}

// Refuses says why an exec must fail before it runs ("" when it may run): the shared store
// refuses writes (full, read-only, unreachable, as the last write or a probe said), so a cell
// that suspended could not be saved, and failing after its tool calls ran would hide that they
// did (issue 20 item 4). The exec fails with code run_store_error and this message.
func (d *Runs) Refuses(ctx context.Context) string {
	kind, msg := d.refusing(ctx)
	if kind == "" {
		return ""
	}
	return "the shared run store refuses writes (" + kind + "): " + msg +
		"; nothing ran — retry when the store accepts writes again"
}

// callsThatRan says, in a failed result, which nested calls of the cell already ran (their
// effects happened) and which were still running and are cancelled now.
func callsThatRan(delivered []string, pending []api.PendingToolCall) string {
	var b strings.Builder
	if len(delivered) > 0 {
		fmt.Fprintf(&b, "; %d nested call(s) had already completed, and their effects happened: %s", len(delivered), strings.Join(capList(delivered, 20), ", "))
	}
	names := make([]string, 0, len(pending))
	for _, p := range pending {
		if p.Tool != "yield_control" { // a yield is not a call
			names = append(names, p.Tool+" ("+p.ID+")")
		}
	}
	if len(names) > 0 {
		fmt.Fprintf(&b, "; %d were still running and were cancelled (they may have had effects): %s", len(names), strings.Join(capList(names, 20), ", "))
	}
	return b.String()
}

func capList(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	return append(xs[:n:n], fmt.Sprintf("… %d more", len(xs)-n))
}

// suspendFailure maps the failure to store a suspended run.
func suspendFailure(err error, what string) (api.ErrorCode, string) {
	if sl, ok := err.(*sandbox.SnapshotLimitError); ok {
		return api.CodeSnapshotLimit, sl.Error()
	}
	if err == runstore.ErrRecordTooLarge {
		return api.CodeSnapshotLimit, err.Error()
	}
	code, msg := storeFailure(err, what)
	if code == api.CodeRunStore {
		msg += "; its pending calls were cancelled"
	}
	return code, msg
}

// Wait continues a run from the shared store (W1–W7 fleet-wide): one wait at a time holds its
// lease; results other processes wrote are delivered; calls whose process died are reissued
// (replay-safe) or fail into the cell (lost_on_replica). start is when the wait began (its
// timeout counts from it); delivered are the nested calls whose results this wait delivered.
func (d *Runs) Wait(ctx context.Context, s Surface, runID string, start time.Time) (res api.ExecResult, delivered []string) {
	scope := s.Scope()
	fail := func(code api.ErrorCode, msg string) (api.ExecResult, []string) { return failed(code, msg), nil }
	// A process holding the current version's live VM asks for the record only if it changed.
	have := ""
	if e := d.lookup(runID); e != nil {
		have = e.currentVersion()
	}
	rec, lease, err := d.store.Acquire(ctx, runID, scope, d.owner, d.lease, have)
	var e *durableEntry
	var dr *durableRun
	if err == nil && rec.Unchanged {
		e = d.entry(runID, scope)
		if dr = e.takeCurrent(rec.Version); dr == nil {
			// Let go of in the meantime (its expiry): read the record after all.
			e.release()
			d.releaseLease(ctx, lease)
			rec, lease, err = d.store.Acquire(ctx, runID, scope, d.owner, d.lease, "")
		}
	}
	if err != nil {
		if errors.Is(err, runstore.ErrBusy) {
			d.busy.Add(1)
			return Busy(runID, err), nil
		}
		d.noteStore(err)
		return fail(storeFailure(err, "cannot take the suspended run"))
	}
	bg := context.WithoutCancel(ctx)
	stopRenew := d.renew(bg, lease)
	defer stopRenew()
	keep := func() { // end this wait leaving the record as it is
		stopRenew()
		c, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		if err := d.store.Release(c, lease, nil, nil, d.ttl); err != nil {
			d.log.Warn("run store: release failed", "run", runID, "err", err)
		}
	}
	var env recordState
	var st sandbox.State
	if dr != nil {
		env = recordState{V: recordVersion, Version: rec.Version, Fingerprint: dr.fingerprint, Namespaces: dr.layout}
		st.RestartSafe = dr.restartSafe
	} else if err := json.Unmarshal(rec.State, &env); err != nil || env.V != recordVersion {
		keep()
		return fail(api.CodeRunStore, "code mode run record cannot be read by this process (a different codemode version wrote it, or it is corrupt)")
	}
	if env.Fingerprint != s.Fingerprint() {
		if e != nil {
			e.park(dr)
		}
		keep()
		return fail(api.CodeInvalidInput, "code mode run belongs to a different tool set: this gateway's tools differ from those of the exec that started it (another configuration, or MCP servers still connecting); retry on a replica with the same tools")
	}
	results, err := d.store.Results(ctx, lease)
	if err != nil {
		if e != nil {
			e.park(dr)
		}
		keep()
		return fail(storeFailure(err, "cannot read the run's results"))
	}
	if dr == nil {
		if st, err = sandbox.UnmarshalState(env.Run); err != nil {
			keep()
			return fail(api.CodeRunStore, "code mode run record cannot be imported: "+err.Error())
		}
	}
	if mk, ok := results[markerKey]; ok {
		var m marker
		_ = json.Unmarshal(mk, &m)
		if m.Version == env.Version && !st.RestartSafe && !m.ReplaySafeOnly {
			// A wait made progress from this record and never saved it: replaying would repeat
			// whatever it did (RATIONALE). The run is over.
			stopRenew()
			_ = d.store.Delete(bg, lease)
			d.cancelLocal(runID)
			return fail(api.CodeInvalidInput, "code mode run was interrupted: the wait that last continued it stopped (its replica died or lost the run store) before saving its progress, so calls it made may or may not have run; start over with exec")
		}
		if m.Version == env.Version {
			d.takeovers.Add(1) // a dead wait's run, resumed from its last record
		}
	}

	if e == nil {
		e = d.entry(runID, scope)
		dr = e.takeCurrent(env.Version)
	}
	if dr == nil {
		if dr, err = importRun(ctx, s, runID, env, st, rec.Snapshot); err != nil {
			e.release()
			keep()
			code, msg := storeFailure(err, "")
			if code == api.CodeInternal {
				code, msg = api.CodeRunStore, "code mode run record cannot be imported: "+err.Error()
			}
			return fail(code, msg)
		}
		dr.fingerprint = env.Fingerprint
		dr.run.SetResultSink(e.sink)
		if g := dr.disp.Swarm; g != nil {
			g.SetCheckpointSink(e.saveCheckpoint)
		}
	}
	run, disp := dr.run, dr.disp

	// Results and decisions stored so far, then the calls whose process is gone.
	w := &durableWait{d: d, scope: scope, lease: lease, run: run, disp: disp, version: env.Version, alive: map[string]bool{}}
	w.apply(results, true)
	for _, req := range run.Withdrawn() {
		disp.Carry(req.CallID, req.Expires, w.decisions[req.CallID])
	}
	if err := w.checkOwners(ctx, true); err != nil {
		return d.endWaitFailed(e, dr, w, err, "cannot check the run's calls"), nil
	}
	if run.HasQueued() {
		if err := w.mark(ctx, false); err != nil {
			return d.endWaitFailed(e, dr, w, err, "cannot continue the run"), nil
		}
		run.StartPending()
	}

	lim := s.Limits(dr.restartSafe)
	lim.Timeout = max(time.Until(start.Add(lim.Timeout)), time.Millisecond)
	admit := lim.Admit
	var markErr error
	lim.Admit = func(ctx context.Context) (sandbox.Slot, error) {
		slot := sandbox.ReleaseSlot(func() {})
		if admit != nil {
			s, err := admit(ctx)
			if err != nil {
				return nil, err
			}
			slot = s
		}
		if err := w.mark(ctx, false); err != nil {
			slot.Release()
			markErr = err
			return nil, err
		}
		return slot, nil
	}
	disp.SetProgress(progress.From(ctx))
	disp.SetClient(relay.From(ctx))
	defer disp.SetProgress(nil)
	defer flushNotes(disp)
	w.remote = run.Remote()
	stop := w.poll(ctx)
	out := run.Resume(ctx, lim)
	stop()
	res, delivered = out.ExecResult, out.Delivered
	switch {
	case markErr != nil:
		return d.endWaitFailed(e, dr, w, markErr, "cannot continue the run"), delivered
	case !w.marked && (res.Status == api.StatusWaiting || res.Status == api.StatusFailed && res.Code == api.CodeOverloaded):
		// Nothing changed (nothing settled in time, or no slot to run the VM): the record stays
		// as it was, results and decisions included.
		keep()
		e.park(dr)
		if res.Status == api.StatusWaiting {
			res.RunID, res.RestartSafe = runID, dr.restartSafe
		}
		return res, delivered
	case res.Status == api.StatusWaiting || res.Status == api.StatusFailed && res.Code == api.CodeOverloaded:
		if err := d.publish(ctx, s, e, dr, &lease, w.consumedKeys()); err != nil {
			code, msg := suspendFailure(err, "cannot store the run's progress")
			d.drop(e)
			dr.run.Close()
			_ = d.store.Delete(bg, lease)
			return api.ExecResult{Status: api.StatusFailed, Code: code, Error: msg, Output: res.Output}, delivered
		}
		res.RunID, res.RestartSafe = runID, dr.restartSafe
		return res, delivered
	}
	// Terminal (W4): the record, its results and this process's hold on the run are gone.
	if err := d.store.Delete(bg, lease); err != nil {
		d.log.Warn("run store: cannot delete a finished run", "run", runID, "err", err)
	}
	e.mu.Lock()
	e.current, e.busy = nil, false
	e.mu.Unlock()
	dr.run.Close()
	d.drop(e)
	if res.Status != api.StatusCompleted {
		res.Status = api.StatusFailed
	}
	return res, delivered
}

// endWaitFailed fails a wait that could not go on. Before it changed anything the record stays
// (the lease is released); after (the marker is written) the run is lost and the record goes.
func (d *Runs) endWaitFailed(e *durableEntry, dr *durableRun, w *durableWait, err error, what string) api.ExecResult {
	code, msg := storeFailure(err, what)
	c, cancel := storeCtx()
	defer cancel()
	if w.marked {
		_ = d.store.Delete(c, w.lease)
		dr.run.Close()
		d.drop(e)
	} else {
		_ = d.store.Release(c, w.lease, nil, nil, d.ttl)
		e.park(dr)
	}
	return failed(code, msg)
}

// park gives a run back to the entry after a wait that left the record unchanged: it stays the
// current run only if it already was.
func (e *durableEntry) park(dr *durableRun) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.busy = false
	if e.current != dr {
		e.addCarrierLocked(dr.run)
	}
}

// importRun rebuilds a run from its record on this process.
func importRun(ctx context.Context, s Surface, id string, env recordState, st sandbox.State, snapshot []byte) (*durableRun, error) {
	st.Snapshot = snapshot
	run, disp, err := s.Import(ctx, st, len(env.Namespaces) > 0, func(disp *dispatch.Dispatcher) error {
		disp.RunID = id
		if g := disp.Swarm; g != nil {
			g.Import(env.Swarm) // the children it started so far (Surface.Import attached the group)
		}
		if len(env.Namespaces) > 0 {
			return sameLayout(env.Namespaces, nsLayout(disp))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &durableRun{run: run, disp: disp, restartSafe: st.RestartSafe, layout: env.Namespaces}, nil
}

// durableWait is one wait's view of the run's stored results.
type durableWait struct {
	d       *Runs
	scope   api.RunContext
	lease   runstore.Lease
	run     *sandbox.Run
	disp    *dispatch.Dispatcher
	version string
	marked  bool // a marker is stored
	// markedFull: the marker says this wait ran the VM or started calls not known to be
	// replay-safe; tookOver: it found calls of a stopped replica.
	markedFull, tookOver bool

	mu        sync.Mutex
	consumed  map[string]bool
	decisions map[string]*api.Decision
	alive     map[string]bool // owners known alive during this wait
	lost      map[string]bool // calls already failed or reissued
	remote    []sandbox.PendingCall
}

// apply delivers stored results into the run and collects decisions. A key this wait handled
// is deleted from the store with the next record.
func (w *durableWait) apply(results map[string][]byte, first bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.consumed == nil {
		w.consumed, w.decisions, w.lost = map[string]bool{}, map[string]*api.Decision{}, map[string]bool{}
	}
	for key, val := range results {
		if w.consumed[key] {
			continue
		}
		switch {
		case key == markerKey:
			w.consumed[key] = true // an old marker (restartSafe run, or another version)
		case isCheckpoint(key):
			// A child agent's checkpoint: kept while its call runs, in case it must continue
			// here; dropped with the call's result.
			callID, _ := swarm.JournalCall(key)
			if _, ended := results[callID]; ended {
				w.consumed[key] = true
			} else if g := w.disp.Swarm; g != nil {
				g.Resume(callID, val)
			}
		case strings.HasSuffix(key, decisionSuffix):
			callID := strings.TrimSuffix(key, decisionSuffix)
			var dec api.Decision
			if json.Unmarshal(val, &dec) != nil {
				w.consumed[key] = true
				continue
			}
			if w.disp.Waiting(callID) {
				_ = w.disp.Decide(callID, dec)
				w.consumed[key] = true
			} else if first {
				w.decisions[callID] = &dec
				w.consumed[key] = true
			}
		default:
			var res sandbox.CallResult
			if json.Unmarshal(val, &res) != nil || (res.Error == nil && len(res.Value) == 0) {
				res = sandbox.CallResult{Error: &api.ToolError{Name: "Error", Code: "invalid_result", Message: "the stored result of this call is corrupt"}}
			}
			w.run.Deliver(key, res) // unknown or settled calls are ignored
			w.consumed[key] = true
		}
	}
}

func (w *durableWait) consumedKeys() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.consumed))
	for k := range w.consumed {
		out = append(out, k)
	}
	return out
}

// checkOwners settles the remote calls whose process is gone: replay-safe ones are issued again
// here (only before the VM runs, reissue is true), the others fail into the cell.
func (w *durableWait) checkOwners(ctx context.Context, reissue bool) error {
	d := w.d
	for _, c := range w.run.Remote() {
		w.mu.Lock()
		done := w.lost[c.ID] || w.consumed[c.ID]
		alive, known := w.alive[c.Owner]
		w.mu.Unlock()
		if done {
			continue
		}
		if c.Owner == d.owner {
			continue // a call of an older run of this process: its result is on its way
		}
		if !known {
			ok, err := d.store.OwnerAlive(ctx, w.lease.RunID, c.Owner)
			if err != nil {
				return err
			}
			alive = ok
			if ok {
				w.mu.Lock()
				w.alive[c.Owner] = true
				w.mu.Unlock()
			}
		}
		if alive {
			continue
		}
		w.mu.Lock()
		w.lost[c.ID] = true
		w.mu.Unlock()
		if !w.tookOver {
			w.tookOver = true
			d.takeovers.Add(1) // calls of a stopped replica: this wait takes them over
		}
		if reissue && w.disp.ReplaySafe(c.Op, c.Payload) {
			// Marked "replay-safe only": if this wait dies too, the next one reissues again.
			if err := w.mark(ctx, true); err != nil {
				return err
			}
			w.run.Reissue(c.ID)
			d.reissued.Add(1)
			continue
		}
		d.lost.Add(1)
		w.run.Deliver(c.ID, sandbox.CallResult{Error: lostError(c)})
	}
	return nil
}

// mark writes the marker of a wait about to change the run (start calls, run the VM), once — or
// twice, when a wait that only reissued replay-safe calls goes on to run the VM. A marker that
// says replaySafeOnly lets the next wait replay the record if this one dies: all it did was
// start calls that are safe to repeat (issue 20 item 3).
func (w *durableWait) mark(ctx context.Context, replaySafeOnly bool) error {
	w.mu.Lock()
	if w.marked && (w.markedFull || replaySafeOnly) {
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	d := w.d
	b, _ := json.Marshal(marker{Version: w.version, Holder: d.owner, ReplaySafeOnly: replaySafeOnly})
	err := d.store.AddResult(context.WithoutCancel(ctx), w.lease.RunID, w.scope, markerKey, b)
	d.noteStore(err)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.marked = true
	w.markedFull = !replaySafeOnly
	w.consumed[markerKey] = true
	w.mu.Unlock()
	return nil
}

// poll reads the store while the wait runs: results of calls running elsewhere, decisions, and
// owners that went silent (their non-replay-safe calls fail into the cell). It returns the
// function that stops it.
func (w *durableWait) poll(ctx context.Context) (stop func()) {
	d := w.d
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		every := pollFirst
		t := time.NewTimer(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if res, err := d.store.Results(ctx, w.lease); err == nil {
				w.apply(res, false)
			}
			w.mu.Lock()
			clear(w.alive) // owners can die while we wait
			w.mu.Unlock()
			_ = w.checkOwnersConcurrent(ctx)
			every = min(every*3/2, pollMax)
			t.Reset(every)
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// checkOwnersConcurrent is checkOwners while the VM may run: it uses the calls listed before
// the drive (Remote is not safe to read now), fails the lost ones into the cell and never
// reissues (the next wait does, before its VM runs).
func (w *durableWait) checkOwnersConcurrent(ctx context.Context) error {
	w.mu.Lock()
	remote := w.remote
	w.mu.Unlock()
	if remote == nil {
		return nil
	}
	d := w.d
	owners := map[string]bool{}
	for _, c := range remote {
		if c.Owner == d.owner {
			continue
		}
		if _, ok := owners[c.Owner]; !ok {
			alive, err := d.store.OwnerAlive(ctx, w.lease.RunID, c.Owner)
			if err != nil {
				return err
			}
			owners[c.Owner] = alive
		}
		if owners[c.Owner] {
			continue
		}
		if w.disp.ReplaySafe(c.Op, c.Payload) {
			// Left for the next wait, which reissues it before its VM runs and records that in
			// the run's next version: a reissue here, while the VM may run, could miss the
			// record this wait writes and be reissued again by the next (issue 20 item 3: a
			// replay-safe call of a dead replica is reissued exactly once).
			continue
		}
		w.mu.Lock()
		skip := w.lost[c.ID] || w.consumed[c.ID]
		w.lost[c.ID] = true
		w.mu.Unlock()
		switch {
		case skip:
		default:
			d.lost.Add(1)
			w.run.Deliver(c.ID, sandbox.CallResult{Error: lostError(c)})
		}
	}
	return nil
}

// Decide records a decision for a call of a suspended run (Surface.Decide under a shared
// store): the decision is data in the store, applied by the next wait on
// any process (see RATIONALE). It is checked against the record (the call waits for a decision,
// was not decided yet, has not expired) unless a wait holds the run right now, which then
// applies it if the call still waits.
func (d *Runs) Decide(ctx context.Context, scope api.RunContext, runID, callID string, dec api.Decision) error {
	key := callID + decisionSuffix
	if err := runstore.CheckName(key); err != nil || !strings.Contains(callID, "/") {
		return fmt.Errorf("%w (%q)", dispatch.ErrNoSuchApproval, callID)
	}
	if dec.By == "" {
		dec.By = "library"
	}
	b, _ := json.Marshal(dec)
	rec, lease, err := d.store.Acquire(ctx, runID, scope, d.owner+"/decide", 10*time.Second, "")
	if errors.Is(err, runstore.ErrBusy) {
		return d.store.AddResult(ctx, runID, scope, key, b)
	}
	if err != nil {
		return err
	}
	defer func() {
		c, cancel := storeCtx()
		defer cancel()
		_ = d.store.Release(c, lease, nil, nil, d.ttl)
	}()
	var env recordState
	if err := json.Unmarshal(rec.State, &env); err != nil {
		return err
	}
	st, err := sandbox.UnmarshalState(env.Run)
	if err != nil {
		return err
	}
	var req *api.ApprovalRequest
	for _, c := range st.Calls {
		if c.Status == sandbox.CallAwaiting && c.Approval != nil && c.Approval.CallID == callID {
			req = c.Approval
		}
	}
	results, err := d.store.Results(ctx, lease)
	if err != nil {
		return err
	}
	if prev, ok := results[key]; ok {
		var p api.Decision
		_ = json.Unmarshal(prev, &p)
		state := map[bool]string{true: "approved", false: "rejected"}[p.Approve]
		return fmt.Errorf("%s was already %s: decisions are one-shot", callID, state)
	}
	switch {
	case req == nil:
		return fmt.Errorf("%w (%q)", dispatch.ErrNoSuchApproval, callID)
	case time.Now().After(req.Expires):
		return fmt.Errorf("the approval request for %s expired: it was rejected", callID)
	}
	return d.store.AddResult(ctx, runID, scope, key, b)
}

// flushNotes sends what the run's child agents noted to the progress sink of the wait that drove
// them (as the root package's exec does after a drive).
func flushNotes(disp *dispatch.Dispatcher) {
	if g := disp.Swarm; g != nil && disp.Reporting() {
		g.FlushNotes()
	}
}

// isCheckpoint reports whether a stored result is a child agent's checkpoint.
func isCheckpoint(key string) bool {
	_, ok := swarm.JournalCall(key)
	return ok
}
