package runstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/codemode-go/codemode/api"
)

// A durable record is a suspended run as data: the process that suspended it can be gone, and
// another process with the same configuration (module, prelude, catalog, store key) resumes it.
// Store (the in-process map of live runs) and Durable (records) are separate on purpose: a live
// run owns goroutines and a VM template, a record owns only bytes.

// Record is everything another process with the same configuration needs to resume a run.
type Record struct {
	// Scope is the agent, session and run that made the record. It is checked on every access
	// and never changes for the life of the run (Release keeps the stored one).
	Scope api.RunContext
	// Snapshot is the compressed VM image, opaque here.
	Snapshot []byte
	// State is the host-side state of the run (pending-call table and the like), opaque here.
	State []byte
	// Version is the writer's name for this record (random per write, opaque here). It is
	// stored beside the sealed bytes so that Acquire can skip sending a record the caller
	// already holds (a replica whose live VM is that version continues it).
	Version string
	// Unchanged is set by Acquire when the stored Version is the one the caller said it holds:
	// Snapshot and State are then empty, Scope and Version are set.
	Unchanged bool
}

// Size is what a record counts against the byte limits before any encoding by the backend.
func (r Record) Size() int { return len(r.Snapshot) + len(r.State) }

// Lease is one holder's exclusive hold on a run between Acquire and Release or Delete. It
// expires on its own, so a holder that dies does not block the run for longer than the lease;
// a holder that outlives its lease finds out at Release (ErrLeaseLost) and cannot overwrite the
// newer holder's record.
type Lease struct {
	RunID  string
	Holder string // who holds it (a process or replica name), for diagnostics
	Token  string // random per Acquire; the store compares it before any write
	// Scope is the run's stored scope, as decrypted from the record.
	Scope api.RunContext
}

// Durable stores suspended runs as records that any process sharing the store can resume
// (W1–W7 across a fleet). Every method honours ctx and returns one of this package's errors, or
// a *StoreError when the backend cannot be reached. Implementations are safe for concurrent use.
type Durable interface {
	// Put stores a new run, or replaces the record of a run nobody holds (the same scope only).
	// It enforces the limits: ErrTooMany, ErrTooManyBytes, ErrRecordTooLarge. Every key of the
	// run expires after ttl.
	Put(ctx context.Context, id string, rec Record, ttl time.Duration) error
	// Acquire takes a run for one wait, fleet-wide: it checks scope (W3) and grants a lease for
	// lease. A second Acquire before Release, Delete or the lease's expiry fails with a
	// *BusyError (errors.Is ErrBusy) that says when the lease runs out. have is the Version the
	// caller already holds ("" for none): when it is the stored one, the record comes back
	// Unchanged, without its bytes.
	Acquire(ctx context.Context, id string, scope api.RunContext, holder string, lease time.Duration, have string) (Record, Lease, error)
	// Renew extends a held lease to lease from now (a wait that runs longer than one lease
	// renews it while it works; a holder that dies stops renewing and the run is free again a
	// lease later). It fails with ErrLeaseLost when the lease expired or another holder has it.
	Renew(ctx context.Context, l Lease, lease time.Duration) error
	// Release ends a wait that suspended the run again: it stores rec when non-nil (its Scope is
	// ignored), deletes the results named in delivered (they are inside rec's snapshot now),
	// restarts the run's ttl and drops the lease. On ErrTooManyBytes or ErrRecordTooLarge the
	// lease is still held and the old record kept; the caller fails the run and calls Delete.
	Release(ctx context.Context, l Lease, rec *Record, delivered []string, ttl time.Duration) error
	// Delete ends a run that reached a terminal state (W4): record, results and lease are gone.
	// A run already gone (cancelled, expired) is not an error; a lost lease is.
	Delete(ctx context.Context, l Lease) error
	// Cancel drops one run (W7) and reports whether it existed. A holder's Release then fails
	// with ErrCancelled, and so do later Acquires (for the run's ttl).
	Cancel(ctx context.Context, id string) (bool, error)
	// CancelSession drops every run of a session (session end, W7) and returns how many.
	CancelSession(ctx context.Context, sessionKey string) (int, error)
	// AddResult records the result of a call that completed while the run was suspended. It is
	// written by the process that ran the call (scope is the run's, checked like Acquire) and
	// read by whichever process resumes the run. A second result for the same call replaces it.
	AddResult(ctx context.Context, id string, scope api.RunContext, callID string, result []byte) error
	// Results returns the results stored for the held run, by call id.
	Results(ctx context.Context, l Lease) (map[string][]byte, error)
	// Heartbeat says owner still holds live calls for the run, for ttl. It fails with
	// ErrCancelled or ErrUnavailable when the run is gone, so the owner can stop those calls.
	Heartbeat(ctx context.Context, id, owner string, ttl time.Duration) error
	// OwnerAlive reports whether owner's heartbeat for the run is current: a resumer decides
	// which pending calls died with their process.
	OwnerAlive(ctx context.Context, id, owner string) (bool, error)
	// Usage is the number of live runs and the bytes they count against the limits.
	Usage(ctx context.Context) (Usage, error)
	// Takeover is how long a lease or a heartbeat lasts without renewal: a process that stops
	// (killed, partitioned) frees its runs, and its calls count as lost, this long after its
	// last renewal. Holders renew several times per Takeover.
	Takeover() time.Duration
	// Close releases the client's resources; stored runs stay for the other processes.
	Close() error
}

