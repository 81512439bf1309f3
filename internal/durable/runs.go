// Package durable is the suspended-run lifecycle on a shared, durable run store
// (Options.RunStore, runStore.redis): what one gateway process holds of the fleet's suspended
// runs — their live VMs, the calls they still run here and those calls' results — the records it
// writes, the leases of its waits and their renewals, the heartbeats that tell other replicas its
// calls are alive, the takeover of a dead replica's runs, and the drain of a graceful stop. See
// RATIONALE.md, "Why is a suspended run resumable on any replica".
//
// The root package's Surface drives it through Runs: Suspend stores the run an exec suspended,
// Wait continues one, Decide records a decision; the Surface gives what only it knows through
// the Surface interface (its scope, tool set, limits and how to rebuild a run).
package durable

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/dispatch"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/sandbox"
)

// This file holds the process's side of the store: the record format, the runs this process
// holds (their VMs and the calls they still run), heartbeats and the results those calls write
// back. wait.go drives runs: suspend, wait, decide.

// Timing of the durable layer. Heartbeats and lease renewals follow the store's Takeover
// (runStore.redis.takeoverMs): a holder renews five times per takeover, so one or two lost
// renewals do not lose a live run, and a dead holder frees its runs one takeover later.
var (
	// pollFirst and pollMax pace a wait that waits for results other processes write.
	pollFirst = 10 * time.Millisecond
	pollMax   = 200 * time.Millisecond
)

// renewsPerTakeover is how many times per takeover a holder renews.
const renewsPerTakeover = 5

// recordVersion is the version of the record envelope below.
const recordVersion = 1

// Keys in a run's stored results besides call results ("<prefix>/<n>"): a decision for a
// withdrawn call is "<call id>#d", and the marker of a wait that made progress is "#drive".
// A call id always ends in "/<digits>", so neither can collide with one.
const (
	decisionSuffix = "#d"
	markerKey      = "#drive"
)

// maxDurableCallID bounds the exec call id used as the call-id prefix: call ids become keys.
const maxDurableCallID = 128

// recordState is a record's State: the sandbox state wrapped with what the runtime checks before
// importing it.
type recordState struct {
	V int `json:"v"`
	// Version is random per write: a process whose live VM has this version continues it.
	Version string `json:"version"`
	// Fingerprint identifies the tool set (definitions) the run's catalog was built from.
	Fingerprint string `json:"fingerprint"`
	// Namespaces is the layout of the run's namespaces: the guest holds functions that call
	// back by namespace id and callable index.
	Namespaces map[string]string `json:"namespaces,omitempty"`
	Run        json.RawMessage   `json:"run"`
	// Swarm is the run's group of child agents (what it started so far), when it has one.
	Swarm json.RawMessage `json:"swarm,omitempty"`
}

// marker is the value of markerKey.
type marker struct {
	Version string `json:"version"`
	Holder  string `json:"holder"`
	// ReplaySafeOnly: the wait only reissued replay-safe calls of a stopped replica (it did not
	// run the VM): replaying the record repeats nothing unsafe.
	ReplaySafeOnly bool `json:"replaySafeOnly,omitempty"`
}

// Runs is a runtime's side of a shared run store. Its methods are safe for concurrent use.
type Runs struct {
	store   runstore.Durable
	owner   string
	log     *slog.Logger
	ttl     time.Duration // snapshotTtlSeconds
	lease   time.Duration // the store's takeover: a wait's hold, renewed while it runs
	beat    time.Duration // heartbeat and renewal period
	beatTTL time.Duration // how long a heartbeat is believed

	// Counters for metrics (Runtime.Stats).
	takeovers, reissued, lost, busy, storeFailures atomic.Uint64
	// probed is when exec last probed the store (unix ns).
	probed atomic.Int64

	mu      sync.Mutex
	entries map[string]*durableEntry
	closed  bool
	stop    chan struct{}
	done    chan struct{}
	started bool
}

