package redisstore

import (
	"context"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/internal/results"
	"github.com/codemode-go/codemode/internal/results/resultstest"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/testtools/redistest"
)

// The saved-values store on Redis passes the same suite as the in-memory one (issue 22 item 1).
func TestResultsConformance(t *testing.T) {
	srv := redistest.Shared(t)
	resultstest.Run(t, func(t *testing.T, lim results.Limits) results.Store {
		return open(t, srv, testPrefix(), testKey, runstore.Limits{}, 0).ResultStore(lim)
	})
}

// Every key a saved value uses carries its owner's hash tag (one Cluster slot per owner), the
// value is sealed, and a value moved to another id does not open.
func TestResultsKeysAndSealing(t *testing.T) {
	srv := redistest.Shared(t)
	ctx := context.Background()
	p := testPrefix()
	st := open(t, srv, p, testKey, runstore.Limits{}, 0).ResultStore(results.Limits{})
	a, err := st.Save(ctx, resultstest.RunA, []byte(`{"secret":"plain-text-here"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Save(ctx, resultstest.RunA, []byte(`2`), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := raw(t, srv)
	keys, err := c.Keys(ctx, p+"*").Result()
	if err != nil || len(keys) != 3 {
		t.Fatalf("%v %v", keys, err)
	}
	var tag string
	for _, k := range keys {
		i, j := len(p+"saved:{"), len(p+"saved:{")+32
		if len(k) < j+1 || k[:i] != p+"saved:{" || k[j] != '}' || (tag != "" && k[i:j] != tag) {
			t.Fatalf("key %q lacks the owner's hash tag", k)
		}
		tag = k[i:j]
		if v, _ := c.Get(ctx, k).Result(); len(v) > 0 && strings.Contains(v, "plain-text-here") {
			t.Fatalf("value stored in the clear under %s", k)
		}
	}
	// Copy b's sealed blob over a's: it is bound to b's id and does not open as a.
	base := p + "saved:{" + tag + "}:v:"
	blob, _ := c.Get(ctx, base+b.ID).Result()
	if err := c.Set(ctx, base+a.ID, blob, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Load(ctx, resultstest.RunA, a.ID); err == nil || results.IsRefusal(err) {
		t.Fatalf("a moved value opened (or was taken for a refusal): %v", err)
	}
	// Another key cannot open them either.
	other := open(t, srv, p, otherKey, runstore.Limits{}, 0).ResultStore(results.Limits{})
	if _, _, err := other.Load(ctx, resultstest.RunA, b.ID); err == nil {
		t.Fatal("opened with another key")
	}
}
