// Package admission bounds the code-mode execs and waits that run at once in a process, so
// that a burst of clients cannot take the host down: 80 parallel execs that each fill a 64 MiB
// guest heap once took a gateway to 10 GB of RSS.
//
// It counts the two resources a VM uses separately (issue 18 item 4). Memory: every live VM
// counts SlotBytes against MemoryBudget from its creation to its end, whether it computes or
// waits (at most MemoryBudget / SlotBytes VMs are resident). CPU: at most MaxRunning VMs compute
// at once; a VM that only waits for nested calls or timers gives its CPU share back (Slot.Idle)
// and asks for it again when it has work (Slot.Busy). So cells idle on a 10-second timer never
// keep another session's trivial exec waiting for a core they do not use.
//
// Callers beyond the limits wait in a bounded queue that is fair between sessions: whenever a
// CPU share frees up it goes to the waiting session that holds the fewest running VMs (ties in
// round-robin order), so no session holds more than its share while another waits, and within
// a session a VM that already exists (resuming) goes before a new one. When the queue of new
// VMs is full, a newcomer takes the place of the newest waiter of the session with the most
// waiters (if that session has more than the newcomer's); otherwise the newcomer is refused.
// Refusals are immediate and carry the code "overloaded".
package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Config sizes a Controller. Use Derive to fill zero values from the machine.
type Config struct {
	// MaxRunning bounds the VMs computing at once.
	MaxRunning int
	// MaxQueued bounds the callers waiting to create a VM (0: none wait). VMs waiting to
	// continue after being idle are not counted: their number is bounded by the memory budget.
	MaxQueued int
	// MemoryBudget and SlotBytes: at most MemoryBudget/SlotBytes VMs are alive at once, idle
	// ones included (when both are set; otherwise the number of live VMs is not bounded here).
	MemoryBudget int64
	SlotBytes    int64
	// MaxWait bounds how long a caller waits in the queue for a new VM (0: until its context
	// ends).
	MaxWait time.Duration
}

// Error is a refusal. Its Code is "overloaded".
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Code is the result code callers report (api.CodeOverloaded).
func (e *Error) Code() string { return "overloaded" }

// Controller is a fair, bounded admission queue. It is safe for concurrent use.
type Controller struct {
	maxRunning  int // effective: MaxRunning capped by maxResident
	maxResident int // 0: unbounded
	maxQueued   int
	maxWait     time.Duration

	mu       sync.Mutex
	running  int            // VMs computing (holding a CPU share)
	resident int            // VMs alive
	queued   int            // callers waiting for a new VM
	resuming int            // idle VMs waiting for a CPU share
	held     map[string]int // running VMs per session
	queues   map[string]*sessionQueue
	ring     []string // sessions with waiters, in round-robin order

	rejected atomic.Uint64
}

type sessionQueue struct {
	fresh  []*waiter // new VMs, oldest first
	resume []*waiter // existing VMs that want to run again, oldest first
}

func (q *sessionQueue) empty() bool { return len(q.fresh) == 0 && len(q.resume) == 0 }

type waiter struct {
	session string
	resume  bool
	ready   chan struct{} // closed when granted or refused
	granted bool
	err     error
}

// New creates a controller. MaxRunning < 1 is treated as 1.
func New(c Config) *Controller {
	n := max(c.MaxRunning, 1)
	resident := 0
	if c.MemoryBudget > 0 && c.SlotBytes > 0 {
		resident = max(1, int(c.MemoryBudget/c.SlotBytes))
		n = min(n, resident)
	}
	return &Controller{maxRunning: n, maxResident: resident, maxQueued: max(c.MaxQueued, 0), maxWait: c.MaxWait,
		held: map[string]int{}, queues: map[string]*sessionQueue{}}
}

// MaxRunning is the effective number of VMs that may compute at once (after the memory budget).
func (c *Controller) MaxRunning() int { return c.maxRunning }

// MaxResident is the number of VMs the memory budget lets live at once, idle ones included (0:
// not bounded by memory).
func (c *Controller) MaxResident() int { return c.maxResident }

// Stats reports the VMs computing, the callers waiting (for a new VM or to continue one) and the
// refusals so far.
func (c *Controller) Stats() (running, queued int, rejected uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running, c.queued + c.resuming, c.rejected.Load()
}

// Resident is the number of live VMs, computing or idle.
func (c *Controller) Resident() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resident
}

