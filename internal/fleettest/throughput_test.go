package fleettest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkFleetThroughput is suspend/resume throughput (issue 20's benchmarks) through haproxy,
// with one replica behind it and with three, on the same Redis, with the same 6 concurrent
// clients; each run is an exec that suspends (yield_control) and a wait that completes it.
//
//   - sticky: each client keeps one MCP session (the balancer keeps it on one replica), as an
//     agent does: every wait resumes the live VM of its replica.
//   - oneshot: every exec and every wait is a new MCP session (as `codemode exec` and `codemode
//     wait` are), spread round-robin: with three replicas most waits import the run from Redis.
//
// On a 2-core machine every process (replicas, Redis, haproxy, the clients) shares the same two
// cores, so three replicas cannot add CPU: what this measures is the cost of spreading a fleet
// (the runs/s), and where the CPU goes (replica-cpu-ms/run: the replicas' user+system time per
// run, from /proc, which contention inflates far less than wall time).
//
//	go test -run '^$' -bench FleetThroughput -benchtime 300x ./internal/fleettest/
func BenchmarkFleetThroughput(b *testing.B) {
	f := startFleet(b)
	lbs := map[int]string{1: startHAProxy(b, f.replicas[:1]), 3: f.lb}
	const clients = 6
	code := map[string]any{"code": `await yield_control(); return 1`}
	ctx := context.Background()
	for _, mode := range []string{"sticky", "oneshot"} {
		for _, n := range []int{1, 3} {
			b.Run(fmt.Sprintf("%s/replicas=%d", mode, n), func(b *testing.B) {
				lb := lbs[n]
				var sessions []*mcp.ClientSession
				if mode == "sticky" {
					for range clients {
						sessions = append(sessions, connect(b, lb))
					}
				}
				one := func(c int) error {
					if mode == "oneshot" {
						r, _, err := call(ctx, lb, "exec", code)
						if err != nil || r.Status != api.StatusWaiting {
							return fmt.Errorf("exec: %v %+v", err, r)
						}
						for {
							w, _, err := call(ctx, lb, "wait", map[string]any{"runId": r.RunID})
							switch {
							case err != nil:
								return err
							case w.Code == api.CodeBusy:
								time.Sleep(time.Duration(w.RetryAfterMs) * time.Millisecond)
								continue
							case w.Status != api.StatusCompleted:
								return fmt.Errorf("wait: %+v", w)
							}
							return nil
						}
					}
					r, err := callOn(ctx, sessions[c], "exec", code)
					if err != nil || r.Status != api.StatusWaiting {
						return fmt.Errorf("exec: %v %+v", err, r)
					}
					if w, err := callOn(ctx, sessions[c], "wait", map[string]any{"runId": r.RunID}); err != nil || w.Status != api.StatusCompleted {
						return fmt.Errorf("wait: %v %+v", err, w)
					}
					return nil
				}
				cpu0 := f.replicaCPU()
				b.ResetTimer()
				var next atomic.Int64
				var wg sync.WaitGroup
				for c := range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= int64(b.N) {
							if err := one(c); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
				b.ReportMetric(float64((f.replicaCPU()-cpu0).Microseconds())/1000/float64(b.N), "replica-cpu-ms/run")
				for _, s := range sessions {
					_ = s.Close()
				}
			})
		}
	}
}

// connect opens an MCP session through url that stays open.
func connect(tb testing.TB, url string) *mcp.ClientSession {
	tb.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "fleet-bench", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url + "/mcp", DisableStandaloneSSE: true, HTTPClient: &http.Client{Transport: authTransport{}}}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return cs
}

// callOn is call on an open session.
func callOn(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (api.ExecResult, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return api.ExecResult{}, err
	}
	return decodeResult(res)
}

// replicaCPU is the user+system CPU time the replicas used so far.
func (f *fleet) replicaCPU() time.Duration {
	var total time.Duration
	for _, r := range f.replicas {
		r.mu.Lock()
		if r.cmd != nil {
			total += procCPU(r.cmd.Process.Pid)
		}
		r.mu.Unlock()
	}
	return total
}

// procCPU reads a process's utime+stime from /proc (clock ticks of 10 ms).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // after the command name
	if len(fields) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
