package runstore

import (
	"context"
	"sync"
	"time"

	"github.com/codemode-go/codemode/api"
)

// MemDurable is the in-process Durable: the same semantics as a shared store (leases, caps,
// results, heartbeats), for a single process and for tests. Records are copied in and out, so
// callers may reuse their buffers. Nothing is encrypted: the bytes never leave the process.
type MemDurable struct {
	mu        sync.Mutex
	lim       Limits
	runs      map[string]*memRun
	cancelled map[string]time.Time // id → when the marker expires
	owners    map[memOwner]time.Time
	closed    bool
	now       func() time.Time
	takeover  time.Duration
}

type memRun struct {
	scope   api.RunContext
	rec     Record
	results map[string][]byte
	bytes   int64 // record + results
	ttl     time.Duration
	expires time.Time
	lease   Lease
	leaseTo time.Time // zero: not held
}

type memOwner struct{ id, owner string }

var _ Durable = (*MemDurable)(nil)

// NewMemDurable returns an empty in-process durable store; zero limits take the defaults.
func NewMemDurable(lim Limits) *MemDurable {
	return &MemDurable{lim: lim.WithDefaults(), runs: map[string]*memRun{}, cancelled: map[string]time.Time{},
		owners: map[memOwner]time.Time{}, now: time.Now, takeover: DefaultTakeover}
}

// Takeover implements Durable.
func (m *MemDurable) Takeover() time.Duration { return m.takeover }

// SetTakeover changes Takeover (tests shorten it); call it before use.
func (m *MemDurable) SetTakeover(d time.Duration) { m.takeover = d }

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

func cloneRecord(r Record) Record {
	return Record{Scope: r.Scope, Snapshot: clone(r.Snapshot), State: clone(r.State), Version: r.Version}
}

// sweepLocked drops expired runs, markers and heartbeats: it is what Redis's key expiry does.
func (m *MemDurable) sweepLocked(now time.Time) {
	for id, r := range m.runs {
		if now.After(r.expires) {
			delete(m.runs, id)
		}
	}
	for id, t := range m.cancelled {
		if now.After(t) {
			delete(m.cancelled, id)
		}
	}
	for k, t := range m.owners {
		if now.After(t) {
			delete(m.owners, k)
		}
	}
}

// lookupLocked finds a live run or says why there is none.
func (m *MemDurable) lookupLocked(id string) (*memRun, error) {
	if m.closed {
		return nil, &StoreError{Err: errClosed}
	}
	now := m.now()
	m.sweepLocked(now)
	if _, ok := m.cancelled[id]; ok {
		return nil, ErrCancelled
	}
	r, ok := m.runs[id]
	if !ok {
		return nil, ErrUnavailable
	}
	return r, nil
}

// heldLocked finds the run a lease is for, checking the lease is still current.
func (m *MemDurable) heldLocked(l Lease) (*memRun, error) {
	r, err := m.lookupLocked(l.RunID)
	if err != nil {
		return nil, err
	}
	if r.leaseTo.IsZero() || m.now().After(r.leaseTo) || r.lease.Token != l.Token {
		return nil, ErrLeaseLost
	}
	return r, nil
}

// memUsage is what the limits count: the store's, a session's and a principal's.
type memUsage struct {
	runs, sessRuns, prinRuns    int
	bytes, sessBytes, prinBytes int64
}

func (m *MemDurable) usageLocked(scope api.RunContext) memUsage {
	var u memUsage
	p := Principal(scope)
	for _, r := range m.runs {
		u.runs++
		u.bytes += r.bytes
		if r.scope.SessionKey == scope.SessionKey {
			u.sessRuns++
			u.sessBytes += r.bytes
		}
		if Principal(r.scope) == p {
			u.prinRuns++
			u.prinBytes += r.bytes
		}
	}
	return u
}

// admitLocked checks the limits for a run of scope growing by delta bytes (and being new).
func (m *MemDurable) admitLocked(scope api.RunContext, isNew bool, delta int64) error {
	u := m.usageLocked(scope)
	sessRuns, sessBytes := m.lim.SessionShare(OwnedByPrincipal(scope))
	if isNew {
		switch {
		case u.runs >= m.lim.Runs:
			return ErrTooMany
		case u.sessRuns >= sessRuns:
			return ErrTooManySession
		case u.prinRuns >= m.lim.PrincipalRuns:
			return ErrTooManyPrincipal
		}
	}
	if delta > 0 && (u.bytes+delta > m.lim.Bytes || u.sessBytes+delta > sessBytes || u.prinBytes+delta > m.lim.PrincipalBytes) {
		return ErrTooManyBytes
	}
	return nil
}

