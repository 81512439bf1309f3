// Package runstore keeps suspended code-mode runs between exec and wait (W2–W7): an in-process
// map by unguessable runId with a TTL, a cap on suspended runs, one wait at a time per run, scope
// checks, and cancellation of a run or a whole session. Nothing is written to disk; shutdown
// drops everything.
package runstore

import (
	"crypto/rand"
	"encoding/base32"
	"sync"
	"time"

	"github.com/codemode-go/codemode/api"
)

// Error is a run-store error. Its messages are the contract's, final period included (W3).
type Error string

func (e Error) Error() string { return string(e) }

// Errors of the store. All map to invalid_input.
const (
	ErrUnavailable  Error = "code mode run is unavailable or expired."
	ErrWrongSession Error = "code mode run belongs to a different session."
	ErrWrongRun     Error = "code mode run belongs to a different run."
	ErrBusy         Error = "a wait for this code mode run is already in progress."
	ErrCancelled    Error = "code mode run was cancelled."
	ErrTooMany      Error = "too many suspended code mode runs."
	// ErrTooManySession and ErrTooManyBytes keep one session from using up the store for the
	// others (runtime.suspended); the session can finish or drop its own runs.
	ErrTooManySession Error = "too many suspended code mode runs in this session: finish some with wait first."
	// ErrTooManyPrincipal is the same share for everything one principal (a token, a tenant)
	// suspends across its sessions.
	ErrTooManyPrincipal Error = "too many suspended code mode runs for this principal: finish some with wait first."
)

// Backend is what the runtime needs from a run store. Store, the in-process map, implements it;
// an opt-in shared store (a fleet of gateways resuming each other's runs) would implement it too,
// storing the snapshot and pending-call table where the others can reach them.
type Backend interface {
	Put(id string, scope api.RunContext, v Suspended, bytes int) error
	Acquire(id string, scope api.RunContext) (*Entry, error)
	Lookup(id string, scope api.RunContext) (*Entry, error)
	Release(e *Entry, bytes int)
	Remove(e *Entry)
	Cancel(id string) bool
	CancelSession(sessionKey string) int
	Len() int
	Bytes() int
	Close()
}

var _ Backend = (*Store)(nil)

// Suspended is what the store keeps for a run: anything with a Close that cancels its pending
// work and frees its snapshot.
type Suspended interface {
	Close()
}

// Entry is one stored run.
type Entry struct {
	ID      string
	Scope   api.RunContext
	Value   Suspended
	Bytes   int // stored snapshot size, for accounting
	expires time.Time
	busy    bool
}

// Store is the run store. The zero value is not usable; use New.
type Store struct {
	mu        sync.Mutex
	runs      map[string]*Entry
	cancelled map[string]time.Time // recently cancelled ids, to say "cancelled" rather than "expired"
	ttl       time.Duration
	lim       Limits
	timer     *time.Timer
	closed    bool
	now       func() time.Time
}

// New creates a store whose entries expire ttl after their last suspension.
func New(ttl time.Duration) *Store {
	return NewWithLimits(ttl, Limits{})
}

// NewWithLimits is New with limits (W5): Runs (zero: DefaultRuns), and SessionRuns,
// PrincipalRuns, Bytes, SessionBytes and PrincipalBytes (zero: unbounded). RecordBytes,
// Results and ResultBytes do not apply to live runs.
func NewWithLimits(ttl time.Duration, lim Limits) *Store {
	if lim.Runs <= 0 {
		lim.Runs = DefaultRuns
	}
	return &Store{runs: map[string]*Entry{}, cancelled: map[string]time.Time{}, ttl: ttl, lim: lim, now: time.Now}
}

// NewID returns an unguessable run id (128 random bits).
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "run_" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])
}

// Put stores a newly suspended run, or fails with ErrTooMany (W5). The caller keeps ownership of
// v on error.
func (s *Store) Put(id string, scope api.RunContext, v Suspended, bytes int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrUnavailable
	}
	s.expireLocked()
	if _, ok := s.runs[id]; !ok {
		if err := s.admitLocked(scope, bytes); err != nil {
			return err
		}
	}
	s.runs[id] = &Entry{ID: id, Scope: scope, Value: v, Bytes: bytes, expires: s.now().Add(s.ttl)}
	s.scheduleLocked()
	return nil
}

// admitLocked checks the caps for one more run of scope's session and principal.
func (s *Store) admitLocked(scope api.RunContext, bytes int) error {
	if len(s.runs) >= s.lim.Runs {
		return ErrTooMany
	}
	var n, pn int
	var total, mine, theirs int64
	p := Principal(scope)
	for _, e := range s.runs {
		total += int64(e.Bytes)
		if e.Scope.SessionKey == scope.SessionKey {
			n++
			mine += int64(e.Bytes)
		}
		if Principal(e.Scope) == p {
			pn++
			theirs += int64(e.Bytes)
		}
	}
	b := int64(bytes)
	sessRuns, sessBytes := s.lim.SessionShare(OwnedByPrincipal(scope))
	switch {
	case sessRuns > 0 && n >= sessRuns:
		return ErrTooManySession
	case s.lim.PrincipalRuns > 0 && pn >= s.lim.PrincipalRuns:
		return ErrTooManyPrincipal
	case s.lim.Bytes > 0 && total+b > s.lim.Bytes,
		sessBytes > 0 && mine+b > sessBytes,
		s.lim.PrincipalBytes > 0 && theirs+b > s.lim.PrincipalBytes:
		return ErrTooManyBytes
	}
	return nil
}

