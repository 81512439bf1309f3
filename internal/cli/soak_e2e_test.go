package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The hostile soak of issue 18, run with
//
//	go test ./internal/cli/ -run Soak -v -soak [-soak-cells 10000 -soak-sessions 20]
//
// It drives the real binary (`codemode serve --http`) with sessions that run cells meant to hurt
// it — endless loops, memory bombs, deep recursion, deep TypeScript, output and promise floods,
// loops of failing nested calls, timers left pending, module access — and prints the server's
// RSS, goroutines and open file descriptors before, at the peak and after (read from /metrics
// and /proc). It fails if goroutines or descriptors grew, or the process died.
var (
	soak         = flag.Bool("soak", false, "run the hostile soak (TestSoak)")
	soakCells    = flag.Int("soak-cells", 10000, "cells in all")
	soakSessions = flag.Int("soak-sessions", 20, "MCP sessions running them")
)

var hostileCells = []map[string]any{
	{"code": "for (;;) {}"},
	{"code": "const a = []; for (;;) a.push(new Array(1e6).fill(1))"},
	{"code": "function f() { return f() + 1 } return f()"},
	{"code": "return 'x'.repeat(1 << 26)"},
	{"code": "let x = []; for (let i = 0; i < 100000; i++) x = [x]; return x"},
	{"code": "for (let i = 0; i < 100000; i++) text(''); return 1"},
	{"code": "for (let i = 0; i < 1000; i++) console.log('line ' + i); return 1"},
	{"code": "let n = 0; for (let i = 0; i < 500; i++) { try { await tools.read({path: 'missing-' + i}) } catch (e) { n++ } } return n"},
	{"code": "await Promise.all(Array.from({length: 100000}, (_, i) => Promise.resolve(i))); return 1"},
	{"code": "for (let i = 0; i < 100; i++) setTimeout(() => {}, 3600000); return 'left timers'"},
	{"code": "await new Promise(() => {}); return 1"},
	{"code": "return await import('fs')"},
	{"code": "throw new Error('x'.repeat(1 << 20))"},
	{"code": "const o = {}; o.o = o; return o"},
	{"code": "return new Proxy({}, {get() { throw new Error('trap') }, ownKeys() { throw new Error('trap') }})"},
	{"code": "Error.prepareStackTrace = () => { for (;;) {} }; throw new Error('x')"},
	{"code": "while (true) { try { for (;;) {} } catch (e) {} }"},
	{"code": "return " + strings.Repeat("(", 260000) + "1" + strings.Repeat(")", 260000), "language": "typescript"},
	{"code": "const x: number = " + strings.Repeat("a=>", 70) + "1; return x", "language": "typescript"},
	{"code": "}); (async function () {"},
	{"code": "return 'ok'"},
}

// metric reads one unlabelled value from a Prometheus text page.
func metric(page, name string) float64 {
	sc := bufio.NewScanner(strings.NewReader(page))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	return -1
}

type soakSample struct {
	rss, goroutines, fds, heap, suspended float64
}

func (s soakSample) String() string {
	return fmt.Sprintf("RSS %.0f MB (Go heap in use %.0f MB), goroutines %.0f, FDs %.0f, suspended runs %.0f",
		s.rss/1e6, s.heap/1e6, s.goroutines, s.fds, s.suspended)
}

func TestSoak(t *testing.T) {
	if !*soak {
		t.Skip("the hostile soak: run with -soak")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "codemode.json5")
	// One-second cells so that 10,000 of them fit in minutes (endless loops end at the deadline).
	// The clients are sessionless (go-sdk's default protocol), so their suspended runs belong to
	// the principal anonymous and end by their TTL, not with a session: 20 s here, so that the
	// last sample shows what they held given back.
	if err := os.WriteFile(cfg, []byte(`{workspace: "`+dir+`", tools: {codeMode: {enabled: true, timeoutMs: 1000, snapshotTtlSeconds: 20}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, nil, "--http", "127.0.0.1:0", "--config", cfg)
	sample := func() soakSample {
		r := s.do(t, "GET", "/metrics", nil, "")
		return soakSample{rss: metric(r.body, "process_resident_memory_bytes"), goroutines: metric(r.body, "go_goroutines"),
			fds: metric(r.body, "process_open_fds"), heap: metric(r.body, "go_memstats_heap_inuse_bytes"),
			suspended: metric(r.body, "codemode_suspended_runs")}
	}
	connect := func() *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "soak", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", HTTPClient: &http.Client{}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	// Warm up (engine, templates, TypeScript), then settle: the baseline has no session open.
	warm := connect()
	for _, c := range hostileCells {
		_, _ = warm.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: c})
	}
	warm.Close()
	time.Sleep(12 * time.Second) // the VM memory pool empties 10 s after its last use
	before := sample()

	var peak soakSample
	var pmu sync.Mutex
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			x := sample()
			pmu.Lock()
			peak.rss, peak.goroutines, peak.fds = max(peak.rss, x.rss), max(peak.goroutines, x.goroutines), max(peak.fds, x.fds)
			peak.heap, peak.suspended = max(peak.heap, x.heap), max(peak.suspended, x.suspended)
			pmu.Unlock()
		}
	}()
	var next atomic.Int64
	var mu sync.Mutex
	outcomes := map[string]int{}
	start := time.Now()
	var wg sync.WaitGroup
	for range *soakSessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs := connect()
			defer cs.Close()
			for {
				i := next.Add(1) - 1
				if i >= int64(*soakCells) {
					return
				}
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: hostileCells[i%int64(len(hostileCells))]})
				key := "transport error"
				if err == nil {
					text := res.Content[0].(*mcp.TextContent).Text
					key = "?"
					if i := strings.Index(text, `"status":"`); i >= 0 {
						key = strings.SplitN(text[i+10:], `"`, 2)[0]
					}
					if i := strings.Index(text, `"code":"`); i >= 0 {
						key += "/" + strings.SplitN(text[i+8:], `"`, 2)[0]
					}
				}
				mu.Lock()
				outcomes[key]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	time.Sleep(12 * time.Second)
	after := sample()
	time.Sleep(30 * time.Second)
	later := sample()
	var keys []string
	for k, n := range outcomes {
		keys = append(keys, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(keys)
	t.Logf("%d hostile cells over %d sessions in %v; outcomes: %s", *soakCells, *soakSessions, elapsed.Round(time.Second), strings.Join(keys, ", "))
	t.Logf("before %v; peak %v; 12 s after %v; 42 s after %v", before, peak, after, later)
	if s.cmd.ProcessState != nil {
		t.Fatalf("the server exited: %v", s.cmd.ProcessState)
	}
	if after.goroutines > before.goroutines+5 || after.fds > before.fds+5 {
		t.Fatalf("goroutines or descriptors grew: before %v, after %v", before, after)
	}
	if later.suspended != 0 {
		t.Fatalf("suspended runs outlived their TTL: %v", later)
	}
}
