package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/runstore/durabletest"
	"github.com/codemode-go/codemode/internal/testtools/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

var (
	testKey  = [32]byte{0: 1, 7: 2, 31: 3}
	otherKey = [32]byte{0: 9}
	scope    = durabletest.Scope
)

// open makes a store on srv under its own prefix, closed when t ends.
func open(t testing.TB, srv *redistest.Server, prefix string, key [32]byte, lim runstore.Limits, timeout time.Duration) *Store {
	t.Helper()
	s, err := New(Options{URL: srv.URL(), Key: key, Prefix: prefix, Limits: lim, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testPrefix() string { return "test:" + runstore.NewID() + ":" }

// raw is a plain client for reaching into the store's keys the way an attacker with access to
// Redis would.
func raw(t testing.TB, srv *redistest.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The Redis store passes the conformance suite, with two clients as two replicas.
func TestConformance(t *testing.T) {
	srv := redistest.Shared(t)
	durabletest.Run(t, func(t *testing.T, lim runstore.Limits) (a, b runstore.Durable) {
		p := testPrefix()
		return open(t, srv, p, testKey, lim, 0), open(t, srv, p, testKey, lim, 0)
	})
}

// A record or result that was changed, cut or moved inside Redis fails authentication, and the
// failed Acquire does not leave the run locked.
func TestTampering(t *testing.T) {
	srv := redistest.Shared(t)
	rdb := raw(t, srv)
	other := scope
	other.SessionKey, other.RunID = "other-session", "other-run"
	cases := []struct {
		name   string
		tamper func(ctx context.Context, p, id, otherID string) error
		as     func(id, otherID string) (string, bool) // which run to acquire, and as the other scope
	}{
		{"flipped ciphertext byte", func(ctx context.Context, p, id, _ string) error {
			b, err := rdb.HGet(ctx, rk(p, id), "rec").Bytes()
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 1
			return rdb.HSet(ctx, rk(p, id), "rec", b).Err()
		}, func(id, _ string) (string, bool) { return id, false }},
		{"truncated record", func(ctx context.Context, p, id, _ string) error {
			b, err := rdb.HGet(ctx, rk(p, id), "rec").Bytes()
			if err != nil {
				return err
			}
			return rdb.HSet(ctx, rk(p, id), "rec", b[:len(b)-20]).Err()
		}, func(id, _ string) (string, bool) { return id, false }},
		{"empty record", func(ctx context.Context, p, id, _ string) error {
			return rdb.HSet(ctx, rk(p, id), "rec", "").Err()
		}, func(id, _ string) (string, bool) { return id, false }},
		{"record field deleted", func(ctx context.Context, p, id, _ string) error {
			return rdb.HDel(ctx, rk(p, id), "rec").Err()
		}, func(id, _ string) (string, bool) { return id, false }},
		{"record copied to another run id", func(ctx context.Context, p, id, otherID string) error {
			return rdb.Copy(ctx, rk(p, id), rk(p, otherID), 0, true).Err()
		}, func(_, otherID string) (string, bool) { return otherID, false }},
		{"record moved to another scope", func(ctx context.Context, p, id, otherID string) error {
			// Give run id the stored scope of the other session's run: its digests match the
			// other scope now, but the record was sealed for the first.
			o, err := rdb.HMGet(ctx, rk(p, otherID), "sc", "r", "sess").Result()
			if err != nil {
				return err
			}
			return rdb.HSet(ctx, rk(p, id), "sc", o[0], "r", o[1], "sess", o[2]).Err()
		}, func(id, _ string) (string, bool) { return id, true }},
		{"other run's record swapped in", func(ctx context.Context, p, id, otherID string) error {
			b, err := rdb.HGet(ctx, rk(p, otherID), "rec").Bytes()
			if err != nil {
				return err
			}
			return rdb.HSet(ctx, rk(p, id), "rec", b).Err()
		}, func(id, _ string) (string, bool) { return id, false }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			p := testPrefix()
			s := open(t, srv, p, testKey, runstore.Limits{}, 0)
			id, otherID := runstore.NewID(), runstore.NewID()
			if err := s.Put(ctx, id, durabletest.NewRecord(scope, 2000, 1), time.Minute); err != nil {
				t.Fatal(err)
			}
			if c.name == "record copied to another run id" {
				otherID = runstore.NewID() // a key that was never a run
			} else if err := s.Put(ctx, otherID, durabletest.NewRecord(other, 2000, 2), time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := c.tamper(ctx, p, id, otherID); err != nil {
				t.Fatal(err)
			}
			target, asOther := c.as(id, otherID)
			sc := scope
			if asOther {
				sc = other
			}
			for range 2 { // the second time proves the lease was let go
				_, _, err := s.Acquire(ctx, target, sc, "h", time.Minute, "")
				if !errors.Is(err, runstore.ErrTampered) || err.Error() != "code mode run record failed authentication (tampered or moved to another scope)." {
					t.Fatalf("Acquire: %v", err)
				}
			}
		})
	}
}

func TestTamperedResult(t *testing.T) {
	srv := redistest.Shared(t)
	rdb := raw(t, srv)
	ctx := t.Context()
	p := testPrefix()
	s := open(t, srv, p, testKey, runstore.Limits{}, 0)
	id := runstore.NewID()
	if err := s.Put(ctx, id, durabletest.NewRecord(scope, 100, 1), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.AddResult(ctx, id, scope, "call-1", []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddResult(ctx, id, scope, "call-2", []byte(`{"v":2}`)); err != nil {
		t.Fatal(err)
	}
	// One call's result filed under another call id.
	b, err := rdb.HGet(ctx, resk(p, id), "call-1").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, resk(p, id), "call-2", b).Err(); err != nil {
		t.Fatal(err)
	}
	_, l, err := s.Acquire(ctx, id, scope, "h", time.Minute, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Results(ctx, l); !errors.Is(err, runstore.ErrTampered) {
		t.Fatalf("Results: %v", err)
	}
}

// A replica configured with another key is told so, not that the run was tampered with.
func TestWrongKey(t *testing.T) {
	srv := redistest.Shared(t)
	ctx := t.Context()
	p := testPrefix()
	a := open(t, srv, p, testKey, runstore.Limits{}, 0)
	b := open(t, srv, p, otherKey, runstore.Limits{}, 0)
	id := runstore.NewID()
	if err := a.Put(ctx, id, durabletest.NewRecord(scope, 100, 1), time.Minute); err != nil {
		t.Fatal(err)
	}
	_, _, err := b.Acquire(ctx, id, scope, "h", time.Minute, "")
	if !errors.Is(err, runstore.ErrWrongKey) {
		t.Fatalf("Acquire with another key: %v", err)
	}
	if err := b.AddResult(ctx, id, scope, "c", nil); !errors.Is(err, runstore.ErrWrongKey) {
		t.Fatalf("AddResult with another key: %v", err)
	}
	if err := b.Put(ctx, id, durabletest.NewRecord(scope, 100, 1), time.Minute); !errors.Is(err, runstore.ErrWrongKey) {
		t.Fatalf("Put over a run sealed with another key: %v", err)
	}
	if _, l, err := a.Acquire(ctx, id, scope, "h", time.Minute, ""); err != nil {
		t.Fatalf("the right key: %v", err)
	} else if err := a.Delete(ctx, l); err != nil {
		t.Fatal(err)
	}
}

// Whoever reads Redis sees neither the scope nor the record's or results' bytes.
func TestNothingInTheClear(t *testing.T) {
	srv := redistest.Shared(t)
	rdb := raw(t, srv)
	ctx := t.Context()
	p := testPrefix()
	s := open(t, srv, p, testKey, runstore.Limits{}, 0)
	id := runstore.NewID()
	rec := runstore.Record{Scope: scope, Snapshot: []byte("SNAPSHOT-MARKER-" + strings.Repeat("z", 100)), State: []byte(`{"secret":"STATE-MARKER"}`)}
	if err := s.Put(ctx, id, rec, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.AddResult(ctx, id, scope, "call-1", []byte("RESULT-MARKER")); err != nil {
		t.Fatal(err)
	}
	if err := s.Heartbeat(ctx, id, "OWNER-MARKER", time.Minute); err != nil {
		t.Fatal(err)
	}
	var dump bytes.Buffer
	keys, err := rdb.Keys(ctx, p+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		d, err := rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&dump, "%s\n%s\n", k, d)
	}
	for _, secret := range []string{scope.AgentID, scope.SessionKey, scope.SessionID, scope.RunID, scope.SenderID, "SNAPSHOT-MARKER", "STATE-MARKER", "RESULT-MARKER", "OWNER-MARKER"} {
		if bytes.Contains(dump.Bytes(), []byte(secret)) {
			t.Errorf("%q is stored in the clear", secret)
		}
	}
	if len(keys) < 5 {
		t.Fatalf("expected the run's keys, found %q", keys)
	}
}

// Redis going away mid-run: every call fails promptly with a store error, nothing panics or
// hangs, and the store works again once Redis is back.
func TestRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	s := open(t, srv, testPrefix(), testKey, runstore.Limits{}, 2*time.Second)
	id := runstore.NewID()
	if err := s.Put(ctx, id, durabletest.NewRecord(scope, 1000, 1), time.Minute); err != nil {
		t.Fatal(err)
	}
	_, l, err := s.Acquire(ctx, id, scope, "h", time.Minute, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for name, err := range allCalls(ctx, s, id, l) {
		if !runstore.IsStoreError(err) || !strings.HasPrefix(err.Error(), "run store unavailable: ") {
			t.Errorf("%s with Redis down: %v", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("calls with Redis down took %v", d)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// Nothing persisted (the test instance has no persistence), but the store works again.
	_, _, err = s.Acquire(ctx, id, scope, "h", time.Minute, "")
	if !errors.Is(err, runstore.ErrUnavailable) {
		t.Fatalf("Acquire after restart: %v", err)
	}
	id = runstore.NewID()
	if err := s.Put(ctx, id, durabletest.NewRecord(scope, 1000, 1), time.Minute); err != nil {
		t.Fatalf("Put after restart: %v", err)
	}
	if _, l, err := s.Acquire(ctx, id, scope, "h", time.Minute, ""); err != nil {
		t.Fatalf("Acquire after restart: %v", err)
	} else if err := s.Delete(ctx, l); err != nil {
		t.Fatal(err)
	}
}

// allCalls runs every method once and yields its error.
func allCalls(ctx context.Context, s *Store, id string, l runstore.Lease) func(func(string, error) bool) {
	rec := durabletest.NewRecord(scope, 100, 2)
	calls := []struct {
		name string
		fn   func() error
	}{
		{"Ping", func() error { return s.Ping(ctx) }},
		{"Put", func() error { return s.Put(ctx, runstore.NewID(), rec, time.Minute) }},
		{"Acquire", func() error { _, _, err := s.Acquire(ctx, id, scope, "h", time.Minute, ""); return err }},
		{"Release", func() error { return s.Release(ctx, l, &rec, nil, time.Minute) }},
		{"Delete", func() error { return s.Delete(ctx, l) }},
		{"Cancel", func() error { _, err := s.Cancel(ctx, id); return err }},
		{"CancelSession", func() error { _, err := s.CancelSession(ctx, scope.SessionKey); return err }},
		{"AddResult", func() error { return s.AddResult(ctx, id, scope, "c", []byte("x")) }},
		{"Results", func() error { _, err := s.Results(ctx, l); return err }},
		{"Heartbeat", func() error { return s.Heartbeat(ctx, id, "o", time.Minute) }},
		{"OwnerAlive", func() error { _, err := s.OwnerAlive(ctx, id, "o"); return err }},
		{"Usage", func() error { _, err := s.Usage(ctx); return err }},
	}
	return func(yield func(string, error) bool) {
		for _, c := range calls {
			if !yield(c.name, c.fn()) {
				return
			}
		}
	}
}

// A Redis that stops answering (frozen, or a partition) cannot hang a caller: the store's
// deadline ends every call.
func TestRedisStalled(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("pausing a process needs SIGSTOP")
	}
	srv := redistest.Start(t)
	ctx := t.Context()
	s := open(t, srv, testPrefix(), testKey, runstore.Limits{}, 300*time.Millisecond)
	id := runstore.NewID()
	if err := s.Put(ctx, id, durabletest.NewRecord(scope, 1000, 1), time.Minute); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	start := time.Now()
	// The command reaches the server's socket and may run when it resumes: keep its lease short.
	_, _, err := s.Acquire(ctx, id, scope, "h", time.Second, "")
	elapsed := time.Since(start)
	srv.Resume()
	if !runstore.IsStoreError(err) {
		t.Fatalf("Acquire on a stalled Redis: %v", err)
	}
	if elapsed > 20*time.Second {
		t.Fatalf("Acquire on a stalled Redis returned after %v", elapsed)
	}
	t.Logf("stalled: %v after %v", err, elapsed)
	// The run is fine once Redis answers again (a late SET may have leased it: wait that out).
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, l, err := s.Acquire(ctx, id, scope, "h", time.Second, "")
		if err == nil {
			if err := s.Delete(ctx, l); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after resume: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Closing the store stops its connections' goroutines.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	srv := redistest.Shared(t)
	before := runtime.NumGoroutine()
	s, err := New(Options{URL: srv.URL(), Key: testKey, Prefix: testPrefix()})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if err := s.Put(t.Context(), runstore.NewID(), durabletest.NewRecord(scope, 100, 1), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNewErrors(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"no key", Options{URL: "redis://127.0.0.1:6379"}, "run store key is missing"},
		{"bad scheme", Options{URL: "http://127.0.0.1", Key: testKey}, "runStore.redis.url"},
		{"bad URL keeps the password out", Options{URL: "redis://user:hunter2@[::1", Key: testKey}, "runStore.redis.url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}

// rk and resk name a run's record and results keys (keys.go).
func rk(p, id string) string   { return p + "{" + id + "}:run" }
func resk(p, id string) string { return p + "{" + id + "}:res" }

// issue 18 item 8: a record or result planted in Redis larger than anything the store writes is
// refused by its size (HSTRLEN on the server) before a byte of it is read: a 200 MB value
// costs the client nothing, and the run is not left locked.
func TestPlantedHugeValueIsNotRead(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200 MB into Redis")
	}
	srv := redistest.Shared(t)
	rdb := raw(t, srv)
	ctx := t.Context()
	p := testPrefix()
	s := open(t, srv, p, testKey, runstore.Limits{}, 10*time.Second)
	id := runstore.NewID()
	if err := s.Put(ctx, id, durabletest.NewRecord(scope, 2000, 1), time.Minute); err != nil {
		t.Fatal(err)
	}
	const huge = 200 << 20
	// SETRANGE makes the big string in one allocation; the hash field takes a copy of it.
	plant := redis.NewScript(`redis.call('SETRANGE', KEYS[2], tonumber(ARGV[2]) - 1, 'x')
redis.call('HSET', KEYS[1], ARGV[1], redis.call('GET', KEYS[2]))
redis.call('DEL', KEYS[2])
return 1`)
	t.Cleanup(func() { rdb.Del(context.Background(), rk(p, id), resk(p, id)) })
	for _, c := range []struct {
		name string
		key  string
		fld  string
		read func() error
	}{
		{"record", rk(p, id), "rec", func() error {
			_, _, err := s.Acquire(ctx, id, scope, "h", time.Minute, "")
			return err
		}},
		{"result", resk(p, id), "call-1", func() error {
			_, l, err := s.Acquire(ctx, id, scope, "h", time.Minute, "")
			if err != nil {
				return err
			}
			defer func() { _ = s.Release(ctx, l, nil, nil, time.Minute) }()
			_, err = s.Results(ctx, l)
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var old string
			if c.fld == "rec" {
				var err error
				if old, err = rdb.HGet(ctx, c.key, c.fld).Result(); err != nil {
					t.Fatal(err)
				}
			}
			if err := plant.Run(ctx, rdb, []string{c.key, p + "{" + id + "}:tmp"}, c.fld, huge).Err(); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := c.read()
			runtime.ReadMemStats(&after)
			if !errors.Is(err, runstore.ErrTampered) {
				t.Fatalf("read of a planted %d-byte %s: %v", huge, c.name, err)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
				t.Fatalf("the client allocated %d bytes: it read the planted value", got)
			}
			// Put the legitimate value back: the run is usable, not left locked.
			if c.fld == "rec" {
				rdb.HSet(ctx, c.key, c.fld, old)
			} else {
				rdb.HDel(ctx, c.key, c.fld)
			}
			_, l, err := s.Acquire(ctx, id, scope, "h", time.Minute, "")
			if err != nil {
				t.Fatalf("after the refusal: %v", err)
			}
			if err := s.Release(ctx, l, nil, nil, time.Minute); err != nil {
				t.Fatal(err)
			}
		})
	}
}
