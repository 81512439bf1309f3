// Package admission bounds the code-mode execs and waits that run at once in a process, so
// that a burst of clients cannot take the host down: 80 parallel execs that each fill a 64 MiB
// guest heap once took a gateway to 10 GB of RSS.
//
// A Controller hands out slots. A slot is one running VM: at most MaxRunning of them, and never
// more than MemoryBudget / SlotBytes, so running VMs × their memory limit stay within the budget.
// Callers beyond that wait in a bounded queue that is fair between sessions: slots go round-robin
// to the sessions that are waiting, so one session's flood of execs cannot starve another
// session's single exec. When the queue is full, a newcomer takes the place of the newest waiter
// of the session with the most waiters (if that session has more than the newcomer's); otherwise
// the newcomer is refused. Refusals are immediate and carry the code "overloaded".
package admission

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Config sizes a Controller. Use Derive to fill zero values from the machine.
type Config struct {
	// MaxRunning bounds the slots held at once (before the memory budget).
	MaxRunning int
	// MaxQueued bounds the callers waiting for a slot (0: none wait).
	MaxQueued int
	// MemoryBudget and SlotBytes: at most MemoryBudget/SlotBytes slots (when both are set).
	MemoryBudget int64
	SlotBytes    int64
	// MaxWait bounds how long a caller waits in the queue (0: until its context ends).
	MaxWait time.Duration
	// IdleAfter and OnIdle: OnIdle runs once the controller has had no slot in use for
	// IdleAfter after a burst (to hand pooled memory back to the OS). Optional.
	IdleAfter time.Duration
	OnIdle    func()
}

// Error is a refusal. Its Code is "overloaded".
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Code is the result code callers report (api.CodeOverloaded).
func (e *Error) Code() string { return "overloaded" }

// Controller is a fair, bounded admission queue. It is safe for concurrent use.
type Controller struct {
	maxRunning int // effective: MaxRunning capped by the memory budget
	maxQueued  int
	maxWait    time.Duration
	idleAfter  time.Duration
	onIdle     func()

	mu      sync.Mutex
	running int
	queued  int
	queues  map[string][]*waiter // per session, oldest first
	ring    []string             // sessions with waiters, in round-robin order
	idle    *time.Timer
	burst   bool // a slot was used since the last OnIdle

	rejected atomic.Uint64
}

type waiter struct {
	session string
	ready   chan struct{} // closed when granted or refused
	granted bool
	err     error
}

// New creates a controller. MaxRunning < 1 is treated as 1.
func New(c Config) *Controller {
	n := max(c.MaxRunning, 1)
	if c.MemoryBudget > 0 && c.SlotBytes > 0 {
		n = max(1, min(n, int(c.MemoryBudget/c.SlotBytes)))
	}
	return &Controller{maxRunning: n, maxQueued: max(c.MaxQueued, 0), maxWait: c.MaxWait,
		idleAfter: c.IdleAfter, onIdle: c.OnIdle, queues: map[string][]*waiter{}}
}

// MaxRunning is the effective number of slots (after the memory budget).
func (c *Controller) MaxRunning() int { return c.maxRunning }

// Stats reports the slots in use, the callers queued and the refusals so far.
func (c *Controller) Stats() (running, queued int, rejected uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running, c.queued, c.rejected.Load()
}

// Acquire takes a slot for session, waiting in the queue if needed. The release function must
// be called exactly once when the VM is gone; it is safe to call more than once. The error is
// an *Error when refused, or ctx's error.
func (c *Controller) Acquire(ctx context.Context, session string) (release func(), err error) {
	c.mu.Lock()
	if c.running < c.maxRunning && c.queued == 0 {
		c.grantLocked()
		c.mu.Unlock()
		return c.releaser(), nil
	}
	if err := c.enqueueLocked(session); err != nil {
		c.mu.Unlock()
		c.rejected.Add(1)
		return nil, err
	}
	w := c.queues[session][len(c.queues[session])-1]
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
			c.releaseLocked()
			return nil, ctx.Err()
		}
		return c.releaser(), nil
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

func (c *Controller) grantLocked() {
	c.running++
	c.burst = true
	if c.idle != nil {
		c.idle.Stop()
	}
}

func (c *Controller) releaser() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.releaseLocked()
			c.mu.Unlock()
		})
	}
}

// releaseLocked frees a slot and grants the free slots round-robin to waiting sessions.
func (c *Controller) releaseLocked() {
	c.running--
	for c.running < c.maxRunning && c.queued > 0 {
		s := c.ring[0]
		q := c.queues[s]
		w := q[0]
		c.queues[s] = q[1:]
		c.queued--
		c.ring = c.ring[1:]
		if len(c.queues[s]) > 0 {
			c.ring = append(c.ring, s) // to the back of the round
		} else {
			delete(c.queues, s)
		}
		w.granted = true
		close(w.ready)
		c.grantLocked()
	}
	if c.running == 0 && c.queued == 0 && c.burst && c.onIdle != nil && c.idleAfter > 0 {
		if c.idle == nil {
			c.idle = time.AfterFunc(c.idleAfter, c.fireIdle)
		} else {
			c.idle.Reset(c.idleAfter)
		}
	}
}

func (c *Controller) fireIdle() {
	c.mu.Lock()
	fire := c.running == 0 && c.burst
	if fire {
		c.burst = false
	}
	c.mu.Unlock()
	if fire {
		c.onIdle()
	}
}

// enqueueLocked queues a waiter for session, pushing out another session's newest waiter when
// the queue is full and that session holds more of it.
func (c *Controller) enqueueLocked(session string) error {
	if c.queued >= c.maxQueued {
		victim, most := "", 0
		for s, q := range c.queues {
			if len(q) > most || (len(q) == most && s < victim) {
				victim, most = s, len(q)
			}
		}
		if c.maxQueued == 0 || most <= len(c.queues[session])+1 {
			return &Error{fmt.Sprintf("code mode is overloaded: %d execs/waits are running and %d are queued (runtime.admission); retry later",
				c.running, c.queued)}
		}
		q := c.queues[victim]
		w := q[len(q)-1]
		c.removeLocked(w)
		w.err = &Error{"code mode is overloaded: this session has the most execs queued, and another session's exec took the place of this one; retry later"}
		close(w.ready)
	}
	w := &waiter{session: session, ready: make(chan struct{})}
	if len(c.queues[session]) == 0 {
		c.ring = append(c.ring, session)
	}
	c.queues[session] = append(c.queues[session], w)
	c.queued++
	return nil
}

// removeLocked takes a waiting (not granted) waiter out of the queue.
func (c *Controller) removeLocked(w *waiter) {
	q := c.queues[w.session]
	for i, x := range q {
		if x == w {
			q = append(q[:i:i], q[i+1:]...)
			c.queued--
			break
		}
	}
	if len(q) > 0 {
		c.queues[w.session] = q
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