// Acquire takes a run for a wait: it checks scope (W3) and marks the run busy so a concurrent
// wait fails. Release or Remove must follow.
func (s *Store) Acquire(id string, scope api.RunContext) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookupLocked(id, scope)
	if err != nil {
		return nil, err
	}
	if e.busy {
		return nil, ErrBusy
	}
	e.busy = true
	return e, nil
}

// Lookup returns a run after the same scope checks as Acquire, without taking it: for operations
// that may happen while a wait runs (deciding an approval). The value must be safe for that.
func (s *Store) Lookup(id string, scope api.RunContext) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookupLocked(id, scope)
}

func (s *Store) lookupLocked(id string, scope api.RunContext) (*Entry, error) {
	s.expireLocked()
	e, ok := s.runs[id]
	if !ok {
		if _, c := s.cancelled[id]; c {
			return nil, ErrCancelled
		}
		return nil, ErrUnavailable
	}
	if CheckScope(e.Scope, scope) == ErrWrongSession {
		return nil, ErrWrongSession
	}
	if e.Scope.RunID != "" && scope.RunID != "" && scope.RunID != e.Scope.RunID {
		return nil, ErrWrongRun
	}
	return e, nil
}

// Release returns a run after a wait that suspended it again, refreshing its TTL.
func (s *Store) Release(e *Entry, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.busy = false
	e.Bytes = bytes
	e.expires = s.now().Add(s.ttl)
	if s.runs[e.ID] != e {
		// Cancelled or expired while the wait ran: drop it now.
		go e.Value.Close()
	}
	s.scheduleLocked()
}

// Remove deletes a run that reached a terminal state (W4); its snapshot is gone with it.
func (s *Store) Remove(e *Entry) {
	s.mu.Lock()
	if s.runs[e.ID] == e {
		delete(s.runs, e.ID)
	}
	s.mu.Unlock()
	e.Value.Close()
}

// Cancel drops one run (W7). It reports whether the run existed.
func (s *Store) Cancel(id string) bool {
	s.mu.Lock()
	e, ok := s.runs[id]
	idle := ok && !e.busy // read under the lock: Release writes busy
	if ok {
		delete(s.runs, id)
		s.cancelled[id] = s.now()
	}
	s.mu.Unlock()
	if idle {
		e.Value.Close()
	}
	return ok
}

// CancelSession drops every run of a session (session end, W7) and returns how many.
func (s *Store) CancelSession(sessionKey string) int {
	s.mu.Lock()
	var drop []*Entry
	n := 0
	for id, e := range s.runs {
		if e.Scope.SessionKey == sessionKey {
			delete(s.runs, id)
			s.cancelled[id] = s.now()
			n++
			if !e.busy { // a busy run is closed by its wait's Release
				drop = append(drop, e)
			}
		}
	}
	s.mu.Unlock()
	for _, e := range drop {
		e.Value.Close()
	}
	return n
}

// Len is the number of suspended runs.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

// Bytes is the total stored snapshot size.
func (s *Store) Bytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.runs {
		n += e.Bytes
	}
	return n
}

// Close drops every run (shutdown: nothing survives a restart, W4).
func (s *Store) Close() {
	s.mu.Lock()
	s.closed = true
	var drop []*Entry
	for _, e := range s.runs {
		if !e.busy {
			drop = append(drop, e)
		}
	}
	s.runs = map[string]*Entry{}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	for _, e := range drop {
		e.Value.Close()
	}
}

// expireLocked drops expired, idle runs.
func (s *Store) expireLocked() {
	now := s.now()
	for id, e := range s.runs {
		if !e.busy && now.After(e.expires) {
			delete(s.runs, id)
			go e.Value.Close()
		}
	}
	for id, t := range s.cancelled {
		if now.Sub(t) > s.ttl {
			delete(s.cancelled, id)
		}
	}
}

// scheduleLocked arms one timer for the next expiry, so expired runs release their pending work
// and memory even when nobody calls the store.
func (s *Store) scheduleLocked() {
	var next time.Time
	for _, e := range s.runs {
		if !e.busy && (next.IsZero() || e.expires.Before(next)) {
			next = e.expires
		}
	}
	if next.IsZero() {
		return
	}
	d := time.Until(next) + time.Millisecond
	if s.timer == nil {
		s.timer = time.AfterFunc(d, s.sweep)
	} else {
		s.timer.Reset(d)
	}
}

func (s *Store) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.expireLocked()
	s.scheduleLocked()
}
