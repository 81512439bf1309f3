// Package resultstest is the conformance suite every results.Store implementation passes (the
// in-memory store and the Redis one), so that a cell sees the same behaviour whichever keeps its
// values.
package resultstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/internal/results"
)

// Open makes a fresh, empty store with lim for one test.
type Open func(t *testing.T, lim results.Limits) results.Store

// Scopes used by the suite: two runs of one session, another session, and a principal's run.
var (
	RunA      = results.Scope{AgentID: "agent", SessionKey: "s1", SessionID: "s1", RunID: "r1"}
	RunB      = results.Scope{AgentID: "agent", SessionKey: "s1", SessionID: "s1", RunID: "r2"}
	Other     = results.Scope{AgentID: "agent", SessionKey: "s2", SessionID: "s2", RunID: "r1"}
	Principal = results.Scope{Principal: "alice", AgentID: "mcp", SessionKey: "s1", RunID: "r1"}
)

// Run runs the suite.
func Run(t *testing.T, open Open) {
	ctx := context.Background()
	code := func(err error) string {
		var e *results.Error
		if errors.As(err, &e) {
			return e.Code
		}
		return fmt.Sprintf("not a refusal: %v", err)
	}
	t.Run("save load delete", func(t *testing.T) {
		st := open(t, results.Limits{})
		v := []byte(`{"items":[1,2,3],"s":"é"}`)
		e, err := st.Save(ctx, RunA, v, []string{"mcp:evil"})
		if err != nil || !results.ValidID(e.ID) || e.Bytes != len(v) {
			t.Fatalf("%+v %v", e, err)
		}
		v[0] = 'X' // the store keeps its own copy
		got, ge, err := st.Load(ctx, RunA, e.ID)
		if err != nil || string(got) != `{"items":[1,2,3],"s":"é"}` || !slices.Equal(ge.Untrusted, []string{"mcp:evil"}) {
			t.Fatalf("load %s %+v %v", got, ge, err)
		}
		got[0] = 'Y' // every load is a detached copy
		if again, _, _ := st.Load(ctx, RunA, e.ID); again[0] != '{' {
			t.Fatalf("a load changed the stored value: %s", again)
		}
		if ok, err := st.Delete(ctx, RunB, e.ID); ok || err != nil {
			t.Fatalf("another run deleted it: %v %v", ok, err)
		}
		if ok, err := st.Delete(ctx, RunA, e.ID); !ok || err != nil {
			t.Fatalf("delete %v %v", ok, err)
		}
		if ok, _ := st.Delete(ctx, RunA, e.ID); ok {
			t.Fatal("deleted twice")
		}
		if _, _, err := st.Load(ctx, RunA, e.ID); code(err) != "result_not_found" {
			t.Fatalf("after delete: %v", err)
		}
	})
	t.Run("scopes", func(t *testing.T) {
		st := open(t, results.Limits{})
		e, err := st.Save(ctx, RunA, []byte(`1`), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Load(ctx, RunB, e.ID); code(err) != "result_scope" {
			t.Fatalf("another run of the session: %v", err)
		}
		for _, sc := range []results.Scope{Other, Principal} {
			if _, _, err := st.Load(ctx, sc, e.ID); code(err) != "result_not_found" {
				t.Fatalf("%+v: %v", sc, err)
			}
		}
		if _, _, err := st.Load(ctx, RunA, "res_forgedforgedforgedforgedf"); code(err) != "result_not_found" {
			t.Fatalf("forged id: %v", err)
		}
	})
	t.Run("bounds", func(t *testing.T) {
		st := open(t, results.Limits{MaxEntriesPerRun: 3, MaxBytesPerRun: 100, MaxBytesPerOwner: 150})
		for i := range 3 {
			if _, err := st.Save(ctx, RunA, []byte(`"x"`), nil); err != nil {
				t.Fatalf("save %d: %v", i, err)
			}
		}
		if _, err := st.Save(ctx, RunA, []byte(`"x"`), nil); code(err) != "results_full" {
			t.Fatalf("fourth entry of the run: %v", err)
		}
		big := bytes.Repeat([]byte("1"), 90)
		if _, err := st.Save(ctx, RunB, big, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Save(ctx, RunB, big, nil); code(err) != "results_full" {
			t.Fatalf("run bytes: %v", err)
		}
		// The session (owner) holds 9 + 90 bytes: 60 more passes neither run's bound but the owner's.
		if _, err := st.Save(ctx, results.Scope{AgentID: "agent", SessionKey: "s1", RunID: "r3"}, bytes.Repeat([]byte("2"), 60), nil); code(err) != "results_full" {
			t.Fatalf("owner bytes: %v", err)
		}
		// Another session is not affected.
		if _, err := st.Save(ctx, Other, big, nil); err != nil {
			t.Fatalf("another session: %v", err)
		}
		if _, err := st.Save(ctx, RunA, bytes.Repeat([]byte("3"), results.MaxEntryBytes+1), nil); code(err) != "result_too_large" {
			t.Fatalf("entry bound: %v", err)
		}
	})
	t.Run("expiry", func(t *testing.T) {
		const ttl = 300 * time.Millisecond
		st := open(t, results.Limits{TTL: ttl, MaxEntriesPerRun: 1})
		prev := time.Now() // the entry's TTL starts at the latest during the call that sets it
		e, err := st.Save(ctx, RunA, []byte(`1`), nil)
		if err != nil {
			t.Fatal(err)
		}
		// Each load refreshes the TTL: an entry loaded again sooner than ttl after the previous
		// call began must still be there. Timing is measured, not assumed: on a machine so
		// loaded that a gap exceeds the TTL, the entry may rightly be gone, and it is saved
		// again instead of failing the test.
		refreshed := 0
		for i := 0; i < 6 && refreshed < 2; i++ {
			time.Sleep(ttl / 2)
			start := time.Now()
			_, _, err := st.Load(ctx, RunA, e.ID)
			switch within := time.Since(prev) < ttl; {
			case err == nil:
				refreshed++
			case within:
				t.Fatalf("entry expired %v after it was refreshed (TTL %v): %v", time.Since(prev), ttl, err)
			default:
				if e, err = st.Save(ctx, RunA, []byte(`1`), nil); err != nil {
					t.Fatal(err)
				}
			}
			prev = start
		}
		if refreshed < 2 {
			t.Fatalf("the machine never managed a load within the TTL (%v)", ttl)
		}
		time.Sleep(2 * ttl)
		if _, _, err := st.Load(ctx, RunA, e.ID); code(err) != "result_not_found" {
			t.Fatalf("expired entry: %v", err)
		}
		if _, err := st.Save(ctx, RunA, []byte(`2`), nil); err != nil {
			t.Fatalf("an expired entry still counts: %v", err)
		}
	})
	t.Run("drop session", func(t *testing.T) {
		st := open(t, results.Limits{})
		a, _ := st.Save(ctx, RunA, []byte(`1`), nil)
		o, _ := st.Save(ctx, Other, []byte(`2`), nil)
		p, _ := st.Save(ctx, Principal, []byte(`3`), nil)
		if err := st.DropSession(ctx, "s1"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Load(ctx, RunA, a.ID); code(err) != "result_not_found" {
			t.Fatalf("dropped session: %v", err)
		}
		if _, _, err := st.Load(ctx, Other, o.ID); err != nil {
			t.Fatalf("other session: %v", err)
		}
		if _, _, err := st.Load(ctx, Principal, p.ID); err != nil {
			t.Fatalf("a principal's entry outlives the session: %v", err)
		}
	})
	t.Run("hammer", func(t *testing.T) { // the per-run bound holds under concurrent saves
		st := open(t, results.Limits{MaxEntriesPerRun: 10})
		var ok atomic.Int32
		var wg sync.WaitGroup
		for range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := st.Save(ctx, RunA, []byte(`"v"`), nil); err == nil {
					ok.Add(1)
				} else if !strings.Contains(code(err), "results_full") {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 10 {
			t.Fatalf("%d saves succeeded, want 10", ok.Load())
		}
	})
}