// durableEntry is what this process holds of one run: the VM it last wrote (current), older
// runs whose calls still run here (carriers), and results not yet written to the store.
type durableEntry struct {
	d     *Runs
	id    string
	scope api.RunContext

	mu        sync.Mutex
	current   *durableRun
	carriers  []*sandbox.Run
	outbox    []pendingResult
	published bool // the record exists: results can be written
	flushing  bool
	busy      bool // a wait of this process uses current
	expire    *time.Timer
}

// durableRun is a run this process can drive.
type durableRun struct {
	run         *sandbox.Run
	disp        *dispatch.Dispatcher
	version     string
	fingerprint string // the tool set it was built from (the surface's catalog key)
	restartSafe bool
	layout      map[string]string
}

type pendingResult struct {
	callID string
	data   []byte
}

// New returns the process's side of store. ttl is how long a suspended run lives
// (snapshotTtlSeconds); heartbeats and lease renewals follow the store's Takeover.
func New(store runstore.Durable, log *slog.Logger, ttl time.Duration) *Runs {
	var b [6]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	if len(host) > 64 {
		host = host[:64]
	}
	owner := fmt.Sprintf("%s:%d:%s", host, os.Getpid(), base64.RawURLEncoding.EncodeToString(b[:]))
	lease := store.Takeover()
	if lease <= 0 {
		lease = runstore.DefaultTakeover
	}
	return &Runs{store: store, owner: owner, log: log, ttl: ttl, lease: lease,
		beat: max(lease/renewsPerTakeover, 10*time.Millisecond), beatTTL: lease,
		entries: map[string]*durableEntry{}}
}

// renew keeps a wait's lease while it runs (every beat), so the lease can be short: a wait on a
// replica that dies frees the run one takeover after its last renewal. It returns the function
// that stops it (idempotent).
func (d *Runs) renew(ctx context.Context, l runstore.Lease) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(d.beat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			c, cancel := context.WithTimeout(ctx, d.lease)
			err := d.store.Renew(c, l, d.lease)
			cancel()
			if err != nil && !runstore.IsStoreError(err) {
				return // lost, cancelled or gone: the wait learns it when it writes
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done); <-finished })
	}
}

// releaseLease ends a hold without changing the record.
func (d *Runs) releaseLease(ctx context.Context, l runstore.Lease) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = d.store.Release(c, l, nil, nil, d.ttl)
}

// noteStore counts a failed write to the store (metrics).
func (d *Runs) noteStore(err error) {
	if runstore.IsStoreError(err) {
		d.storeFailures.Add(1)
	}
}

// refusing reports why the store refuses writes right now ("" when it does not): exec checks it
// before running a cell that may suspend, so that it fails before its tool calls run, not after.
// It is the store's own record of its last write or probe (a readiness probe counts), and when
// that says nothing, one probe per takeover.
func (d *Runs) refusing(ctx context.Context) (kind, msg string) {
	r, ok := d.store.(interface{ Refusing() (kind, msg string) })
	if !ok {
		return "", "" // an in-process store never refuses for lack of room: its limits say so
	}
	if kind, msg = r.Refusing(); kind != "" {
		return kind, msg
	}
	// Nothing refused lately: probe anyway once per takeover, so the first exec after Redis
	// filled up (with no write since, and no readiness probe) fails before it runs, not after.
	now := time.Now().UnixNano()
	last := d.probed.Load()
	if now-last < int64(d.lease) || !d.probed.CompareAndSwap(last, now) {
		return "", ""
	}
	if p, ok := d.store.(interface{ Ping(context.Context) error }); ok {
		c, cancel := context.WithTimeout(ctx, d.lease)
		_ = p.Ping(c)
		cancel()
	}
	return r.Refusing()
}

