// Package trajtest is the trajectory recorder tests share: an api.Trajectory that keeps every
// event in memory, for a test to look at what a runtime, a loop or a gateway recorded.
package trajtest

import (
	"slices"
	"sync"

	"github.com/codemode-go/codemode/api"
)

// Recorder keeps every event it is given, in order; it is safe for concurrent use (runs record
// from their own goroutines). The zero value is ready.
type Recorder struct {
	mu  sync.Mutex
	evs []api.TrajectoryEvent
}

// Record keeps ev.
func (r *Recorder) Record(ev api.TrajectoryEvent) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

// Events returns a copy of the events of that kind so far, in order; kind "" means all of them.
func (r *Recorder) Events(kind string) []api.TrajectoryEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	if kind == "" {
		return slices.Clone(r.evs)
	}
	var out []api.TrajectoryEvent
	for _, ev := range r.evs {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// Count is the number of events of that kind so far ("" means all).
func (r *Recorder) Count(kind string) int { return len(r.Events(kind)) }