// Versioner is implemented by stores that can say cheaply which version of many runs they hold
// (a replica lets go of live VMs whose run was continued elsewhere): the stored Version of each
// id, "" for a run that is gone.
type Versioner interface {
	Versions(ctx context.Context, ids []string) (map[string]string, error)
}

// Usage is a durable store's accounting.
type Usage struct {
	Runs  int
	Bytes int64
}

// Limits bound a durable store. Zero fields take the defaults; for a shared store they are
// fleet-wide figures, enforced atomically by the store.
//
// A run counts against its session (api.RunContext.SessionKey) and its principal
// (RunContext.Principal, or the session key when there is none), so that neither one client nor
// one tenant can use up the store for the others.
type Limits struct {
	Runs           int   // suspended runs in the store (default DefaultRuns)
	SessionRuns    int   // suspended runs of one session key (default 32)
	PrincipalRuns  int   // suspended runs of one principal (default DefaultPrincipalRuns)
	Bytes          int64 // bytes of records and results in the store (default 640 MiB)
	SessionBytes   int64 // bytes of one session's runs (default 320 MiB)
	PrincipalBytes int64 // bytes of one principal's runs (default 320 MiB)
	RecordBytes    int   // one record: snapshot + state (default 16 MiB; maxSnapshotBytes caps the snapshot first)
	Results        int   // stored results per run (default 1024)
	ResultBytes    int   // one result (default 16 MiB)
}

// DefaultTakeover is the default Takeover of a store.
const DefaultTakeover = 5 * time.Second

// Defaults of Limits.
const (
	DefaultRuns           = 1024
	DefaultSessionRuns    = 32
	DefaultPrincipalRuns  = 256
	DefaultBytes          = 640 << 20
	DefaultSessionBytes   = 320 << 20
	DefaultPrincipalBytes = 320 << 20
	DefaultRecordBytes    = 16 << 20
	DefaultResults        = 1024
	DefaultResultBytes    = 16 << 20
)

// WithDefaults fills zero fields.
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def64 := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.Runs, DefaultRuns)
	def(&l.SessionRuns, DefaultSessionRuns)
	def(&l.PrincipalRuns, DefaultPrincipalRuns)
	def64(&l.Bytes, DefaultBytes)
	def64(&l.SessionBytes, DefaultSessionBytes)
	def64(&l.PrincipalBytes, DefaultPrincipalBytes)
	def(&l.RecordBytes, DefaultRecordBytes)
	def(&l.Results, DefaultResults)
	def(&l.ResultBytes, DefaultResultBytes)
	return l
}

// Errors of durable stores, besides the ones Store shares with them (ErrUnavailable,
// ErrWrongSession, ErrWrongRun, ErrBusy, ErrCancelled, ErrTooMany). All map to invalid_input
// except ErrTampered, ErrWrongKey and *StoreError, which are the operator's to fix.
const (
	ErrTooManyBytes   Error = "suspended code mode runs use too much memory: finish some with wait first."
	ErrRecordTooLarge Error = "code mode run record is larger than the run store allows."
	ErrResultTooLarge Error = "code mode call result is larger than the run store allows."
	ErrTooManyResults Error = "too many stored results for this code mode run."
	ErrLeaseLost      Error = "the wait lost its hold on the code mode run (its lease expired); another wait may have taken it."
	ErrTampered       Error = "code mode run record failed authentication (tampered or moved to another scope)."
	ErrWrongKey       Error = "code mode run record was sealed with a different run store key (every replica needs the same key)."
	ErrInvalidID      Error = "code mode run id, call id, holder or owner is empty or too long."
)