// storeCtx bounds a store call made on behalf of no request (results, heartbeats, cleanup).
func storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// entry returns the process's entry of a run, creating it, marked busy: the caller (an exec
// storing a new run, a wait holding the lease) owns it until setCurrent, park, release or drop.
func (d *Runs) entry(id string, scope api.RunContext) *durableEntry {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.entries[id]
	if e == nil {
		e = &durableEntry{d: d, id: id, scope: scope}
		d.entries[id] = e
	}
	e.mu.Lock()
	e.busy = true
	e.mu.Unlock()
	d.startLocked()
	return e
}

func (d *Runs) lookup(id string) *durableEntry {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.entries[id]
}

// drop forgets an entry and ends everything it holds (the run is over, or gone from the store).
func (d *Runs) drop(e *durableEntry) {
	d.mu.Lock()
	if d.entries[e.id] == e {
		delete(d.entries, e.id)
	}
	d.mu.Unlock()
	e.mu.Lock()
	cur, carriers := e.current, e.carriers
	e.current, e.carriers, e.outbox = nil, nil, nil
	if e.expire != nil {
		e.expire.Stop()
	}
	busy := e.busy
	e.mu.Unlock()
	if cur != nil && !busy {
		cur.run.Close()
	}
	for _, c := range carriers {
		c.Close()
	}
}

// startLocked starts the heartbeat loop on first use.
func (d *Runs) startLocked() {
	if d.started || d.closed {
		return
	}
	d.started = true
	d.stop, d.done = make(chan struct{}), make(chan struct{})
	go d.loop()
}

// loop heartbeats for the runs whose calls run here, retries results the store refused for a
// moment, and ends runs that are gone from the store.
func (d *Runs) loop() {
	defer close(d.done)
	t := time.NewTicker(d.beat)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
		d.mu.Lock()
		entries := make([]*durableEntry, 0, len(d.entries))
		for _, e := range d.entries {
			entries = append(entries, e)
		}
		d.mu.Unlock()
		for _, e := range entries {
			e.tick()
		}
		if n%renewsPerTakeover == 0 {
			d.reconcile(entries)
		}
	}
}

// reconcile lets go of live VMs whose run was continued elsewhere (the stored version is not
// theirs) or is gone: they can never be continued here, and they are not this replica's runs
// any more (codemode_suspended_runs counts the runs whose current version this replica holds).
// One pipelined read per takeover, for every idle VM this process holds.
func (d *Runs) reconcile(entries []*durableEntry) {
	vs, ok := d.store.(runstore.Versioner)
	if !ok {
		return
	}
	var ids []string
	for _, e := range entries {
		if e.currentVersion() != "" {
			ids = append(ids, e.id)
		}
	}
	if len(ids) == 0 {
		return
	}
	ctx, cancel := storeCtx()
	defer cancel()
	stored, err := vs.Versions(ctx, ids)
	if err != nil {
		return
	}
	for _, e := range entries {
		v, asked := stored[e.id]
		if !asked {
			continue
		}
		e.mu.Lock()
		if e.current != nil && !e.busy && e.current.version != v {
			cur := e.current
			e.current = nil
			e.addCarrierLocked(cur.run) // its calls, if any, still finish and write their results
		}
		e.mu.Unlock()
	}
}

// currentVersion is the version of the live VM this process holds for the run, "" for none
// (or while a wait uses it).
func (e *durableEntry) currentVersion() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.current == nil || e.busy {
		return ""
	}
	return e.current.version
}

// live reports whether the entry runs calls here or holds results to write.
func (e *durableEntry) live() (calls int, results int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	kept := e.carriers[:0]
	for _, c := range e.carriers {
		if n := c.Running(); n > 0 {
			calls += n
			kept = append(kept, c)
		} else {
			c.Close()
		}
	}
	e.carriers = kept
	if e.current != nil {
		// Busy too: a wait of this process driving the run holds its lease, but other replicas
		// still ask whether the calls' owner is alive as soon as that wait ends, and the wait
		// may last longer than a heartbeat is believed (issue 20: a replay-safe call reissued
		// twice, a running call settled as lost_on_replica). Running is safe while it drives.
		calls += e.current.run.Running()
	}
	return calls, len(e.outbox)
}