// Put implements Durable.
func (m *MemDurable) Put(ctx context.Context, id string, rec Record, ttl time.Duration) error {
	if err := CheckName(id); err != nil {
		return err
	}
	if err := CheckDuration("ttl", ttl); err != nil {
		return err
	}
	if rec.Size() > m.lim.RecordBytes {
		return ErrRecordTooLarge
	}
	if err := ctx.Err(); err != nil {
		return &StoreError{Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.lookupLocked(id)
	switch {
	case err == ErrUnavailable:
		if err := m.admitLocked(rec.Scope, true, int64(rec.Size())); err != nil {
			return err
		}
		m.runs[id] = &memRun{scope: rec.Scope, rec: cloneRecord(rec), results: map[string][]byte{},
			bytes: int64(rec.Size()), ttl: ttl, expires: m.now().Add(ttl)}
		return nil
	case err != nil:
		return err
	}
	if err := CheckScope(r.scope, rec.Scope); err != nil {
		return err
	}
	if r.scope.RunID != rec.Scope.RunID {
		return ErrWrongRun // a replaced record keeps its exact scope
	}
	if !r.leaseTo.IsZero() && !m.now().After(r.leaseTo) {
		return ErrBusy
	}
	delta := int64(rec.Size() - r.rec.Size())
	if err := m.admitLocked(r.scope, false, delta); err != nil {
		return err
	}
	r.rec = cloneRecord(rec)
	r.rec.Scope = r.scope
	r.bytes += delta
	r.ttl, r.expires = ttl, m.now().Add(ttl)
	return nil
}

// Acquire implements Durable.
func (m *MemDurable) Acquire(ctx context.Context, id string, scope api.RunContext, holder string, lease time.Duration, have string) (Record, Lease, error) {
	if err := CheckName(id); err != nil {
		return Record{}, Lease{}, err
	}
	if err := CheckName(holder); err != nil {
		return Record{}, Lease{}, err
	}
	if err := CheckDuration("lease", lease); err != nil {
		return Record{}, Lease{}, err
	}
	if err := ctx.Err(); err != nil {
		return Record{}, Lease{}, &StoreError{Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.lookupLocked(id)
	if err != nil {
		return Record{}, Lease{}, err
	}
	if err := CheckScope(r.scope, scope); err != nil {
		return Record{}, Lease{}, err
	}
	now := m.now()
	if !r.leaseTo.IsZero() && !now.After(r.leaseTo) {
		return Record{}, Lease{}, &BusyError{RetryAfter: max(r.leaseTo.Sub(now), time.Millisecond)}
	}
	r.lease = Lease{RunID: id, Holder: holder, Token: NewToken(), Scope: r.scope}
	r.leaseTo = now.Add(lease)
	if r.expires.Before(r.leaseTo) {
		r.expires = r.leaseTo // a held run does not expire under its holder
	}
	if have != "" && have == r.rec.Version {
		return Record{Scope: r.scope, Version: r.rec.Version, Unchanged: true}, r.lease, nil
	}
	return cloneRecord(r.rec), r.lease, nil
}

// Renew implements Durable.
func (m *MemDurable) Renew(ctx context.Context, l Lease, lease time.Duration) error {
	if err := CheckDuration("lease", lease); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return &StoreError{Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.heldLocked(l)
	if err != nil {
		return err
	}
	r.leaseTo = m.now().Add(lease)
	if r.expires.Before(r.leaseTo) {
		r.expires = r.leaseTo
	}
	return nil
}

// Release implements Durable.
func (m *MemDurable) Release(ctx context.Context, l Lease, rec *Record, delivered []string, ttl time.Duration) error {
	if err := CheckDuration("ttl", ttl); err != nil {
		return err
	}
	if rec != nil && rec.Size() > m.lim.RecordBytes {
		return ErrRecordTooLarge
	}
	if err := ctx.Err(); err != nil {
		return &StoreError{Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.heldLocked(l)
	if err != nil {
		return err
	}
	// Check the limits against the net change first: on error nothing changes.
	var delta int64
	seen := map[string]bool{}
	for _, c := range delivered {
		if v, ok := r.results[c]; ok && !seen[c] {
			seen[c] = true
			delta -= int64(len(v))
		}
	}
	if rec != nil {
		delta += int64(rec.Size() - r.rec.Size())
	}
	if err := m.admitLocked(r.scope, false, delta); err != nil {
		return err
	}
	for c := range seen {
		delete(r.results, c)
	}
	if rec != nil {
		r.rec = cloneRecord(*rec)
		r.rec.Scope = r.scope
	}
	r.bytes += delta
	r.leaseTo = time.Time{}
	r.ttl, r.expires = ttl, m.now().Add(ttl)
	return nil
}

// Delete implements Durable.
func (m *MemDurable) Delete(ctx context.Context, l Lease) error {
	if err := ctx.Err(); err != nil {
		return &StoreError{Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, err := m.heldLocked(l)
	switch err {
	case nil:
		delete(m.runs, l.RunID)
		return nil
	case ErrUnavailable, ErrCancelled:
		return nil
	}
	return err
}

// Cancel implements Durable.
func (m *MemDurable) Cancel(ctx context.Context, id string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, &StoreError{Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.lookupLocked(id)
	if err != nil {
		if IsStoreError(err) {
			return false, err
		}
		return false, nil
	}
	m.cancelLocked(id, r)
	return true, nil
}

func (m *MemDurable) cancelLocked(id string, r *memRun) {
	delete(m.runs, id)
	m.cancelled[id] = m.now().Add(r.ttl)
}

// CancelSession implements Durable.
func (m *MemDurable) CancelSession(ctx context.Context, sessionKey string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, &StoreError{Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, &StoreError{Err: errClosed}
	}
	m.sweepLocked(m.now())
	n := 0
	for id, r := range m.runs {
		if r.scope.SessionKey == sessionKey {
			m.cancelLocked(id, r)
			n++
		}
	}
	return n, nil
}

// AddResult implements Durable.
func (m *MemDurable) AddResult(ctx context.Context, id string, scope api.RunContext, callID string, result []byte) error {
	if err := CheckName(id); err != nil {
		return err
	}
	if err := CheckName(callID); err != nil {
		return err
	}
	if len(result) > m.lim.ResultBytes {
		return ErrResultTooLarge
	}
	if err := ctx.Err(); err != nil {
		return &StoreError{Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.lookupLocked(id)
	if err != nil {
		return err
	}
	if err := CheckScope(r.scope, scope); err != nil {
		return err
	}
	old, replace := r.results[callID]
	if !replace && len(r.results) >= m.lim.Results {
		return ErrTooManyResults
	}
	delta := int64(len(result) - len(old))
	if err := m.admitLocked(r.scope, false, delta); err != nil {
		return err
	}
	r.results[callID] = clone(result)
	r.bytes += delta
	return nil
}

// Results implements Durable.
func (m *MemDurable) Results(ctx context.Context, l Lease) (map[string][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, &StoreError{Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.heldLocked(l)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(r.results))
	for k, v := range r.results {
		out[k] = clone(v)
	}
	return out, nil
}

// Heartbeat implements Durable.
func (m *MemDurable) Heartbeat(ctx context.Context, id, owner string, ttl time.Duration) error {
	if err := CheckName(id); err != nil {
		return err
	}
	if err := CheckName(owner); err != nil {
		return err
	}
	if err := CheckDuration("ttl", ttl); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return &StoreError{Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookupLocked(id); err != nil {
		return err
	}
	m.owners[memOwner{id, owner}] = m.now().Add(ttl)
	return nil
}

// OwnerAlive implements Durable.
func (m *MemDurable) OwnerAlive(ctx context.Context, id, owner string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, &StoreError{Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false, &StoreError{Err: errClosed}
	}
	t, ok := m.owners[memOwner{id, owner}]
	return ok && !m.now().After(t), nil
}

// Usage implements Durable.
func (m *MemDurable) Usage(ctx context.Context) (Usage, error) {
	if err := ctx.Err(); err != nil {
		return Usage{}, &StoreError{Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Usage{}, &StoreError{Err: errClosed}
	}
	m.sweepLocked(m.now())
	u := m.usageLocked(api.RunContext{})
	return Usage{Runs: u.runs, Bytes: u.bytes}, nil
}

// Close drops everything: an in-process store has no one to keep the runs for.
func (m *MemDurable) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.runs, m.cancelled, m.owners = map[string]*memRun{}, map[string]time.Time{}, map[memOwner]time.Time{}
	return nil
}

type closedError struct{}

func (closedError) Error() string { return "the store is closed" }

var errClosed error = closedError{}

// Versions implements Versioner.
func (m *MemDurable) Versions(ctx context.Context, ids []string) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, &StoreError{Err: err}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(m.now())
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		if r, ok := m.runs[id]; ok {
			out[id] = r.rec.Version
		} else {
			out[id] = ""
		}
	}
	return out, nil
}
