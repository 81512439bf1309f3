package admission

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/config"
)

func TestMemoryBudgetCapsSlots(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want int
	}{
		{"running only", Config{MaxRunning: 8}, 8},
		{"budget smaller", Config{MaxRunning: 8, MemoryBudget: 300 << 20, SlotBytes: 72 << 20}, 4},
		{"budget below one slot", Config{MaxRunning: 8, MemoryBudget: 10 << 20, SlotBytes: 72 << 20}, 1},
		{"zero", Config{}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := New(c.cfg).MaxRunning(); got != c.want {
				t.Fatalf("%d, want %d", got, c.want)
			}
		})
	}
}

func TestDerive(t *testing.T) {
	cfg := config.Default()
	c := Derive(cfg)
	if c.MaxRunning != 4*runtime.NumCPU() || c.MaxQueued != 16*c.MaxRunning || c.MemoryBudget <= 0 || c.SlotBytes != cfg.Tools.CodeMode.MemoryLimitBytes+slotOverhead || c.MaxWait != cfg.Tools.CodeMode.Timeout() {
		t.Fatalf("%+v", c)
	}
	cfg.Runtime.Admission = config.Admission{MaxRunning: 3, MaxQueued: -1, MemoryBudgetBytes: 1 << 30}
	if c := Derive(cfg); c.MaxRunning != 3 || c.MaxQueued != 0 || c.MemoryBudget != 1<<30 {
		t.Fatalf("%+v", c)
	}
	if n := memTotal([]byte("MemFree: 1 kB\nMemTotal:       24576000 kB\n")); n != 24576000*1024 {
		t.Fatal(n)
	}
	if memTotal([]byte("garbage")) != 0 || PhysicalMemory() <= 0 {
		t.Fatal("meminfo")
	}
}

func TestQueueAndRefusal(t *testing.T) {
	c := New(Config{MaxRunning: 1, MaxQueued: 1})
	ctx := context.Background()
	rel, err := c.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := c.Acquire(ctx, "a")
		if r != nil {
			defer r()
		}
		got <- err
	}()
	waitQueued(t, c, 1)
	// The queue is full and session a holds no more of it than a newcomer of a would: refused.
	if _, err := c.Acquire(ctx, "a"); !isOverloaded(err) {
		t.Fatalf("want overloaded, got %v", err)
	}
	rel()
	rel() // idempotent
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if r, q, rej := c.Stats(); r != 0 || q != 0 || rej != 1 {
		t.Fatalf("stats %d %d %d", r, q, rej)
	}
}

func TestNoQueue(t *testing.T) {
	c := New(Config{MaxRunning: 1, MaxQueued: 0})
	rel, _ := c.Acquire(context.Background(), "a")
	defer rel()
	if _, err := c.Acquire(context.Background(), "b"); !isOverloaded(err) {
		t.Fatalf("got %v", err)
	}
}

func TestMaxWaitAndCancel(t *testing.T) {
	c := New(Config{MaxRunning: 1, MaxQueued: 4, MaxWait: 50 * time.Millisecond})
	rel, _ := c.Acquire(context.Background(), "a")
	defer rel()
	if _, err := c.Acquire(context.Background(), "b"); !isOverloaded(err) {
		t.Fatalf("timeout: got %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Acquire(ctx, "b"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: got %v", err)
	}
	if _, q, _ := c.Stats(); q != 0 {
		t.Fatalf("%d still queued", q)
	}
}

// A flood from one session leaves another session's single call served: it takes a queue
// place from the flooder and gets the next slot in the round.
func TestFairBetweenSessions(t *testing.T) {
	c := New(Config{MaxRunning: 2, MaxQueued: 8})
	ctx := context.Background()
	var holds []func()
	for range 2 {
		r, _ := c.Acquire(ctx, "flood")
		holds = append(holds, r)
	}
	var served, refused atomic.Int32
	var wg sync.WaitGroup
	for range 20 { // far more than the queue holds
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Acquire(ctx, "flood")
			if err != nil {
				refused.Add(1)
				return
			}
			served.Add(1)
			time.Sleep(time.Millisecond)
			r()
		}()
	}
	waitQueued(t, c, 8)
	single := make(chan error, 1)
	go func() {
		r, err := c.Acquire(ctx, "single")
		if err == nil {
			r()
		}
		single <- err
	}()
	// The single call got a place: the queue stays at 8 and one flooder was pushed out.
	waitFor(t, func() bool { _, q, rej := c.Stats(); return q == 8 && rej >= 13 })
	// Slots go round-robin between the two waiting sessions: single is served within two
	// grants, however many flood calls wait.
	holds[0]()
	holds[1]()
	if err := <-single; err != nil {
		t.Fatalf("single call refused: %v", err)
	}
	wg.Wait()
	if served.Load()+refused.Load() != 20 || refused.Load() < 13 {
		t.Fatalf("served %d refused %d", served.Load(), refused.Load())
	}
	if r, q, _ := c.Stats(); r != 0 || q != 0 {
		t.Fatalf("left %d running %d queued", r, q)
	}
}

func TestHammer(t *testing.T) { // invariants under concurrency: never more than MaxRunning
	c := New(Config{MaxRunning: 3, MaxQueued: 10, MaxWait: time.Second})
	var now, peak atomic.Int32
	var wg sync.WaitGroup
	before := runtime.NumGoroutine()
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*time.Millisecond)
			defer cancel()
			r, err := c.Acquire(ctx, string(rune('a'+i%5)))
			if err != nil {
				return
			}
			n := now.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(100 * time.Microsecond)
			now.Add(-1)
			r()
		}()
	}
	wg.Wait()
	if peak.Load() > 3 {
		t.Fatalf("peak %d running", peak.Load())
	}
	if r, q, _ := c.Stats(); r != 0 || q != 0 {
		t.Fatalf("left %d running %d queued", r, q)
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before })
}

func TestOnIdle(t *testing.T) {
	fired := make(chan struct{}, 4)
	c := New(Config{MaxRunning: 1, IdleAfter: 10 * time.Millisecond, OnIdle: func() { fired <- struct{}{} }})
	r, _ := c.Acquire(context.Background(), "a")
	r()
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal("OnIdle never ran after a burst")
	}
	time.Sleep(50 * time.Millisecond)
	if len(fired) != 0 {
		t.Fatal("OnIdle ran twice for one burst")
	}
}

func isOverloaded(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code() == "overloaded"
}

func waitQueued(t *testing.T, c *Controller, n int) {
	t.Helper()
	waitFor(t, func() bool { _, q, _ := c.Stats(); return q >= n })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}