// tick is one heartbeat of an entry.
func (e *durableEntry) tick() {
	calls, results := e.live()
	if calls == 0 && results == 0 {
		e.mu.Lock()
		idle := e.current == nil && len(e.carriers) == 0 && !e.busy
		e.mu.Unlock()
		if idle {
			e.d.drop(e)
		}
		return
	}
	if calls > 0 {
		if err := e.heartbeat(); err != nil && !runstore.IsStoreError(err) {
			// The run is gone (cancelled, expired, finished elsewhere): its calls are useless.
			e.d.drop(e)
			return
		}
	}
	e.flush()
}

func (e *durableEntry) heartbeat() error {
	ctx, cancel := storeCtx()
	defer cancel()
	return e.d.store.Heartbeat(ctx, e.id, e.d.owner, e.d.beatTTL)
}

// sink receives the results of calls that complete here while the run is suspended.
func (e *durableEntry) sink(callID string, res sandbox.CallResult) {
	b, err := json.Marshal(res)
	if err != nil {
		return
	}
	e.mu.Lock()
	e.outbox = append(e.outbox, pendingResult{callID, b})
	ready := e.published
	e.mu.Unlock()
	if ready {
		e.flush()
	}
}

// saveCheckpoint queues a child agent's checkpoint for the store (swarm.Group's sink): like a
// result, written once the record exists; a newer checkpoint of the same child replaces one not
// yet written.
func (e *durableEntry) saveCheckpoint(key string, data []byte) {
	e.mu.Lock()
	queued := false
	for i := range e.outbox {
		if e.outbox[i].callID == key {
			e.outbox[i].data, queued = data, true
			break
		}
	}
	if !queued {
		e.outbox = append(e.outbox, pendingResult{key, data})
	}
	ready := e.published
	e.mu.Unlock()
	if ready {
		e.flush()
	}
}

// flush writes the outbox to the store. A result the store cannot take for good (too large)
// becomes an error result, so the resumer's cell learns why instead of waiting forever.
func (e *durableEntry) flush() {
	e.mu.Lock()
	if e.flushing || !e.published || len(e.outbox) == 0 {
		e.mu.Unlock()
		return
	}
	e.flushing = true
	items := e.outbox
	e.outbox = nil
	e.mu.Unlock()
	var retry []pendingResult
	gone := false
	for i, it := range items {
		ctx, cancel := storeCtx()
		err := e.d.store.AddResult(ctx, e.id, e.scope, it.callID, it.data)
		cancel()
		switch {
		case err == nil:
		case runstore.IsStoreError(err):
			retry = append(retry, items[i:]...)
		case errors.Is(err, runstore.ErrResultTooLarge):
			b, _ := json.Marshal(sandbox.CallResult{Error: &api.ToolError{Name: "RangeError", Code: "result_too_large",
				Message: fmt.Sprintf("the result (%d bytes) is larger than the shared run store allows", len(it.data))}})
			retry = append(retry, pendingResult{it.callID, b})
			continue
		case errors.Is(err, runstore.ErrUnavailable), errors.Is(err, runstore.ErrCancelled):
			gone = true
		default:
			e.d.log.Warn("run store refused a call result", "run", e.id, "call", it.callID, "err", err)
			continue
		}
		if gone || runstore.IsStoreError(err) {
			break
		}
	}
	e.mu.Lock()
	e.flushing = false
	if !gone {
		e.outbox = append(retry, e.outbox...)
	}
	e.mu.Unlock()
	if gone {
		e.d.drop(e)
	}
}