// Acquire takes a slot for session that is held (running) until release: for callers that
// cannot report idleness. The release function is safe to call more than once. The error is an
// *Error when refused, or ctx's error.
func (c *Controller) Acquire(ctx context.Context, session string) (release func(), err error) {
	s, err := c.AcquireSlot(ctx, session)
	if err != nil {
		return nil, err
	}
	return s.Release, nil
}

// Slot is one live VM's admission: its memory from AcquireSlot to Release, its CPU share while
// it is busy (it starts busy).
type Slot struct {
	c       *Controller
	session string
	// mu guards busy and released: one VM goroutine drives the slot, Release may come from
	// another (it is not held while Busy waits).
	mu       sync.Mutex
	busy     bool
	released bool
}

// AcquireSlot takes a slot for a new VM of session, waiting in the queue if needed (at most
// MaxWait). The error is an *Error when refused, or ctx's error.
func (c *Controller) AcquireSlot(ctx context.Context, session string) (*Slot, error) {
	c.mu.Lock()
	if c.canStartLocked() && c.queued == 0 && c.resuming == 0 {
		c.startLocked(session, false)
		c.mu.Unlock()
		return &Slot{c: c, session: session, busy: true}, nil
	}
	if err := c.enqueueLocked(session); err != nil {
		c.mu.Unlock()
		c.rejected.Add(1)
		return nil, err
	}
	q := c.queues[session]
	w := q.fresh[len(q.fresh)-1]
	c.mu.Unlock()

	var timeout <-chan time.Time
	if c.maxWait > 0 {
		t := time.NewTimer(c.maxWait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-w.ready:
	case <-ctx.Done():
	case <-timeout:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.granted {
		if ctx.Err() != nil { // granted as the caller gave up: hand the slot on
			c.stopLocked(session)
			c.endLocked()
			return nil, ctx.Err()
		}
		return &Slot{c: c, session: session, busy: true}, nil
	}
	if w.err != nil { // pushed out by another session
		c.rejected.Add(1)
		return nil, w.err
	}
	c.removeLocked(w)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	c.rejected.Add(1)
	return nil, &Error{fmt.Sprintf("code mode is overloaded: no exec slot freed up within %v (%d running, %d queued; runtime.admission); retry later",
		c.maxWait, c.running, c.queued)}
}

// Idle gives the VM's CPU share back while it waits for host work; its memory still counts.
func (s *Slot) Idle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.busy || s.released {
		return
	}
	s.busy = false
	c := s.c
	c.mu.Lock()
	c.stopLocked(s.session)
	c.grantLocked()
	c.mu.Unlock()
}

// errDeadline is Busy's error when the deadline passed before a CPU share was free.
var errDeadline = errors.New("admission: no CPU share before the deadline")

// Busy takes a CPU share again for an idle VM, waiting (fairly, before new VMs of its session)
// until one is free, ctx ends or deadline passes.
func (s *Slot) Busy(ctx context.Context, deadline time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy || s.released {
		return nil
	}
	c := s.c
	c.mu.Lock()
	if c.running < c.maxRunning && c.queued == 0 && c.resuming == 0 {
		c.running++
		c.held[s.session]++
		c.mu.Unlock()
		s.busy = true
		return nil
	}
	w := &waiter{session: s.session, resume: true, ready: make(chan struct{})}
	q := c.queueLocked(s.session)
	q.resume = append(q.resume, w)
	c.resuming++
	c.grantLocked() // a share may be free with only new VMs waiting for memory
	c.mu.Unlock()
	s.mu.Unlock()

	t := time.NewTimer(max(time.Until(deadline), 0))
	select {
	case <-w.ready:
	case <-ctx.Done():
	case <-t.C:
	}
	t.Stop()
	s.mu.Lock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.granted {
		if s.released { // released while it waited: hand the share on
			c.stopLocked(s.session)
			c.grantLocked()
			return nil
		}
		s.busy = true
		return nil
	}
	c.removeLocked(w)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errDeadline
}

// Release ends the slot: the VM is gone. Safe to call more than once.
func (s *Slot) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return
	}
	s.released = true
	c := s.c
	c.mu.Lock()
	if s.busy {
		c.stopLocked(s.session)
	}
	s.busy = false
	c.endLocked()
	c.mu.Unlock()
}