// BusyError is ErrBusy with the time left on the lease that holds the run: a caller retries
// after RetryAfter (the holder is another wait, alive or dead; a dead one's lease runs out on
// its own, which is how another replica takes over its runs).
type BusyError struct{ RetryAfter time.Duration }

func (e *BusyError) Error() string        { return string(ErrBusy) }
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// RetryAfter returns how long a caller should wait before retrying after err: the remaining
// lease of a *BusyError, 0 otherwise.
func RetryAfter(err error) time.Duration {
	var be *BusyError
	if errors.As(err, &be) {
		return be.RetryAfter
	}
	return 0
}

// PrincipalKey is the session key of runs that belong to a principal and to none of its sessions:
// serve scopes runs so whenever a principal authenticated (and to "anonymous" for unauthenticated
// stateless requests), so that any session of the principal, on any replica, may wait on them.
func PrincipalKey(principal string) string { return "principal:" + principal }

// OwnedByPrincipal reports whether a run of scope belongs to its principal and to no session
// (its session key is PrincipalKey of its principal).
func OwnedByPrincipal(scope api.RunContext) bool {
	return scope.Principal != "" && scope.SessionKey == PrincipalKey(scope.Principal)
}

// SessionShare is the per-session share that bounds a run (0: unbounded): the configured
// SessionRuns and SessionBytes, except for a run owned by its principal (OwnedByPrincipal):
// that one belongs to no session, and every session of the principal would share one session's
// 16 runs otherwise (issue 18 item 5: 5 sessions × 16), so its bound is one past the principal's
// share, and the principal's share is the one that refuses.
func (l Limits) SessionShare(owned bool) (runs int, bytes int64) {
	if !owned {
		return l.SessionRuns, l.SessionBytes
	}
	if l.PrincipalRuns > 0 {
		runs = l.PrincipalRuns + 1
	}
	if l.PrincipalBytes > 0 {
		bytes = l.PrincipalBytes + 1
	}
	return runs, bytes
}

// Principal is the identity a run counts against for the per-principal limits: the scope's
// Principal, or its session key when it has none (stdio, no token).
func Principal(scope api.RunContext) string {
	if scope.Principal != "" {
		return "p:" + scope.Principal
	}
	return "s:" + scope.SessionKey
}

// StoreError is a backend failure (network, server, timeout): the run may be fine, the store is
// not reachable.
type StoreError struct {
	Err error
	// Kind classifies the failure for metrics and readiness: "unreachable" (connection or
	// timeout), "full" (the server refuses writes: out of memory), "readonly" (a replica or
	// a master being failed over), or "error".
	Kind string
}

func (e *StoreError) Error() string { return "run store unavailable: " + e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// StoreErrorKind is the Kind of a *StoreError in err's chain, or "".
func StoreErrorKind(err error) string {
	var se *StoreError
	if errors.As(err, &se) {
		if se.Kind == "" {
			return "error"
		}
		return se.Kind
	}
	return ""
}

// IsStoreError reports whether err is a backend failure rather than a verdict about the run.
func IsStoreError(err error) bool {
	var se *StoreError
	return errors.As(err, &se)
}

// MaxNameBytes bounds run ids, call ids, holders and owners: they become parts of keys.
const MaxNameBytes = 256

// CheckName validates an id-like argument.
func CheckName(s string) error {
	if s == "" || len(s) > MaxNameBytes {
		return ErrInvalidID
	}
	return nil
}

// CheckDuration validates a ttl or lease: a store rounds it to milliseconds, so it must be at
// least one.
func CheckDuration(what string, d time.Duration) error {
	if d < time.Millisecond {
		return fmt.Errorf("run store: %s must be at least 1ms, got %v", what, d)
	}
	return nil
}

// CheckScope applies W3's rule to a caller's scope against a run's stored scope: principal,
// agent, session key and session id must match; run ids must match when both are known.
func CheckScope(stored, caller api.RunContext) error {
	if stored.Principal != caller.Principal || stored.AgentID != caller.AgentID || stored.SessionKey != caller.SessionKey || stored.SessionID != caller.SessionID {
		return ErrWrongSession
	}
	if stored.RunID != "" && caller.RunID != "" && stored.RunID != caller.RunID {
		return ErrWrongRun
	}
	return nil
}

// NewToken returns a random lease token (128 bits).
func NewToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