// setCurrent makes r the run this process continues when the record's version is v, and arms
// its expiry: after the ttl the record is gone too, so the VM's memory goes back.
func (e *durableEntry) setCurrent(r *durableRun) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.current, e.busy, e.published = r, false, true
	if e.expire != nil {
		e.expire.Stop()
	}
	e.expire = time.AfterFunc(e.d.ttl, func() {
		e.mu.Lock()
		if e.current == r && !e.busy {
			e.current = nil
			e.addCarrierLocked(r.run) // calls still running end on their own
		}
		e.mu.Unlock()
	})
}

// takeCurrent hands the wait of this process the live run when its version is the record's;
// otherwise the old run keeps only its calls (a carrier) and the wait imports the record.
func (e *durableEntry) takeCurrent(version string) *durableRun {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.busy = true
	cur := e.current
	if cur == nil {
		return nil
	}
	if cur.version == version {
		return cur
	}
	e.current = nil
	e.addCarrierLocked(cur.run)
	return nil
}

// addCarrierLocked keeps a run only for the calls it still runs here: its VM goes now.
func (e *durableEntry) addCarrierLocked(r *sandbox.Run) {
	if r.Running() == 0 {
		r.Close()
		return
	}
	r.DropVM()
	e.carriers = append(e.carriers, r)
}

// release ends a wait of this process on the entry without a new current run.
func (e *durableEntry) release() {
	e.mu.Lock()
	e.busy = false
	e.mu.Unlock()
}

// Close stops the heartbeat loop and ends every run this process holds: their calls die with
// the process, and other processes find their owner silent. The records stay in the store for
// the other processes.
func (d *Runs) Close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	started := d.started
	entries := make([]*durableEntry, 0, len(d.entries))
	for _, e := range d.entries {
		entries = append(entries, e)
	}
	d.mu.Unlock()
	if started {
		close(d.stop)
		<-d.done
	}
	for _, e := range entries {
		d.drop(e)
	}
}

// Stats is what a process's Runs counts (metrics).
type Stats struct {
	// Runs and Bytes are the runs whose latest VM this process holds, and their snapshots' bytes.
	Runs, Bytes int
	// Takeovers, Reissued, Lost, Busy and WriteFailures count, since the start, waits that took
	// over a stopped replica's run, replay-safe calls issued again, calls settled as
	// lost_on_replica, waits answered busy, and writes the store failed.
	Takeovers, Reissued, Lost, Busy, WriteFailures uint64
}

// Stats reports the runs this process holds and its counters.
func (d *Runs) Stats() Stats {
	runs, bytes := d.stats()
	return Stats{Runs: runs, Bytes: bytes, Takeovers: d.takeovers.Load(), Reissued: d.reissued.Load(),
		Lost: d.lost.Load(), Busy: d.busy.Load(), WriteFailures: d.storeFailures.Load()}
}

// Owner names this process in the store: the calls it runs belong to it (the engine's owner).
func (d *Runs) Owner() string { return d.owner }

// Store is the shared store.
func (d *Runs) Store() runstore.Durable { return d.store }

// Cancel drops a suspended run, here and in the store, cancelling the calls it runs here (W7).
// It reports whether the store had it.
func (d *Runs) Cancel(runID string) (bool, error) {
	d.cancelLocal(runID)
	ctx, cancel := storeCtx()
	defer cancel()
	return d.store.Cancel(ctx, runID)
}

// EndSession drops a session's suspended runs, here and in the store; it returns how many the
// store dropped.
func (d *Runs) EndSession(sessionKey string) (int, error) {
	d.cancelSessionLocal(sessionKey)
	ctx, cancel := storeCtx()
	defer cancel()
	return d.store.CancelSession(ctx, sessionKey)
}

// stats counts the runs this process holds a VM of, and their snapshots' bytes.
func (d *Runs) stats() (runs, bytes int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.entries {
		e.mu.Lock()
		if e.current != nil {
			runs++
			bytes += e.current.run.SnapshotBytes()
		}
		e.mu.Unlock()
	}
	return runs, bytes
}

