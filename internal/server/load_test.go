package server

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/admission"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The serve load benchmarks (issue 9), run with
//
//	go test ./internal/server/ -run Load -v -load
//
// They drive a real streamable HTTP listener on loopback with go-sdk clients, in this process
// (so RSS is the gateway's plus the clients'), and print their figures with t.Log.
var (
	load        = flag.Bool("load", false, "run the serve load benchmarks (TestLoad*)")
	loadRunning = flag.Int("load-running", 0, "runtime.admission.maxRunning for TestLoad50Sessions (0: the default)")
	// loadProtocol is the protocol the load clients speak: "stateless" (2026-07-28, go-sdk's
	// default: every request stands alone) or "session" (2025-11-25: initialize, Mcp-Session-Id).
	loadProtocol = flag.String("load-protocol", "session", "protocol of TestLoad50Sessions' clients: session or stateless")
)

// loadSessionOptions pins the load clients' protocol.
func loadSessionOptions() *mcp.ClientSessionOptions {
	if *loadProtocol == "stateless" {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: sessionProtocol}
}

func loadServer(t *testing.T, mutate func(*config.Config), o HTTPOptions) (*Server, string) {
	t.Helper()
	if !*load {
		t.Skip("a load benchmark: run with -load")
	}
	cfg := config.Default()
	cfg.Workspace = t.TempDir()
	if mutate != nil {
		mutate(cfg)
	}
	echo := &api.Tool{Name: "echo", Description: "echo", ReadOnly: true,
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			return &api.Result{Content: []api.ContentBlock{{Type: "text", Text: "ok"}}, Details: c.Input}, nil
		}}
	srv, _, ctx := openServer(t, cfg, []*api.Tool{echo})
	o.Loopback = true
	ts := httptest.NewServer(srv.HTTPHandler(ctx, o))
	t.Cleanup(ts.Close)
	return srv, ts.URL + "/mcp"
}

