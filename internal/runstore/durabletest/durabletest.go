// Package durabletest is the conformance suite every runstore.Durable passes: the in-process
// store and the Redis store run the same tests, so a deployment can switch backends knowing the
// semantics (scope, leases, expiry, cancellation, limits, results, heartbeats) are the same.
package durabletest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/runstore"
)

// Open returns two clients of one fresh, empty store with the given limits, closed when t ends.
// For a shared backend they are separate clients (two replicas); for an in-process store, the
// same value twice.
type Open func(t *testing.T, lim runstore.Limits) (a, b runstore.Durable)

// Scope is the scope the suite's runs belong to.
var Scope = api.RunContext{AgentID: "agent", SessionKey: "session-key", SessionID: "session-id", RunID: "run-1", SenderID: "sender", Channel: "chan"}

// waitBound is the generous hard bound for anything that must happen eventually (expiry).
const waitBound = 10 * time.Second

// Run runs the suite.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Open)
	}{
		{"Lifecycle", testLifecycle},
		{"Scope", testScope},
		{"PutReplace", testPutReplace},
		{"LeaseExclusive", testLeaseExclusive},
		{"LeaseExpiry", testLeaseExpiry},
		{"TTLExpiry", testTTLExpiry},
		{"HeldRunOutlivesTTL", testHeldRunOutlivesTTL},
		{"Cancel", testCancel},
		{"CancelWhileHeld", testCancelWhileHeld},
		{"CancelSession", testCancelSession},
		{"Caps", testCaps},
		{"Results", testResults},
		{"Heartbeat", testHeartbeat},
		{"Renew", testRenew},
		{"Unchanged", testUnchanged},
		{"InvalidArguments", testInvalidArguments},
		{"Hammer", testHammer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

// NewRecord makes a record of about n bytes with recognisable contents.
func NewRecord(scope api.RunContext, n int, tag byte) runstore.Record {
	snap := bytes.Repeat([]byte{tag}, n*3/4)
	state := []byte(fmt.Sprintf(`{"pending":[%d]}`, tag))
	state = append(state, bytes.Repeat([]byte{' '}, max(0, n-len(snap)-len(state)))...)
	return runstore.Record{Scope: scope, Snapshot: snap, State: state}
}

func sameRecord(t *testing.T, got, want runstore.Record) {
	t.Helper()
	if got.Scope != want.Scope || !bytes.Equal(got.Snapshot, want.Snapshot) || !bytes.Equal(got.State, want.State) {
		t.Fatalf("record differs: got scope %+v, %d+%d bytes; want scope %+v, %d+%d bytes",
			got.Scope, len(got.Snapshot), len(got.State), want.Scope, len(want.Snapshot), len(want.State))
	}
}

func is(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
	if want != nil && err.Error() != want.Error() {
		t.Fatalf("message %q, want %q", err.Error(), want.Error())
	}
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func usage(t *testing.T, s runstore.Durable) runstore.Usage {
	t.Helper()
	u, err := s.Usage(t.Context())
	ok(t, err)
	return u
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitBound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// W1, W4: a run is put, taken by one wait, put back changed, taken again, and deleted.
func testLifecycle(t *testing.T, open Open) {
	a, b := open(t, runstore.Limits{})
	ctx := t.Context()
	id := runstore.NewID()
	rec := NewRecord(Scope, 4000, 1)
	ok(t, a.Put(ctx, id, rec, time.Minute))
	rec.Snapshot[0] = 99 // the store keeps its own copy

	got, l, err := b.Acquire(ctx, id, Scope, "replica-b", time.Minute, "")
	ok(t, err)
	sameRecord(t, got, NewRecord(Scope, 4000, 1))
	if l.RunID != id || l.Holder != "replica-b" || l.Token == "" || l.Scope != Scope {
		t.Fatalf("lease %+v", l)
	}
	next := NewRecord(api.RunContext{AgentID: "ignored"}, 5000, 2)
	ok(t, b.Release(ctx, l, &next, nil, time.Minute))
	next.Scope = Scope // Release keeps the stored scope

	got, l, err = a.Acquire(ctx, id, Scope, "replica-a", time.Minute, "")
	ok(t, err)
	sameRecord(t, got, next)
	ok(t, a.Release(ctx, l, nil, nil, time.Minute)) // nil: keep the record
	got, l, err = b.Acquire(ctx, id, Scope, "replica-b", time.Minute, "")
	ok(t, err)
	sameRecord(t, got, next)
	if u := usage(t, a); u.Runs != 1 || u.Bytes < int64(next.Size()) {
		t.Fatalf("usage %+v with one run of %d bytes", u, next.Size())
	}
	ok(t, b.Delete(ctx, l))
	_, _, err = a.Acquire(ctx, id, Scope, "replica-a", time.Minute, "")
	is(t, err, runstore.ErrUnavailable)
	ok(t, b.Delete(ctx, l)) // gone already: not an error
	if u := usage(t, a); u != (runstore.Usage{}) {
		t.Fatalf("usage after delete %+v", u)
	}
}

// W3: the caller's scope must match the run's.
func testScope(t *testing.T, open Open) {
	a, b := open(t, runstore.Limits{})
	ctx := t.Context()
	id := runstore.NewID()
	ok(t, a.Put(ctx, id, NewRecord(Scope, 100, 1), time.Minute))
	with := func(f func(*api.RunContext)) api.RunContext { s := Scope; f(&s); return s }
	cases := []struct {
		name  string
		id    string
		scope api.RunContext
		want  error
	}{
		{"unknown run id", runstore.NewID(), Scope, runstore.ErrUnavailable},
		{"other agent", id, with(func(s *api.RunContext) { s.AgentID = "other" }), runstore.ErrWrongSession},
		{"other session key", id, with(func(s *api.RunContext) { s.SessionKey = "other" }), runstore.ErrWrongSession},
		{"other session id", id, with(func(s *api.RunContext) { s.SessionID = "other" }), runstore.ErrWrongSession},
		{"no session", id, api.RunContext{}, runstore.ErrWrongSession},
		{"other run", id, with(func(s *api.RunContext) { s.RunID = "run-2" }), runstore.ErrWrongRun},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := b.Acquire(ctx, c.id, c.scope, "h", time.Minute, "")
			is(t, err, c.want)
			is(t, b.AddResult(ctx, c.id, c.scope, "call-1", []byte("x")), c.want)
		})
	}
	// Sender and channel are not part of the check; an unknown run id on the caller's side is
	// accepted (the stored one is returned).
	_, l, err := b.Acquire(ctx, id, with(func(s *api.RunContext) { s.RunID, s.SenderID, s.Channel = "", "x", "y" }), "h", time.Minute, "")
	ok(t, err)
	if l.Scope != Scope {
		t.Fatalf("lease scope %+v", l.Scope)
	}
	ok(t, b.Delete(ctx, l))
}

// Put replaces a run nobody holds, in its own scope only.
func testPutReplace(t *testing.T, open Open) {
	a, b := open(t, runstore.Limits{})
	ctx := t.Context()
	id := runstore.NewID()
	ok(t, a.Put(ctx, id, NewRecord(Scope, 100, 1), time.Minute))
	other := Scope
	other.SessionKey = "intruder"
	is(t, b.Put(ctx, id, NewRecord(other, 100, 2), time.Minute), runstore.ErrWrongSession)
	otherRun := Scope
	otherRun.RunID = "run-2"
	is(t, b.Put(ctx, id, NewRecord(otherRun, 100, 2), time.Minute), runstore.ErrWrongRun)
	ok(t, b.Put(ctx, id, NewRecord(Scope, 200, 3), time.Minute))
	_, l, err := a.Acquire(ctx, id, Scope, "h", time.Minute, "")
	ok(t, err)
	is(t, b.Put(ctx, id, NewRecord(Scope, 100, 4), time.Minute), runstore.ErrBusy)
	got, _, err := func() (runstore.Record, runstore.Lease, error) {
		ok(t, a.Release(ctx, l, nil, nil, time.Minute))
		return b.Acquire(ctx, id, Scope, "h", time.Minute, "")
	}()
	ok(t, err)
	sameRecord(t, got, NewRecord(Scope, 200, 3))
}

// One wait at a time, fleet-wide: many goroutines on two clients race for each run and exactly
// one wins each round.
func testLeaseExclusive(t *testing.T, open Open) {
	a, b := open(t, runstore.Limits{})
	ctx := t.Context()
	id := runstore.NewID()
	ok(t, a.Put(ctx, id, NewRecord(Scope, 1000, 1), time.Minute))
	for round := range 5 {
		var wins atomic.Int32
		var winner atomic.Value
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := a
				if g%2 == 1 {
					s = b
				}
				<-start
				_, l, err := s.Acquire(ctx, id, Scope, fmt.Sprintf("g%d", g), time.Minute, "")
				switch {
				case err == nil:
					wins.Add(1)
					winner.Store(l)
				case !errors.Is(err, runstore.ErrBusy):
					t.Errorf("round %d: %v", round, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("round %d: %d winners", round, n)
		}
		ok(t, a.Release(ctx, winner.Load().(runstore.Lease), nil, nil, time.Minute))
	}
}

// A holder that dies lets the run go when its lease expires; when it comes back, it can neither
// overwrite nor delete the new holder's run.
func testLeaseExpiry(t *testing.T, open Open) {
	a, b := open(t, runstore.Limits{})
	ctx := t.Context()
	id := runstore.NewID()
	ok(t, a.Put(ctx, id, NewRecord(Scope, 1000, 1), time.Minute))
	_, slow, err := a.Acquire(ctx, id, Scope, "slow", 100*time.Millisecond, "")
	ok(t, err)
	var fresh runstore.Lease
	eventually(t, "another holder gets in after the lease expires", func() bool {
		var err error
		_, fresh, err = b.Acquire(ctx, id, Scope, "fresh", time.Minute, "")
		if err != nil && !errors.Is(err, runstore.ErrBusy) {
			t.Fatal(err)
		}
		return err == nil
	})
	stale := NewRecord(Scope, 1000, 66)
	is(t, a.Release(ctx, slow, &stale, nil, time.Minute), runstore.ErrLeaseLost)
	is(t, a.Delete(ctx, slow), runstore.ErrLeaseLost)
	_, err = a.Results(ctx, slow)
	is(t, err, runstore.ErrLeaseLost)
	newer := NewRecord(Scope, 1000, 2)
	ok(t, b.Release(ctx, fresh, &newer, nil, time.Minute))
	got, _, err := a.Acquire(ctx, id, Scope, "a", time.Minute, "")
	ok(t, err)
	sameRecord(t, got, newer)
}

// W2, W7: a run expires ttl after its last suspension, and its accounting goes with it.
func testTTLExpiry(t *testing.T, open Open) {
	a, b := open(t, runstore.Limits{})
	ctx := t.Context()
	id := runstore.NewID()
	ok(t, a.Put(ctx, id, NewRecord(Scope, 1000, 1), time.Minute))
	ok(t, a.AddResult(ctx, id, Scope, "call-1", []byte("result")))
	_, l, err := b.Acquire(ctx, id, Scope, "h", time.Minute, "")
	ok(t, err)
	ok(t, b.Release(ctx, l, nil, nil, 150*time.Millisecond))
	eventually(t, "the run expires", func() bool {
		err := a.Heartbeat(ctx, id, "probe", time.Minute) // a probe that does not extend the run
		if err != nil && !errors.Is(err, runstore.ErrUnavailable) {
			t.Fatal(err)
		}
		return err != nil
	})
	_, _, err = a.Acquire(ctx, id, Scope, "h", time.Minute, "")
	is(t, err, runstore.ErrUnavailable)
	is(t, a.AddResult(ctx, id, Scope, "call-2", nil), runstore.ErrUnavailable)
	if u := usage(t, b); u != (runstore.Usage{}) {
		t.Fatalf("usage after expiry %+v", u)
	}
}

// A run being waited on does not expire under its holder, even past its ttl.
func testHeldRunOutlivesTTL(t *testing.T, open Open) {
	a, _ := open(t, runstore.Limits{})
	ctx := t.Context()
	id := runstore.NewID()
	ok(t, a.Put(ctx, id, NewRecord(Scope, 100, 1), 50*time.Millisecond))
	_, l, err := a.Acquire(ctx, id, Scope, "h", time.Minute, "")
	if errors.Is(err, runstore.ErrUnavailable) {
		t.Skip("the machine is too slow to acquire within 50ms")
	}
	ok(t, err)
	time.Sleep(200 * time.Millisecond)
	_, err = a.Results(ctx, l)
	ok(t, err)
	ok(t, a.Release(ctx, l, nil, nil, time.Minute))
}

// W7: a cancelled run says so, to waits, puts, results and heartbeats.
func testCancel(t *testing.T, open Open) {
	a, b := open(t, runstore.Limits{})
	ctx := t.Context()
	id := runstore.NewID()
	ok(t, a.Put(ctx, id, NewRecord(Scope, 1000, 1), time.Minute))
	done, err := b.Cancel(ctx, id)
	ok(t, err)
	if !done {
		t.Fatal("Cancel of a live run reported false")
	}
	done, err = b.Cancel(ctx, id)
	ok(t, err)
	if done {
		t.Fatal("second Cancel reported true")
	}
	done, err = b.Cancel(ctx, runstore.NewID())
	ok(t, err)
	if done {
		t.Fatal("Cancel of an unknown run reported true")
	}
	_, _, err = a.Acquire(ctx, id, Scope, "h", time.Minute, "")
	is(t, err, runstore.ErrCancelled)
	is(t, a.Put(ctx, id, NewRecord(Scope, 1000, 1), time.Minute), runstore.ErrCancelled)
	is(t, a.AddResult(ctx, id, Scope, "call-1", []byte("x")), runstore.ErrCancelled)
	is(t, a.Heartbeat(ctx, id, "owner", time.Minute), runstore.ErrCancelled)
	if u := usage(t, a); u != (runstore.Usage{}) {
		t.Fatalf("usage after cancel %+v", u)
	}
}

// Cancelling a run during a wait: the holder's Release fails with ErrCancelled and stores
// nothing; its Delete is a no-op.
func testCancelWhileHeld(t *testing.T, open Open) {
	a, b := open(t, runstore.Limits{})
	ctx := t.Context()
	id := runstore.NewID()
	ok(t, a.Put(ctx, id, NewRecord(Scope, 1000, 1), time.Minute))
	_, l, err := a.Acquire(ctx, id, Scope, "h", time.Minute, "")
	ok(t, err)
	_, err = b.Cancel(ctx, id)
	ok(t, err)
	rec := NewRecord(Scope, 1000, 2)
	is(t, a.Release(ctx, l, &rec, nil, time.Minute), runstore.ErrCancelled)
	_, err = a.Results(ctx, l)
	is(t, err, runstore.ErrCancelled)
	ok(t, a.Delete(ctx, l))
	_, _, err = b.Acquire(ctx, id, Scope, "h", time.Minute, "")
	is(t, err, runstore.ErrCancelled)
	if u := usage(t, a); u != (runstore.Usage{}) {
		t.Fatalf("usage after cancel %+v", u)
	}
}

// W7: session end drops the session's runs and only those.
func testCancelSession(t *testing.T, open Open) {
	a, b := open(t, runstore.Limits{})
	ctx := t.Context()
	other := Scope
	other.SessionKey = "other-session"
	ids := []string{runstore.NewID(), runstore.NewID(), runstore.NewID()}
	ok(t, a.Put(ctx, ids[0], NewRecord(Scope, 100, 1), time.Minute))
	ok(t, a.Put(ctx, ids[1], NewRecord(Scope, 100, 2), time.Minute))
	ok(t, a.Put(ctx, ids[2], NewRecord(other, 100, 3), time.Minute))
	n, err := b.CancelSession(ctx, Scope.SessionKey)
	ok(t, err)
	if n != 2 {
		t.Fatalf("CancelSession = %d, want 2", n)
	}
	for _, id := range ids[:2] {
		_, _, err := a.Acquire(ctx, id, Scope, "h", time.Minute, "")
		is(t, err, runstore.ErrCancelled)
	}
	_, l, err := a.Acquire(ctx, ids[2], other, "h", time.Minute, "")
	ok(t, err)
	ok(t, a.Delete(ctx, l))
	n, err = b.CancelSession(ctx, Scope.SessionKey)
	ok(t, err)
	if n != 0 {
		t.Fatalf("second CancelSession = %d", n)
	}
	if u := usage(t, a); u != (runstore.Usage{}) {
		t.Fatalf("usage %+v", u)
	}
}

// W5 and the byte limits, globally and per session; deleting frees capacity.
func testCaps(t *testing.T, open Open) {
	sess := func(k string) api.RunContext { s := Scope; s.SessionKey = k; return s }
	t.Run("runs", func(t *testing.T) {
		a, b := open(t, runstore.Limits{Runs: 3, SessionRuns: 100})
		ctx := t.Context()
		for i := range 3 {
			ok(t, a.Put(ctx, runstore.NewID(), NewRecord(sess(fmt.Sprint(i)), 100, 1), time.Minute))
		}
		id := runstore.NewID()
		err := b.Put(ctx, id, NewRecord(sess("x"), 100, 1), time.Minute)
		is(t, err, runstore.ErrTooMany)
		if err.Error() != "too many suspended code mode runs." {
			t.Fatalf("message %q", err)
		}
		n, err := a.CancelSession(ctx, "0")
		ok(t, err)
		if n != 1 {
			t.Fatal(n)
		}
		ok(t, b.Put(ctx, id, NewRecord(sess("x"), 100, 1), time.Minute))
	})
	t.Run("session runs", func(t *testing.T) {
		a, b := open(t, runstore.Limits{SessionRuns: 2})
		ctx := t.Context()
		first := runstore.NewID()
		ok(t, a.Put(ctx, first, NewRecord(Scope, 100, 1), time.Minute))
		ok(t, a.Put(ctx, runstore.NewID(), NewRecord(Scope, 100, 1), time.Minute))
		is(t, b.Put(ctx, runstore.NewID(), NewRecord(Scope, 100, 1), time.Minute), runstore.ErrTooManySession)
		ok(t, b.Put(ctx, runstore.NewID(), NewRecord(sess("other"), 100, 1), time.Minute))
		ok(t, b.Put(ctx, first, NewRecord(Scope, 100, 2), time.Minute)) // replacing is not a new run
		_, l, err := a.Acquire(ctx, first, Scope, "h", time.Minute, "")
		ok(t, err)
		ok(t, a.Delete(ctx, l))
		ok(t, b.Put(ctx, runstore.NewID(), NewRecord(Scope, 100, 1), time.Minute))
	})
	// issue 18 item 5: a principal's runs (any session of the principal may wait on them) belong
	// to no session: one session key of a principal holds more than the session share, up to the
	// principal's.
	t.Run("principal runs are no session's", func(t *testing.T) {
		a, b := open(t, runstore.Limits{SessionRuns: 2, SessionBytes: 250, PrincipalRuns: 4})
		ctx := t.Context()
		own := Scope
		own.Principal, own.SessionKey = "tenant", runstore.PrincipalKey("tenant")
		for range 4 {
			ok(t, a.Put(ctx, runstore.NewID(), NewRecord(own, 100, 1), time.Minute))
		}
		is(t, b.Put(ctx, runstore.NewID(), NewRecord(own, 100, 1), time.Minute), runstore.ErrTooManyPrincipal)
		// A session of the principal (a session key of its own) keeps the session share.
		mine := own
		mine.SessionKey = "tenant/session"
		a, b = open(t, runstore.Limits{SessionRuns: 2, PrincipalRuns: 4})
		ok(t, a.Put(ctx, runstore.NewID(), NewRecord(mine, 100, 1), time.Minute))
		ok(t, a.Put(ctx, runstore.NewID(), NewRecord(mine, 100, 1), time.Minute))
		is(t, b.Put(ctx, runstore.NewID(), NewRecord(mine, 100, 1), time.Minute), runstore.ErrTooManySession)
	})
	// issue 20 item 2, issue 18 item 5: a principal's share bounds all its sessions together;
	// another principal, and a scope without one (its session key is its principal), get in.
	t.Run("principal runs and bytes", func(t *testing.T) {
		a, b := open(t, runstore.Limits{PrincipalRuns: 3, PrincipalBytes: 100000})
		ctx := t.Context()
		of := func(p, k string) api.RunContext { s := Scope; s.Principal, s.SessionKey = p, k; return s }
		ok(t, a.Put(ctx, runstore.NewID(), NewRecord(of("tenant", "1"), 100, 1), time.Minute))
		ok(t, b.Put(ctx, runstore.NewID(), NewRecord(of("tenant", "2"), 100, 1), time.Minute))
		last := runstore.NewID()
		ok(t, a.Put(ctx, last, NewRecord(of("tenant", "3"), 100, 1), time.Minute))
		is(t, b.Put(ctx, runstore.NewID(), NewRecord(of("tenant", "4"), 100, 1), time.Minute), runstore.ErrTooManyPrincipal)
		ok(t, b.Put(ctx, runstore.NewID(), NewRecord(of("other", "4"), 100, 1), time.Minute))
		ok(t, b.Put(ctx, runstore.NewID(), NewRecord(of("", "tenant"), 100, 1), time.Minute))
		_, l, err := a.Acquire(ctx, last, of("tenant", "3"), "h", time.Minute, "")
		ok(t, err)
		ok(t, a.Delete(ctx, l))
		ok(t, b.Put(ctx, runstore.NewID(), NewRecord(of("tenant", "4"), 100, 1), time.Minute))

		a, b = open(t, runstore.Limits{PrincipalBytes: 2600})
		ok(t, a.Put(ctx, runstore.NewID(), NewRecord(of("tenant", "1"), 1000, 1), time.Minute))
		ok(t, a.Put(ctx, runstore.NewID(), NewRecord(of("tenant", "2"), 1000, 1), time.Minute))
		is(t, b.Put(ctx, runstore.NewID(), NewRecord(of("tenant", "3"), 1000, 1), time.Minute), runstore.ErrTooManyBytes)
		ok(t, b.Put(ctx, runstore.NewID(), NewRecord(of("other", "3"), 1000, 1), time.Minute))
	})
	t.Run("bytes", func(t *testing.T) {
		a, b := open(t, runstore.Limits{Bytes: 2600})
		ctx := t.Context()
		first := runstore.NewID()
		ok(t, a.Put(ctx, first, NewRecord(sess("1"), 1000, 1), time.Minute))
		ok(t, a.Put(ctx, runstore.NewID(), NewRecord(sess("2"), 1000, 1), time.Minute))
		is(t, b.Put(ctx, runstore.NewID(), NewRecord(sess("3"), 1000, 1), time.Minute), runstore.ErrTooManyBytes)
		is(t, b.AddResult(ctx, first, sess("1"), "call-1", make([]byte, 1000)), runstore.ErrTooManyBytes)
		// Growing a run past the limit fails and keeps the old record and the lease.
		_, l, err := a.Acquire(ctx, first, sess("1"), "h", time.Minute, "")
		ok(t, err)
		big := NewRecord(sess("1"), 2000, 9)
		is(t, a.Release(ctx, l, &big, nil, time.Minute), runstore.ErrTooManyBytes)
		_, err = a.Results(ctx, l)
		ok(t, err)
		ok(t, a.Delete(ctx, l))
		ok(t, b.Put(ctx, runstore.NewID(), NewRecord(sess("3"), 1000, 1), time.Minute))
	})
	t.Run("session bytes", func(t *testing.T) {
		a, b := open(t, runstore.Limits{SessionBytes: 2600})
		ctx := t.Context()
		ok(t, a.Put(ctx, runstore.NewID(), NewRecord(Scope, 1000, 1), time.Minute))
		ok(t, a.Put(ctx, runstore.NewID(), NewRecord(Scope, 1000, 1), time.Minute))
		is(t, b.Put(ctx, runstore.NewID(), NewRecord(Scope, 1000, 1), time.Minute), runstore.ErrTooManyBytes)
		ok(t, b.Put(ctx, runstore.NewID(), NewRecord(sess("other"), 1000, 1), time.Minute))
	})
	t.Run("record and result size", func(t *testing.T) {
		a, _ := open(t, runstore.Limits{RecordBytes: 1000, ResultBytes: 100})
		ctx := t.Context()
		id := runstore.NewID()
		is(t, a.Put(ctx, id, NewRecord(Scope, 1001, 1), time.Minute), runstore.ErrRecordTooLarge)
		ok(t, a.Put(ctx, id, NewRecord(Scope, 1000, 1), time.Minute))
		is(t, a.AddResult(ctx, id, Scope, "call-1", make([]byte, 101)), runstore.ErrResultTooLarge)
		ok(t, a.AddResult(ctx, id, Scope, "call-1", make([]byte, 100)))
		_, l, err := a.Acquire(ctx, id, Scope, "h", time.Minute, "")
		ok(t, err)
		big := NewRecord(Scope, 1001, 2)
		is(t, a.Release(ctx, l, &big, nil, time.Minute), runstore.ErrRecordTooLarge)
		ok(t, a.Delete(ctx, l))
	})
	t.Run("results per run", func(t *testing.T) {
		a, b := open(t, runstore.Limits{Results: 2})
		ctx := t.Context()
		id := runstore.NewID()
		ok(t, a.Put(ctx, id, NewRecord(Scope, 100, 1), time.Minute))
		ok(t, a.AddResult(ctx, id, Scope, "call-1", []byte("1")))
		ok(t, b.AddResult(ctx, id, Scope, "call-2", []byte("2")))
		is(t, b.AddResult(ctx, id, Scope, "call-3", []byte("3")), runstore.ErrTooManyResults)
		ok(t, b.AddResult(ctx, id, Scope, "call-1", []byte("one"))) // replacing is not a new result
		_, l, err := a.Acquire(ctx, id, Scope, "h", time.Minute, "")
		ok(t, err)
		ok(t, a.Release(ctx, l, nil, []string{"call-1"}, time.Minute))
		ok(t, b.AddResult(ctx, id, Scope, "call-3", []byte("3")))
	})
}

// Results written by one process are read by the one that resumes; delivered results go.
func testResults(t *testing.T, open Open) {
	a, b := open(t, runstore.Limits{})
	ctx := t.Context()
	id := runstore.NewID()
	ok(t, a.Put(ctx, id, NewRecord(Scope, 1000, 1), time.Minute))
	ok(t, a.AddResult(ctx, id, Scope, "call-1", []byte(`{"ok":1}`)))
	ok(t, a.AddResult(ctx, id, Scope, "call-2", []byte(`{"ok":2}`)))
	ok(t, a.AddResult(ctx, id, Scope, "call-empty", nil))
	is(t, a.AddResult(ctx, runstore.NewID(), Scope, "call-1", []byte("x")), runstore.ErrUnavailable)

	_, l, err := b.Acquire(ctx, id, Scope, "b", time.Minute, "")
	ok(t, err)
	res, err := b.Results(ctx, l)
	ok(t, err)
	if len(res) != 3 || string(res["call-1"]) != `{"ok":1}` || string(res["call-2"]) != `{"ok":2}` || len(res["call-empty"]) != 0 {
		t.Fatalf("results %q", res)
	}
	if _, ok := res["call-empty"]; !ok {
		t.Fatal("empty result missing")
	}
	before := usage(t, a)
	ok(t, b.Release(ctx, l, nil, []string{"call-1", "call-1", "call-empty", "call-never"}, time.Minute))
	after := usage(t, a)
	if after.Bytes >= before.Bytes {
		t.Fatalf("delivered results still counted: %d → %d bytes", before.Bytes, after.Bytes)
	}
	ok(t, a.AddResult(ctx, id, Scope, "call-3", []byte(`{"ok":3}`)))
	_, l, err = a.Acquire(ctx, id, Scope, "a", time.Minute, "")
	ok(t, err)
	res, err = a.Results(ctx, l)
	ok(t, err)
	if len(res) != 2 || string(res["call-2"]) != `{"ok":2}` || string(res["call-3"]) != `{"ok":3}` {
		t.Fatalf("results after delivery %q", res)
	}
	ok(t, a.Delete(ctx, l))
	if u := usage(t, a); u != (runstore.Usage{}) {
		t.Fatalf("usage %+v", u)
	}
}

// Heartbeats tell a resumer which owners of live calls are still there.
func testHeartbeat(t *testing.T, open Open) {
	a, b := open(t, runstore.Limits{})
	ctx := t.Context()
	id := runstore.NewID()
	ok(t, a.Put(ctx, id, NewRecord(Scope, 100, 1), time.Minute))
	is(t, a.Heartbeat(ctx, runstore.NewID(), "p1", time.Minute), runstore.ErrUnavailable)
	ok(t, a.Heartbeat(ctx, id, "p1", time.Minute))
	ok(t, a.Heartbeat(ctx, id, "p2", 100*time.Millisecond))
	alive := func(owner string) bool {
		v, err := b.OwnerAlive(ctx, id, owner)
		ok(t, err)
		return v
	}
	if !alive("p1") || alive("p3") {
		t.Fatal("OwnerAlive: p1 should be alive, p3 never was")
	}
	eventually(t, "a heartbeat expires", func() bool { return !alive("p2") })
	if !alive("p1") {
		t.Fatal("p1 expired with p2")
	}
}

func testInvalidArguments(t *testing.T, open Open) {
	a, _ := open(t, runstore.Limits{})
	ctx := t.Context()
	long := string(bytes.Repeat([]byte{'x'}, runstore.MaxNameBytes+1))
	rec := NewRecord(Scope, 10, 1)
	is(t, a.Put(ctx, "", rec, time.Minute), runstore.ErrInvalidID)
	is(t, a.Put(ctx, long, rec, time.Minute), runstore.ErrInvalidID)
	if err := a.Put(ctx, "run_x", rec, 0); err == nil {
		t.Fatal("Put with ttl 0")
	}
	_, _, err := a.Acquire(ctx, "run_x", Scope, "", time.Minute, "")
	is(t, err, runstore.ErrInvalidID)
	if _, _, err := a.Acquire(ctx, "run_x", Scope, "h", 0, ""); err == nil {
		t.Fatal("Acquire with lease 0")
	}
	is(t, a.AddResult(ctx, "run_x", Scope, "", nil), runstore.ErrInvalidID)
	is(t, a.Heartbeat(ctx, "run_x", long, time.Minute), runstore.ErrInvalidID)
	ok(t, a.Put(ctx, "run_x", rec, time.Minute)) // ids are opaque: any short string works
	// A cancelled context is a store error, never a verdict about the run.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = a.Acquire(cctx, "run_x", Scope, "h", time.Minute, "")
	if !runstore.IsStoreError(err) {
		t.Fatalf("Acquire with a cancelled context: %v", err)
	}
}

// Concurrent puts, waits, results, cancels and deletes from two clients; afterwards the
// accounting matches what is left (nothing leaks).
func testHammer(t *testing.T, open Open) {
	a, b := open(t, runstore.Limits{Runs: 1000, SessionRuns: 1000})
	ctx := t.Context()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, o := a, b
			if g%2 == 1 {
				s, o = b, a
			}
			sc := Scope
			sc.SessionKey = fmt.Sprint("s", g%3)
			for i := range 25 {
				id := fmt.Sprintf("run_%d_%d", g, i)
				if err := s.Put(ctx, id, NewRecord(sc, 300, byte(i)), time.Minute); err != nil {
					t.Errorf("put: %v", err)
					return
				}
				_ = o.AddResult(ctx, id, sc, "c", []byte("r"))
				_, l, err := o.Acquire(ctx, id, sc, "h", time.Minute, "")
				if err == nil {
					if i%2 == 0 {
						rec := NewRecord(sc, 400, byte(i))
						_ = o.Release(ctx, l, &rec, []string{"c"}, time.Minute)
					} else {
						_ = o.Delete(ctx, l)
					}
				}
				if i%5 == 0 {
					_, _ = s.CancelSession(ctx, sc.SessionKey)
				}
				if i%3 == 0 {
					_, _ = o.Cancel(ctx, id)
				}
			}
		}()
	}
	wg.Wait()
	for _, k := range []string{"s0", "s1", "s2"} {
		_, err := a.CancelSession(ctx, k)
		ok(t, err)
	}
	if u := usage(t, b); u != (runstore.Usage{}) {
		t.Fatalf("usage after everything was cancelled: %+v", u)
	}
}

// issue 20 item 3: a lease that is renewed stays held past its first expiry; a busy run says
// how long until the lease runs out; a holder that stops renewing loses the run a lease later.
func testRenew(t *testing.T, open Open) {
	a, b := open(t, runstore.Limits{})
	ctx := t.Context()
	id := runstore.NewID()
	ok(t, a.Put(ctx, id, NewRecord(Scope, 500, 1), time.Minute))
	const lease = 300 * time.Millisecond
	_, l, err := a.Acquire(ctx, id, Scope, "holder", lease, "")
	ok(t, err)
	_, _, err = b.Acquire(ctx, id, Scope, "other", lease, "")
	is(t, err, runstore.ErrBusy)
	if d := runstore.RetryAfter(err); d <= 0 || d > lease {
		t.Fatalf("retry after %v, want (0, %v]", d, lease)
	}
	deadline := time.Now().Add(3 * lease)
	for time.Now().Before(deadline) {
		ok(t, a.Renew(ctx, l, lease))
		_, _, err := b.Acquire(ctx, id, Scope, "other", lease, "")
		is(t, err, runstore.ErrBusy)
		time.Sleep(lease / 4)
	}
	// Stop renewing: the other holder gets in, and the first one's renewal fails.
	eventually(t, "takeover after the lease", func() bool {
		_, _, err := b.Acquire(ctx, id, Scope, "other", time.Minute, "")
		if err != nil && !errors.Is(err, runstore.ErrBusy) {
			t.Fatal(err)
		}
		return err == nil
	})
	is(t, a.Renew(ctx, l, lease), runstore.ErrLeaseLost)
}

// issue 20 item 5: Acquire sends the record only when the caller does not hold its version.
func testUnchanged(t *testing.T, open Open) {
	a, b := open(t, runstore.Limits{})
	ctx := t.Context()
	id := runstore.NewID()
	rec := NewRecord(Scope, 2000, 1)
	rec.Version = "v1"
	ok(t, a.Put(ctx, id, rec, time.Minute))
	got, l, err := b.Acquire(ctx, id, Scope, "h", time.Minute, "v1")
	ok(t, err)
	if !got.Unchanged || len(got.Snapshot) != 0 || len(got.State) != 0 || got.Version != "v1" || got.Scope != Scope || l.Scope != Scope {
		t.Fatalf("unchanged acquire: %+v lease %+v", got, l)
	}
	next := NewRecord(Scope, 2000, 2)
	next.Version = "v2"
	ok(t, b.Release(ctx, l, &next, nil, time.Minute))
	got, l, err = a.Acquire(ctx, id, Scope, "h", time.Minute, "v1")
	ok(t, err)
	if got.Unchanged || got.Version != "v2" {
		t.Fatalf("stale holder got %+v", got)
	}
	sameRecord(t, got, next)
	ok(t, a.Release(ctx, l, nil, nil, time.Minute))
	// A scope without a run id still comes back whole (the stored one).
	noRun := Scope
	noRun.RunID = ""
	got, _, err = a.Acquire(ctx, id, noRun, "h", time.Minute, "v2")
	ok(t, err)
	if !got.Unchanged || got.Scope != Scope {
		t.Fatalf("unchanged acquire without run id: %+v", got)
	}
}
