package results

import (
	"container/list"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Memory is the in-process Store. Expired entries are dropped as the store is used (entries
// are ordered by last use, so that costs nothing per operation beyond the expired ones).
type Memory struct {
	lim Limits
	now func() time.Time

	mu      sync.Mutex
	entries map[string]*memEntry
	lru     *list.List // of *memEntry, least recently used at the front
	runs    map[string]*usage
	owners  map[string]*usage
	bytes   int64
}

type memEntry struct {
	id      string
	scope   Scope
	value   []byte
	entry   Entry
	expires time.Time
	el      *list.Element
}

type usage struct {
	n     int
	bytes int64
}

var _ Store = (*Memory)(nil)

// NewMemory makes an in-memory store with lim (zero fields: defaults).
func NewMemory(lim Limits) *Memory {
	return &Memory{lim: lim.WithDefaults(), now: time.Now, entries: map[string]*memEntry{}, lru: list.New(),
		runs: map[string]*usage{}, owners: map[string]*usage{}}
}

// Save implements Store.
func (m *Memory) Save(_ context.Context, sc Scope, value []byte, untrusted []string) (Entry, error) {
	n := int64(len(value))
	if n > MaxEntryBytes {
		return Entry{}, tooLarge(len(value))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.expireLocked(now)
	run, owner := m.runs[sc.Key()], m.owners[sc.Owner()]
	switch {
	case run != nil && run.n >= m.lim.MaxEntriesPerRun:
		return Entry{}, &Error{Code: "results_full", Message: fmt.Sprintf("results.save: this run already holds %d saved results (limit %d): delete results you no longer need (results.delete(id))", run.n, m.lim.MaxEntriesPerRun)}
	case run != nil && run.bytes+n > m.lim.MaxBytesPerRun:
		return Entry{}, full("this run", run.bytes, n, m.lim.MaxBytesPerRun)
	case n > m.lim.MaxBytesPerRun:
		return Entry{}, full("this run", 0, n, m.lim.MaxBytesPerRun)
	case owner != nil && (owner.bytes+n > m.lim.MaxBytesPerOwner || owner.n >= maxEntriesPerOwner):
		return Entry{}, full("this session", owner.bytes, n, m.lim.MaxBytesPerOwner)
	case m.bytes+n > m.lim.MaxBytes:
		return Entry{}, full("the process", m.bytes, n, m.lim.MaxBytes)
	}
	e := &memEntry{id: NewID(), scope: sc, value: slices.Clone(value), expires: now.Add(m.lim.TTL)}
	e.entry = Entry{ID: e.id, Bytes: len(value), Untrusted: slices.Clone(untrusted)}
	e.el = m.lru.PushBack(e)
	m.entries[e.id] = e
	m.account(sc, 1, n)
	return e.entry, nil
}

// Load implements Store.
func (m *Memory) Load(_ context.Context, sc Scope, id string) ([]byte, Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.expireLocked(now)
	e := m.entries[id]
	if e == nil || e.scope.Owner() != sc.Owner() {
		return nil, Entry{}, notFound(id) // another owner's ids do not exist for this one
	}
	if e.scope != sc {
		return nil, Entry{}, wrongScope(id)
	}
	e.expires = now.Add(m.lim.TTL)
	m.lru.MoveToBack(e.el)
	return slices.Clone(e.value), e.entry, nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, sc Scope, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[id]
	if e == nil || e.scope != sc {
		return false, nil
	}
	m.removeLocked(e)
	return true, nil
}

// DropSession implements Store.
func (m *Memory) DropSession(_ context.Context, sessionKey string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.entries {
		if e.scope.SessionKey == sessionKey && e.scope.Principal == "" {
			m.removeLocked(e)
		}
	}
	return nil
}

// Stats reports the entries and bytes held.
func (m *Memory) Stats() (entries int, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(m.now())
	return len(m.entries), m.bytes
}

func (m *Memory) expireLocked(now time.Time) {
	for el := m.lru.Front(); el != nil; {
		e := el.Value.(*memEntry)
		if e.expires.After(now) {
			return
		}
		el = el.Next()
		m.removeLocked(e)
	}
}

func (m *Memory) removeLocked(e *memEntry) {
	delete(m.entries, e.id)
	m.lru.Remove(e.el)
	m.account(e.scope, -1, -int64(len(e.value)))
}

func (m *Memory) account(sc Scope, n int, bytes int64) {
	for _, u := range []struct {
		m   map[string]*usage
		key string
	}{{m.runs, sc.Key()}, {m.owners, sc.Owner()}} {
		x := u.m[u.key]
		if x == nil {
			x = &usage{}
			u.m[u.key] = x
		}
		x.n += n
		x.bytes += bytes
		if x.n <= 0 {
			delete(u.m, u.key)
		}
	}
	m.bytes += bytes
}
