package codemode

import (
	"container/list"
	"sync"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/dispatch"
)

// runCounters keeps the telemetry counters of recent runs (Y1): searches, describes and calls
// are cumulative for a run — every exec and wait with the same agent, session and run id adds
// to the same counters — not per exec. The map is an LRU bounded to max runs, and a session's
// entries go when the session ends, so a long-lived gateway does not grow with its history.
type runCounters struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *runCounterEntry, most recent first
	byKey map[api.RunContext]*list.Element
}

type runCounterEntry struct {
	key api.RunContext
	c   *dispatch.Counters
}

func newRunCounters(max int) *runCounters {
	return &runCounters{max: max, order: list.New(), byKey: map[api.RunContext]*list.Element{}}
}

// runKey is the part of a run context that identifies a run.
func runKey(rc api.RunContext) api.RunContext {
	return api.RunContext{AgentID: rc.AgentID, SessionKey: rc.SessionKey, SessionID: rc.SessionID, RunID: rc.RunID}
}

// get returns the counters of rc's run, creating them on first use.
func (r *runCounters) get(rc api.RunContext) *dispatch.Counters {
	k := runKey(rc)
	r.mu.Lock()
	defer r.mu.Unlock()
	if el, ok := r.byKey[k]; ok {
		r.order.MoveToFront(el)
		return el.Value.(*runCounterEntry).c
	}
	e := &runCounterEntry{key: k, c: &dispatch.Counters{}}
	r.byKey[k] = r.order.PushFront(e)
	for r.order.Len() > r.max {
		last := r.order.Back()
		r.order.Remove(last)
		delete(r.byKey, last.Value.(*runCounterEntry).key)
	}
	return e.c
}

func (r *runCounters) forgetSession(sessionKey string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, el := range r.byKey {
		if k.SessionKey == sessionKey {
			r.order.Remove(el)
			delete(r.byKey, k)
		}
	}
}