// TestLoad50Sessions: 50 MCP sessions × 20 execs of 10 nested calls each.
func TestLoad50Sessions(t *testing.T) {
	_, url := loadServer(t, func(c *config.Config) {
		if *loadRunning > 0 {
			c.Runtime.Admission.MaxRunning = *loadRunning
		}
	}, HTTPOptions{})
	const sessions, execs = 50, 20
	code := `let n = 0; for (let i = 0; i < 10; i++) n += (await tools.echo({i})).i; return n`
	var mu sync.Mutex
	var lat []time.Duration
	failures := map[string]int{}
	var wg sync.WaitGroup
	start := time.Now()
	for range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, loadSessionOptions())
			if err != nil {
				mu.Lock()
				failures["connect: "+err.Error()]++
				mu.Unlock()
				return
			}
			defer cs.Close()
			for range execs {
				t0 := time.Now()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"code": code}})
				d := time.Since(t0)
				mu.Lock()
				switch {
				case err != nil:
					failures[err.Error()]++
				case res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"value":45`):
					failures[res.Content[0].(*mcp.TextContent).Text[:min(120, len(res.Content[0].(*mcp.TextContent).Text))]]++
				default:
					lat = append(lat, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(float64(len(lat))*p))]
	}
	t.Logf("%s protocol: 50 clients × 20 execs × 10 nested calls: %d ok in %v = %.0f execs/s; p50 %v p99 %v max %v; failures %v",
		*loadProtocol, len(lat), el.Round(time.Millisecond), float64(len(lat))/el.Seconds(), pct(.5), pct(.99), pct(1), failures)
	if len(failures) > 0 {
		t.Fatalf("failures: %v", failures)
	}
}

// TestLoadHeavyExecs: 80 parallel execs that each fill a 64 MiB heap; peak RSS must stay
// within the admission budget and every exec ends with a clear result.
func TestLoadHeavyExecs(t *testing.T) {
	srv, url := loadServer(t, nil, HTTPOptions{})
	debug.SetMemoryLimit(admission.GoMemoryLimit(admission.Derive(config.Default()))) // as `codemode serve` does
	defer debug.SetMemoryLimit(math.MaxInt64)
	resetPeakRSS()
	base := rss("VmRSS")
	code := `const a = []; for (;;) a.push("x".repeat(65536) + a.length); return a.length`
	var mu sync.Mutex
	outcomes := map[string]int{}
	var wg sync.WaitGroup
	start := time.Now()
	for i := range 80 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "heavy", Version: "1"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: sessionProtocol})
			if err != nil {
				t.Error(err)
				return
			}
			defer cs.Close()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"code": code}})
			key := ""
			if err != nil {
				key = "error: " + err.Error()
			} else {
				var r api.ExecResult
				_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &r)
				key = r.Status + "/" + string(r.Code) + ": " + r.Error[:min(60, len(r.Error))]
			}
			mu.Lock()
			outcomes[key]++
			mu.Unlock()
			_ = i
		}()
	}
	wg.Wait()
	running, queued, rejected := srv.g.AdmissionStats()
	t.Logf("80 heavy execs in %v: outcomes %v; RSS before %d MiB, peak %d MiB (slots %d × %d MiB limit); after: running %d queued %d rejected %d",
		time.Since(start).Round(time.Millisecond), outcomes, base>>20, rss("VmHWM")>>20, srv.g.RT.Stats().Admission.MaxRunning, config.Default().Tools.CodeMode.MemoryLimitBytes>>20, running, queued, rejected)
	if budget := admission.GoMemoryLimit(admission.Derive(config.Default())); rss("VmHWM") > budget {
		t.Errorf("peak RSS %d MiB over the memory budget's Go limit %d MiB", rss("VmHWM")>>20, budget>>20)
	}
	for k := range outcomes {
		if !strings.HasPrefix(k, "failed/") || !(strings.Contains(k, "memory limit") || strings.Contains(k, "overloaded") || strings.Contains(k, "timed out")) {
			t.Errorf("unclear outcome %q", k)
		}
	}
	time.Sleep(11 * time.Second) // the admission controller's idle release
	runtime.GC()
	t.Logf("RSS 11 s after the burst: %d MiB", rss("VmRSS")>>20)
}

// TestLoadSessionChurn: 1,000 sessions come and go, half closed (DELETE), half abandoned;
// goroutines and RSS after the idle timeout reaps the abandoned ones.
func TestLoadSessionChurn(t *testing.T) {
	srv, url := loadServer(t, nil, HTTPOptions{SessionIdleTimeout: 2 * time.Second})
	runtime.GC()
	g0, r0 := runtime.NumGoroutine(), rss("VmRSS")
	var wg sync.WaitGroup
	var amu sync.Mutex
	var abandoned []*mcp.ClientSession
	sem := make(chan struct{}, 50)
	for i := range 1000 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			hc := &http.Client{}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "churn", Version: "1"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: sessionProtocol})
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"code": "await yield_control(); return 1"}}); err != nil {
				t.Error(err)
			}
			if i%2 == 0 {
				cs.Close() // DELETE
			} else {
				amu.Lock()
				abandoned = append(abandoned, cs)
				amu.Unlock()
			}
			hc.CloseIdleConnections() // abandoned or not, the client is gone
		}()
	}
	wg.Wait()
	peak := srv.sess.count()
	deadline := time.Now().Add(60 * time.Second)
	for srv.sess.count() > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	// The abandoned clients' own goroutines live in this process: end them (their DELETE finds
	// nothing) so that what is counted below is the server's.
	reaped := srv.sess.count()
	for _, cs := range abandoned {
		cs.Close()
	}
	time.Sleep(time.Second)
	runtime.GC()
	t.Logf("reaped to %d sessions", reaped)
	t.Logf("1,000 sessions (500 closed, 500 abandoned): %d open after the loop, %d after reaping; goroutines %d → %d; RSS %d → %d MiB; suspended runs left %d",
		peak, srv.sess.count(), g0, runtime.NumGoroutine(), r0>>20, rss("VmRSS")>>20, srv.g.RT.Stats().SuspendedRuns)
	if srv.sess.count() != 0 || srv.g.RT.Stats().SuspendedRuns != 0 || runtime.NumGoroutine() > g0+20 {
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		t.Fatal("sessions, runs or goroutines left behind")
	}
}

// rss reads a VmRSS/VmHWM line of /proc/self/status in bytes (0 off Linux).
func rss(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if bytes.HasPrefix(l, []byte(field+":")) {
			var kb int64
			fmt.Sscan(string(bytes.TrimPrefix(l, []byte(field+":"))), &kb)
			return kb << 10
		}
	}
	return 0
}

// resetPeakRSS resets VmHWM (Linux: writing 5 to clear_refs).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }
