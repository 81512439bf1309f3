package runstore

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
)

type fakeRun struct{ closed atomic.Int32 }

func (f *fakeRun) Close() { f.closed.Add(1) }

var scope = api.RunContext{AgentID: "a", SessionKey: "s", SessionID: "sid", RunID: "r"}

func TestAcquireRules(t *testing.T) { // W3
	s := New(time.Minute)
	defer s.Close()
	f := &fakeRun{}
	id := NewID()
	if err := s.Put(id, scope, f, 100); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		id    string
		scope api.RunContext
		want  error
	}{
		{"run_nope", scope, ErrUnavailable},
		{id, api.RunContext{AgentID: "a", SessionKey: "other", SessionID: "sid", RunID: "r"}, ErrWrongSession},
		{id, api.RunContext{AgentID: "b", SessionKey: "s", SessionID: "sid", RunID: "r"}, ErrWrongSession},
		{id, api.RunContext{AgentID: "a", SessionKey: "s", SessionID: "sid", RunID: "r2"}, ErrWrongRun},
	}
	for _, c := range cases {
		if _, err := s.Acquire(c.id, c.scope); !errors.Is(err, c.want) {
			t.Errorf("Acquire(%s, %+v) = %v, want %v", c.id, c.scope, err, c.want)
		}
	}
	e, err := s.Acquire(id, scope)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(id, scope); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Acquire: %v", err)
	}
	s.Release(e, 200)
	if s.Bytes() != 200 {
		t.Fatalf("bytes %d", s.Bytes())
	}
	e, _ = s.Acquire(id, scope)
	s.Remove(e)
	if f.closed.Load() != 1 || s.Len() != 0 {
		t.Fatalf("closed %d len %d", f.closed.Load(), s.Len())
	}
	if _, err := s.Acquire(id, scope); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("after Remove: %v", err)
	}
}

func TestCap(t *testing.T) { // W5: the store's cap comes from its limits (DefaultRuns when unset)
	for _, c := range []struct{ set, want int }{{0, DefaultRuns}, {5, 5}} {
		s := NewWithLimits(time.Minute, Limits{Runs: c.set})
		for i := 0; i < c.want; i++ {
			sc := scope
			sc.SessionKey = fmt.Sprint("s", i) // one session each: only the store's cap applies
			if err := s.Put(NewID(), sc, &fakeRun{}, 1); err != nil {
				t.Fatal(i, err)
			}
		}
		if err := s.Put(NewID(), scope, &fakeRun{}, 1); !errors.Is(err, ErrTooMany) || err.Error() != "too many suspended code mode runs." {
			t.Fatalf("%v", err)
		}
		s.Close()
	}
}

// issue 18 item 5: with the shares the configuration gives by default (16 runs per session),
// 5 sessions of one principal × 16 suspended runs all fit, the 17th of a session is refused
// with a message naming the session's share, and a principal's share bounds all its sessions
// while another principal still gets in.
func TestSharesPerSessionAndPrincipal(t *testing.T) {
	s := NewWithLimits(time.Minute, Limits{Runs: 1000, SessionRuns: 16, PrincipalRuns: 96})
	defer s.Close()
	sess := func(p string, i int) api.RunContext {
		return api.RunContext{Principal: p, AgentID: "a", SessionKey: fmt.Sprint(p, "/s", i)}
	}
	for i := range 5 {
		for j := range 16 {
			if err := s.Put(NewID(), sess("tenant", i), &fakeRun{}, 1); err != nil {
				t.Fatalf("session %d run %d: %v", i, j, err)
			}
		}
		if err := s.Put(NewID(), sess("tenant", i), &fakeRun{}, 1); !errors.Is(err, ErrTooManySession) {
			t.Fatalf("17th run of session %d: %v", i, err)
		}
	}
	// 80 of 96 used: one more session gets 16, the next is refused by the principal's share.
	for range 16 {
		if err := s.Put(NewID(), sess("tenant", 5), &fakeRun{}, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(NewID(), sess("tenant", 6), &fakeRun{}, 1); !errors.Is(err, ErrTooManyPrincipal) {
		t.Fatalf("past the principal's share: %v", err)
	}
	if err := s.Put(NewID(), sess("other", 0), &fakeRun{}, 1); err != nil {
		t.Fatalf("another principal: %v", err)
	}
	// Without a principal, the session key is the principal.
	if got, want := Principal(api.RunContext{SessionKey: "k"}), Principal(api.RunContext{Principal: "k"}); got == want {
		t.Fatalf("a session key and a principal of the same text must not share a share: %q", got)
	}
}

func TestExpiryClosesRuns(t *testing.T) { // W7: expired runs release their work without any caller
	s := New(50 * time.Millisecond)
	defer s.Close()
	runs := make([]*fakeRun, 5)
	for i := range runs {
		runs[i] = &fakeRun{}
		if err := s.Put(NewID(), scope, runs[i], 1); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		all := true
		for _, r := range runs {
			all = all && r.closed.Load() == 1
		}
		if all && s.Len() == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("expired runs were not closed: %d left", s.Len())
}

func TestCancel(t *testing.T) { // W7
	s := New(time.Minute)
	defer s.Close()
	a, b, c := &fakeRun{}, &fakeRun{}, &fakeRun{}
	ida, idb, idc := NewID(), NewID(), NewID()
	s.Put(ida, scope, a, 1)
	s.Put(idb, scope, b, 1)
	s.Put(idc, api.RunContext{SessionKey: "other"}, c, 1)
	if !s.Cancel(ida) || s.Cancel(ida) {
		t.Fatal("Cancel result")
	}
	if _, err := s.Acquire(ida, scope); !errors.Is(err, ErrCancelled) {
		t.Fatalf("%v", err)
	}
	if n := s.CancelSession("s"); n != 1 || b.closed.Load() != 1 || c.closed.Load() != 0 {
		t.Fatalf("session cancel %d", n)
	}
	// Cancelling a run while a wait holds it: the wait's Release drops it.
	e, _ := s.Acquire(idc, api.RunContext{SessionKey: "other"})
	s.Cancel(idc)
	if c.closed.Load() != 0 {
		t.Fatal("closed while busy")
	}
	s.Release(e, 1)
	waitFor(t, func() bool { return c.closed.Load() == 1 })
}

func TestCloseDropsEverything(t *testing.T) { // W4: nothing survives shutdown
	s := New(time.Minute)
	runs := []*fakeRun{{}, {}, {}}
	for _, r := range runs {
		s.Put(NewID(), scope, r, 1)
	}
	s.Close()
	for _, r := range runs {
		if r.closed.Load() != 1 {
			t.Fatal("run survived Close")
		}
	}
	if err := s.Put(NewID(), scope, &fakeRun{}, 1); err == nil {
		t.Fatal("Put after Close")
	}
}

func TestIDsAreUnguessable(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 10000; i++ {
		id := NewID()
		if seen[id] || len(id) < 26 {
			t.Fatalf("weak id %q", id)
		}
		seen[id] = true
	}
}

func TestHammer(t *testing.T) { // concurrent Put/Acquire/Release/Cancel under -race
	s := New(20 * time.Millisecond)
	defer s.Close()
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				id := fmt.Sprintf("run_%d_%d", g, i)
				sc := api.RunContext{SessionKey: fmt.Sprint(g % 3)}
				if s.Put(id, sc, &fakeRun{}, 10) != nil {
					continue
				}
				if e, err := s.Acquire(id, sc); err == nil {
					if i%2 == 0 {
						s.Release(e, 20)
					} else {
						s.Remove(e)
					}
				}
				if i%7 == 0 {
					s.CancelSession(sc.SessionKey)
				}
				s.Cancel(id)
			}
		}(g)
	}
	wg.Wait()
	waitFor(t, func() bool { return s.Len() == 0 && runtime.NumGoroutine() <= before+1 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// issue 18 item 5: runs of a principal belong to no session (any session of the principal may
// wait on them): the session share does not bound them, the principal's does.
func TestPrincipalRunsAreNoSessions(t *testing.T) {
	s := NewWithLimits(time.Minute, Limits{SessionRuns: 2, SessionBytes: 250, PrincipalRuns: 4})
	defer s.Close()
	own := api.RunContext{Principal: "tenant", SessionKey: PrincipalKey("tenant")}
	for i := range 4 {
		if err := s.Put(NewID(), own, &fakeRun{}, 100); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if err := s.Put(NewID(), own, &fakeRun{}, 100); !errors.Is(err, ErrTooManyPrincipal) {
		t.Fatalf("Put = %v, want ErrTooManyPrincipal", err)
	}
	sess := api.RunContext{SessionKey: "s"}
	for i, want := range []error{nil, nil, ErrTooManySession} {
		if err := s.Put(NewID(), sess, &fakeRun{}, 10); !errors.Is(err, want) {
			t.Fatalf("session run %d: %v, want %v", i, err, want)
		}
	}
}

func TestSessionLimits(t *testing.T) { // no session can use up the store for the others
	s := NewWithLimits(time.Minute, Limits{SessionRuns: 2, Bytes: 1000, SessionBytes: 600})
	defer s.Close()
	in := func(sess string) api.RunContext { return api.RunContext{SessionKey: sess} }
	cases := []struct {
		name  string
		sess  string
		bytes int
		want  error
	}{
		{"a first", "a", 100, nil},
		{"a second", "a", 100, nil},
		{"a third: per-session runs", "a", 1, ErrTooManySession},
		{"b too big for its share", "b", 700, ErrTooManyBytes},
		{"b fits", "b", 500, nil},
		{"c over the total", "c", 400, ErrTooManyBytes},
		{"c fits", "c", 300, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeRun{}
			if err := s.Put(NewID(), in(c.sess), f, c.bytes); !errors.Is(err, c.want) {
				t.Fatalf("Put = %v, want %v", err, c.want)
			}
		})
	}
	// Ending a session frees its share at once.
	if n := s.CancelSession("a"); n != 2 {
		t.Fatalf("cancelled %d", n)
	}
	if err := s.Put(NewID(), in("c"), &fakeRun{}, 100); err != nil {
		t.Fatal(err)
	}
}
