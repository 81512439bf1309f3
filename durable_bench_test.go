package codemode

import (
	"context"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/runstore/redisstore"
	"github.com/codemode-go/codemode/internal/testtools/redistest"
)

// BenchmarkDurable measures exec → waiting and wait → completed with the Redis run store on
// loopback, hot (same process) and cold (another runtime imports the record), and reports the
// bytes stored per run. go test -run '^$' -bench Durable -benchtime 200x .
func BenchmarkDurable(b *testing.B) {
	srv := redistest.Start(b)
	var key [32]byte
	key[0] = 1
	open := func() runstore.Durable {
		st, err := redisstore.New(redisstore.Options{URL: srv.URL(), Key: key, Prefix: "bench:"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		return st
	}
	cfg := testConfig(b)
	a := newRuntime(b, cfg, func(o *Options) { o.RunStore = open() })
	c := newRuntime(b, cfg, func(o *Options) { o.RunStore = open() })
	scope := api.RunContext{SessionKey: "bench"}
	sa, sc := a.Activate(scope, fixtureTools()), c.Activate(scope, fixtureTools())
	code := `await yield_control(); return 1`
	ctx := context.Background()
	for _, mode := range []string{"hot", "cold"} {
		waiter := sa
		if mode == "cold" {
			waiter = sc
		}
		b.Run("ExecWaiting/"+mode, func(b *testing.B) {
			for b.Loop() {
				r := execCode(b, sa, code)
				if r.Status != api.StatusWaiting {
					b.Fatal(r)
				}
				b.StopTimer()
				_ = waiter.Wait(ctx, "w", WaitInput{RunID: r.RunID})
				b.StartTimer()
			}
		})
		b.Run("WaitCompleted/"+mode, func(b *testing.B) {
			var bytes int64
			for b.Loop() {
				b.StopTimer()
				r := execCode(b, sa, code)
				u, _ := a.durable.store.Usage(ctx)
				bytes += u.Bytes
				b.StartTimer()
				if w := waiter.Wait(ctx, "w", WaitInput{RunID: r.RunID}); w.Status != api.StatusCompleted {
					b.Fatal(w)
				}
			}
			b.ReportMetric(float64(bytes)/float64(b.N), "stored-bytes/run")
		})
	}
}
