package codemode

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/runstore/redisstore"
	"github.com/codemode-go/codemode/internal/testtools/redistest"
	"github.com/redis/go-redis/v9"
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
	a := newRuntime(b, cfg, func(o *Options) { o.RunStore = &RunStore{d: open()} })
	c := newRuntime(b, cfg, func(o *Options) { o.RunStore = &RunStore{d: open()} })
	scope := api.RunContext{SessionKey: "bench"}
	sa, sc := a.Activate(scope, fixtureTools()), c.Activate(scope, fixtureTools())
	code := `await yield_control(); return 1`
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer rdb.Close()
	// issue 20: what one run (exec → waiting, then wait → completed) costs Redis: commands,
	// bytes each way and server CPU, from INFO before and after.
	b.Run("PerRun", func(b *testing.B) {
		for _, mode := range []string{"hot", "cold"} {
			waiter := map[string]*Surface{"hot": sa, "cold": sc}[mode]
			b.Run(mode, func(b *testing.B) {
				before := redisCounters(b, rdb)
				for b.Loop() {
					r := execCode(b, sa, code)
					if w := waiter.Wait(ctx, "w", WaitInput{RunID: r.RunID}); w.Status != api.StatusCompleted {
						b.Fatal(w)
					}
				}
				after := redisCounters(b, rdb)
				n := float64(b.N)
				b.ReportMetric((after.cmds-before.cmds-1)/n, "redis-cmds/run") // less the INFO itself
				b.ReportMetric((after.in-before.in)/n, "redis-in-B/run")
				b.ReportMetric((after.out-before.out)/n, "redis-out-B/run")
				b.ReportMetric((after.cpu-before.cpu)*1e6/n, "redis-cpu-µs/run")
			})
		}
	})
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
				u, _ := a.durable.Store().Usage(ctx)
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

type redisStats struct{ cmds, in, out, cpu float64 }

// redisCounters reads the server's command count, network bytes and CPU seconds.
func redisCounters(b *testing.B, rdb *redis.Client) redisStats {
	info, err := rdb.Info(context.Background(), "stats", "cpu", "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var st redisStats
	for _, l := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(l, ":")
		f := func() float64 { x, _ := strconv.ParseFloat(v, 64); return x }
		switch {
		case k == "total_net_input_bytes":
			st.in = f()
		case k == "total_net_output_bytes":
			st.out = f()
		case k == "used_cpu_sys" || k == "used_cpu_user":
			st.cpu += f()
		case strings.HasPrefix(k, "cmdstat_"):
			calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
			x, _ := strconv.ParseFloat(calls, 64)
			st.cmds += x
		}
	}
	return st
}
