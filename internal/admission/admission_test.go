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
			r() // before the send: the stats below must see it released
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

// issue 18 item 4: an idle VM gives its CPU share back and keeps its memory; it gets the share
// back before new VMs of the session, and a session holding more running VMs than another never
// gets the next share while the other waits.
func TestIdleSlots(t *testing.T) {
	ctx := context.Background()
	c := New(Config{MaxRunning: 1, MaxQueued: 8, MemoryBudget: 3 << 20, SlotBytes: 1 << 20})
	if c.MaxRunning() != 1 || c.MaxResident() != 3 {
		t.Fatalf("%d %d", c.MaxRunning(), c.MaxResident())
	}
	a, err := c.AcquireSlot(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	a.Idle()
	// The CPU is free: another session runs at once, while a's memory still counts.
	b, err := c.AcquireSlot(ctx, "b")
	if err != nil || c.Resident() != 2 {
		t.Fatalf("%v resident %d", err, c.Resident())
	}
	// a wants to run again: it waits for b's share, and gets it before a new VM of b's.
	got := make(chan string, 2)
	go func() {
		if err := a.Busy(ctx, time.Now().Add(5*time.Second)); err == nil {
			got <- "a"
		}
	}()
	waitQueued(t, c, 1)
	go func() {
		if s, err := c.AcquireSlot(ctx, "b"); err == nil {
			got <- "b2"
			s.Release()
		}
	}()
	waitQueued(t, c, 2)
	b.Release()
	if first := <-got; first != "a" {
		t.Fatalf("%s ran first", first)
	}
	a.Release()
	if second := <-got; second != "b2" {
		t.Fatal(second)
	}
	// Memory: with three VMs resident (idle), a fourth waits although the CPU is free.
	var idle []*Slot
	for range 3 {
		s, err := c.AcquireSlot(ctx, "m")
		if err != nil {
			t.Fatal(err)
		}
		s.Idle()
		idle = append(idle, s)
	}
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.AcquireSlot(tctx, "n"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a VM past the memory budget: %v", err)
	}
	// A Busy that cannot get the CPU before its deadline fails and the slot stays idle.
	hog, err := func() (*Slot, error) { idle[0].Release(); return c.AcquireSlot(ctx, "h") }()
	if err != nil {
		t.Fatal(err)
	}
	if err := idle[1].Busy(ctx, time.Now().Add(20*time.Millisecond)); err == nil {
		t.Fatal("Busy succeeded while the only CPU share was held")
	}
	hog.Release()
	for _, s := range idle {
		s.Release()
		s.Release() // idempotent
	}
	if r, q, _ := c.Stats(); r != 0 || q != 0 || c.Resident() != 0 {
		t.Fatalf("left %d running %d queued %d resident", r, q, c.Resident())
	}
}

// A session never holds more than its share while another waits: the flood session holds both
// shares and has more callers queued than x; the share it frees goes to x, not to itself.
func TestShareWhileOthersWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := New(Config{MaxRunning: 2, MaxQueued: 16})
	f1, _ := c.AcquireSlot(ctx, "flood")
	f2, _ := c.AcquireSlot(ctx, "flood")
	defer f2.Release()
	order := make(chan string, 8)
	for i, s := range []string{"flood", "flood", "flood", "x"} {
		go func() {
			sl, err := c.AcquireSlot(ctx, s)
			if err != nil {
				return
			}
			order <- s
			<-ctx.Done()
			sl.Release()
		}()
		waitQueued(t, c, i+1)
	}
	f1.Release()
	if first := <-order; first != "x" {
		t.Fatalf("the session holding both shares got the freed one while x waited: %s", first)
	}
}

func TestHammerIdle(t *testing.T) { // invariants with idle/busy transitions under concurrency
	c := New(Config{MaxRunning: 3, MaxQueued: 64, MemoryBudget: 6 << 20, SlotBytes: 1 << 20, MaxWait: 2 * time.Second})
	var running, peak, resident, peakResident atomic.Int32
	bump := func(n, p *atomic.Int32, d int32) {
		v := n.Add(d)
		for {
			old := p.Load()
			if v <= old || p.CompareAndSwap(old, v) {
				return
			}
		}
	}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.AcquireSlot(context.Background(), string(rune('a'+i%4)))
			if err != nil {
				return
			}
			bump(&resident, &peakResident, 1)
			for j := 0; j < 3; j++ {
				bump(&running, &peak, 1)
				time.Sleep(50 * time.Microsecond)
				running.Add(-1)
				s.Idle()
				time.Sleep(100 * time.Microsecond)
				if err := s.Busy(context.Background(), time.Now().Add(2*time.Second)); err != nil {
					break
				}
			}
			resident.Add(-1)
			s.Release()
		}()
	}
	wg.Wait()
	if peak.Load() > 3 || peakResident.Load() > 6 {
		t.Fatalf("peak %d running, %d resident", peak.Load(), peakResident.Load())
	}
	if r, q, _ := c.Stats(); r != 0 || q != 0 || c.Resident() != 0 {
		t.Fatalf("left %d %d %d", r, q, c.Resident())
	}
}