// canStartLocked reports whether a new VM could start now (CPU and memory).
func (c *Controller) canStartLocked() bool {
	return c.running < c.maxRunning && (c.maxResident == 0 || c.resident < c.maxResident)
}

// startLocked counts a new (or, with resume, an existing) VM running for session.
func (c *Controller) startLocked(session string, resume bool) {
	c.running++
	c.held[session]++
	if !resume {
		c.resident++
	}
}

// stopLocked takes a running VM's CPU share back (the caller grants it on).
func (c *Controller) stopLocked(session string) {
	c.running--
	if c.held[session]--; c.held[session] <= 0 {
		delete(c.held, session)
	}
}

// endLocked counts a VM gone and hands the freed resources on.
func (c *Controller) endLocked() {
	c.resident--
	c.grantLocked()
}

// grantLocked hands free CPU shares (and memory, for new VMs) to waiters: each to the session
// holding the fewest running VMs among those that can use it now, in round-robin order on ties;
// within a session, resuming VMs first.
func (c *Controller) grantLocked() {
	for c.running < c.maxRunning && c.queued+c.resuming > 0 {
		memFree := c.maxResident == 0 || c.resident < c.maxResident
		best, bestHeld := -1, 0
		for i, s := range c.ring {
			q := c.queues[s]
			if len(q.resume) == 0 && (len(q.fresh) == 0 || !memFree) {
				continue
			}
			if h := c.held[s]; best < 0 || h < bestHeld {
				best, bestHeld = i, h
			}
		}
		if best < 0 {
			return // only new VMs wait, and memory is full
		}
		s := c.ring[best]
		q := c.queues[s]
		var w *waiter
		if len(q.resume) > 0 {
			w, q.resume = q.resume[0], q.resume[1:]
			c.resuming--
		} else {
			w, q.fresh = q.fresh[0], q.fresh[1:]
			c.queued--
		}
		c.ring = append(c.ring[:best:best], c.ring[best+1:]...)
		if q.empty() {
			delete(c.queues, s)
		} else {
			c.ring = append(c.ring, s) // to the back of the round
		}
		w.granted = true
		close(w.ready)
		c.startLocked(s, w.resume)
	}
}

// queueLocked returns session's queue, creating it (and its place in the round).
func (c *Controller) queueLocked(session string) *sessionQueue {
	q := c.queues[session]
	if q == nil {
		q = &sessionQueue{}
		c.queues[session] = q
		c.ring = append(c.ring, session)
	}
	return q
}

// enqueueLocked queues a new-VM waiter for session, pushing out another session's newest waiter
// when the queue is full and that session holds more of it.
func (c *Controller) enqueueLocked(session string) error {
	if c.queued >= c.maxQueued {
		victim, most := "", 0
		for s, q := range c.queues {
			if len(q.fresh) > most || (len(q.fresh) == most && s < victim) {
				victim, most = s, len(q.fresh)
			}
		}
		mine := 0
		if q := c.queues[session]; q != nil {
			mine = len(q.fresh)
		}
		if c.maxQueued == 0 || most <= mine+1 {
			return &Error{fmt.Sprintf("code mode is overloaded: %d execs/waits are running and %d are queued (runtime.admission); retry later",
				c.running, c.queued)}
		}
		q := c.queues[victim]
		w := q.fresh[len(q.fresh)-1]
		c.removeLocked(w)
		w.err = &Error{"code mode is overloaded: this session has the most execs queued, and another session's exec took the place of this one; retry later"}
		close(w.ready)
	}
	q := c.queueLocked(session)
	q.fresh = append(q.fresh, &waiter{session: session, ready: make(chan struct{})})
	c.queued++
	return nil
}

// removeLocked takes a waiting (not granted) waiter out of the queue.
func (c *Controller) removeLocked(w *waiter) {
	q := c.queues[w.session]
	if q == nil {
		return
	}
	list := &q.fresh
	if w.resume {
		list = &q.resume
	}
	for i, x := range *list {
		if x == w {
			*list = append((*list)[:i:i], (*list)[i+1:]...)
			if w.resume {
				c.resuming--
			} else {
				c.queued--
			}
			break
		}
	}
	if !q.empty() {
		return
	}
	delete(c.queues, w.session)
	for i, s := range c.ring {
		if s == w.session {
			c.ring = append(c.ring[:i:i], c.ring[i+1:]...)
			break
		}
	}
}