// cancelLocal ends what this process holds of a run (its cancellation is the store's).
func (d *Runs) cancelLocal(id string) {
	if e := d.lookup(id); e != nil {
		d.drop(e)
	}
}

// cancelSessionLocal ends what this process holds of a session's runs.
func (d *Runs) cancelSessionLocal(sessionKey string) {
	d.mu.Lock()
	var drop []*durableEntry
	for _, e := range d.entries {
		if e.scope.SessionKey == sessionKey {
			drop = append(drop, e)
		}
	}
	d.mu.Unlock()
	for _, e := range drop {
		d.drop(e)
	}
}

func newVersion() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// nsLayout is the layout of a run's namespaces: per namespace id, a digest of its callables'
// paths and tools — what the guest's installed functions call back by index.
func nsLayout(disp *dispatch.Dispatcher) map[string]string {
	if len(disp.Namespaces) == 0 {
		return nil
	}
	out := make(map[string]string, len(disp.Namespaces))
	for id, sc := range disp.Namespaces {
		h := sha256.New()
		calls := make([]string, len(sc.Calls))
		for i, c := range sc.Calls {
			b, _ := json.Marshal([]any{c.Path, c.Tool})
			calls[i] = string(b)
		}
		b, _ := json.Marshal([]any{sc.PluginID, sc.GlobalName, calls})
		h.Write(b)
		out[id] = hex.EncodeToString(h.Sum(nil)[:16])
	}
	return out
}

// sameLayout reports whether the namespaces rebuilt here have the recorded layout.
func sameLayout(recorded, here map[string]string) error {
	ids := make([]string, 0, len(recorded))
	for id := range recorded {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if here[id] != recorded[id] {
			return fmt.Errorf("namespace %q differs on this replica (its plugin or configuration changed since the run started)", id)
		}
	}
	return nil
}

// Prefix is the call-id prefix of a cell under a shared store: the exec call id, or a digest
// of it when it is too long to be part of store keys.
func Prefix(callID string) string {
	if len(callID) <= maxDurableCallID && callID != "" && !strings.Contains(callID, "#") {
		return callID
	}
	sum := sha256.Sum256([]byte(callID))
	return "x-" + hex.EncodeToString(sum[:12])
}

// storeFailure maps a store error to a failed result's code and message.
func storeFailure(err error, what string) (api.ErrorCode, string) {
	var re runstore.Error
	switch {
	case runstore.IsStoreError(err):
		return api.CodeRunStore, what + ": " + err.Error() + " (the shared run store, runStore.redis; retry when it is reachable again)"
	case errors.Is(err, runstore.ErrTampered), errors.Is(err, runstore.ErrWrongKey):
		return api.CodeRunStore, err.Error()
	case errors.As(err, &re):
		return api.CodeInvalidInput, err.Error()
	}
	return api.CodeInternal, what + ": " + err.Error()
}

// lostError is what a cell gets for a call whose process died before its result was saved.
func lostError(c sandbox.PendingCall) *api.ToolError {
	label := c.Label
	if label == "" {
		label = c.Op
	}
	return &api.ToolError{Name: "Error", Code: "lost_on_replica",
		Message: fmt.Sprintf("%s was running on a gateway replica that stopped before its result was saved: it may or may not have run; check its effect before calling it again", label)}
}

// Drain waits until no call this process runs for a suspended run is still running and every
// result is written to the store (a graceful stop: nothing is left for other replicas to count
// as lost), or ctx ends.
func (d *Runs) Drain(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		d.mu.Lock()
		entries := make([]*durableEntry, 0, len(d.entries))
		for _, e := range d.entries {
			entries = append(entries, e)
		}
		d.mu.Unlock()
		busy := 0
		for _, e := range entries {
			calls, results := e.live()
			busy += calls + results
			if results > 0 {
				e.flush()
			}
		}
		if busy == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d calls or results of suspended runs still pending: %w", busy, ctx.Err())
		case <-t.C:
		}
	}
}
