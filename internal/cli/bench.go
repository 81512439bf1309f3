package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/quickjs"
	"github.com/codemode-go/codemode/internal/sandbox"
	"github.com/codemode-go/codemode/internal/search/searcheval"
	"github.com/codemode-go/codemode/internal/testtools"
)

// benchResult is one line of `codemode bench --json`.
type benchResult struct {
	Name   string  `json:"name"`
	Unit   string  `json:"unit"`
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

func summarize(name string, samples []time.Duration) benchResult {
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return benchResult{Name: name, Unit: "ms", N: len(samples), Min: ms(samples[0]),
		Median: ms(samples[len(samples)/2]), Max: ms(samples[len(samples)-1])}
}

// runBench implements `codemode bench`: min/median/max timings of the sandbox, as a table or
// (--json) an array of {name, unit, n, min, median, max}.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "search" {
		return runBenchSearch(args[1:], stdout, stderr)
	}
	c := newCommand("bench", "[--json] [--config FILE] [--n N] [--only NAME]\n       codemode bench search [--catalog FILE] [--queries FILES]", `
Measures the sandbox on this machine — a trivial exec, a 1,000-tool catalog, nested calls,
suspension hot and cold — and prints min/median/max per measurement. 'codemode bench search'
scores tools.search and MCP.$search on a catalog of real MCP tools (recall@k, MRR); see
'codemode bench search --help'.`, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print JSON instead of a table")
	cfgPath := c.fs.String("config", "", "configuration `FILE` (JSON5); default: the embedded default")
	n := c.fs.Int("n", 50, "`N` iterations per measurement")
	only := c.fs.String("only", "", "run only the measurements whose name contains `NAME`")
	pos, status, done := c.parse(args)
	if done {
		return status
	}
	if len(pos) > 0 {
		return c.usageError("unexpected argument %q", pos[0])
	}
	if *n < 1 {
		return c.usageError("--n must be at least 1")
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return configError(stderr, err)
	}
	cfg.Tools.CodeMode.Enabled = true
	rt, err := benchRuntime(ctx, cfg, 0)
	if err != nil {
		fmt.Fprintln(stderr, "codemode bench: runtime unavailable:", err)
		return exitFailed
	}
	defer rt.Close()
	coldRT, err := benchRuntime(ctx, cfg, -1)
	if err != nil {
		fmt.Fprintln(stderr, "codemode bench: runtime unavailable:", err)
		return exitFailed
	}
	defer coldRT.Close()
	var results []benchResult
	add := func(name string, iters int, f func() error) bool {
		if *only != "" && !strings.Contains(name, *only) {
			return true
		}
		if err := f(); err != nil { // warm-up, and a correctness check
			fmt.Fprintf(stderr, "codemode bench: %s: %v\n", name, err)
			return false
		}
		samples := make([]time.Duration, 0, iters)
		for i := 0; i < iters; i++ {
			t0 := time.Now()
			if err := f(); err != nil {
				fmt.Fprintf(stderr, "codemode bench: %s: %v\n", name, err)
				return false
			}
			samples = append(samples, time.Since(t0))
		}
		results = append(results, summarize(name, samples))
		return true
	}
	benches, err := sandboxBenches(ctx, rt)
	if err != nil {
		fmt.Fprintln(stderr, "codemode bench:", err)
		return exitFailed
	}
	for _, b := range benches {
		iters := *n
		if b.heavy {
			iters = max(3, *n/10)
		}
		if !add(b.name, iters, func() error { return b.run(ctx) }) {
			return exitFailed
		}
	}
	if err := benchSuspended(ctx, rt, coldRT, *n, *only, add, &results); err != nil {
		fmt.Fprintln(stderr, "codemode bench:", err)
		return exitFailed
	}
	if exe, err := os.Executable(); err == nil {
		if !add("cold start to first completed exec (warm compile cache)", max(3, *n/5), func() error {
			out, err := exec.CommandContext(ctx, exe, "exec", "--code", "return 1+1").Output()
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}) {
			return exitFailed
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(results)
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measurement\tn\tmin\tmedian\tmax\tunit\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%s\t\n", r.Name, r.N, r.Min, r.Median, r.Max, r.Unit)
	}
	_ = tw.Flush()
	return exitOK
}

// benchSuspended measures suspension twice: with hot VMs (the default: a suspended run keeps its
// VM, wait continues it in place) and cold (every suspended run is a stored snapshot, as after an
// eviction or in another process): exec → waiting, wait → completed, and what 64 suspended runs
// hold. The 64 runs are spread over sessions so the per-session share (runs.maxRunsPerSession)
// does not refuse them.
func benchSuspended(ctx context.Context, hot, cold *codemode.Runtime, n int, only string, add func(string, int, func() error) bool, results *[]benchResult) error {
	for _, v := range []struct {
		mode string
		rt   *codemode.Runtime
	}{{"hot", hot}, {"cold", cold}} {
		if err := benchSuspendedOn(ctx, v.rt, v.mode, n, only, add, results); err != nil {
			return fmt.Errorf("%s: %w", v.mode, err)
		}
	}
	return nil
}

func benchSuspendedOn(ctx context.Context, rt *codemode.Runtime, mode string, n int, only string, add func(string, int, func() error) bool, results *[]benchResult) error {
	session := func(i int) *codemode.Surface {
		return rt.Activate(api.RunContext{SessionKey: fmt.Sprintf("bench-suspend-%d", i/8)}, nil)
	}
	s := session(0)
	code := `const state = {items: Array.from({length: 200}, (_, i) => ({i, name: "item " + i}))};
await yield_control("bench"); return state.items.length`
	var runID string
	suspend := func(s *codemode.Surface) error {
		res := s.Exec(ctx, "bench", codemode.ExecInput{Code: code})
		if res.Status != api.StatusWaiting {
			return fmt.Errorf("%s: %s", res.Status, res.Error)
		}
		runID = res.RunID
		return nil
	}
	if !add("suspend ("+mode+"): exec → waiting", n, func() error {
		if err := suspend(s); err != nil {
			return err
		}
		rt.CancelRun(runID)
		return nil
	}) {
		return errors.New("suspend failed")
	}
	resumeName := "resume (" + mode + "): wait → completed"
	if only != "" && !strings.Contains(resumeName, only) && !strings.Contains("suspended", only) {
		return nil
	}
	var samples []time.Duration
	for i := 0; i < n; i++ {
		if err := suspend(s); err != nil {
			return err
		}
		t0 := time.Now()
		res := s.Wait(ctx, "bench", codemode.WaitInput{RunID: runID})
		samples = append(samples, time.Since(t0))
		if res.Status != api.StatusCompleted {
			return fmt.Errorf("wait: %s: %s", res.Status, res.Error)
		}
	}
	*results = append(*results, summarize(resumeName, samples))
	// 64 suspended runs: what they hold, stored snapshots or live VMs, and the Go heap.
	const runs = 64
	goruntime.GC()
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	var ids []string
	for i := 0; i < runs; i++ {
		if err := suspend(session(i)); err != nil {
			return fmt.Errorf("suspended run %d: %w", i+1, err)
		}
		ids = append(ids, runID)
	}
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	st := rt.Stats()
	one := func(name, unit string, v float64) benchResult {
		return benchResult{Name: name, Unit: unit, N: 1, Min: v, Median: v, Max: v}
	}
	if mode == "cold" {
		*results = append(*results, one("stored bytes per suspended run (cold)", "KB", float64(st.SuspendedBytes)/runs/1024))
	} else {
		*results = append(*results, one(fmt.Sprintf("%d suspended runs (hot): %d live VMs, linear memory", runs, st.HotRuns), "MB", float64(st.HotBytes)/(1<<20)))
	}
	*results = append(*results, one(fmt.Sprintf("%d suspended runs (%s): Go heap held", runs, mode), "MB", mb(after.HeapInuse, before.HeapInuse)))
	for _, id := range ids {
		rt.CancelRun(id)
	}
	return nil
}

// benchRuntime builds the runtime measured; hotRuns as Options.HotRuns (-1: no hot VMs).
func benchRuntime(ctx context.Context, cfg *config.Config, hotRuns int) (*codemode.Runtime, error) {
	opts := codemode.ConfigOptions(cfg)
	opts.HotRuns = hotRuns
	rt, err := codemode.New(ctx, opts)
	if err == nil {
		err = rt.Err()
	}
	return rt, err
}

func mb(a, b uint64) float64 {
	if a < b {
		return 0
	}
	return float64(a-b) / (1 << 20)
}

type sandboxBench struct {
	name  string
	heavy bool
	run   func(ctx context.Context) error
}

// cellBench measures one exec end to end through a Surface.
func cellBench(s *codemode.Surface, code, want string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		res := s.Exec(ctx, "bench", codemode.ExecInput{Code: code})
		if res.Status != api.StatusCompleted {
			return fmt.Errorf("%s: %s", res.Status, res.Error)
		}
		if want != "" && string(res.Value) != want {
			return fmt.Errorf("value %s, want %s", res.Value, want)
		}
		return nil
	}
}

func sandboxBenches(ctx context.Context, rt *codemode.Runtime) ([]sandboxBench, error) {
	s := rt.Activate(api.RunContext{SessionKey: "bench"}, nil)
	big := rt.Activate(api.RunContext{SessionKey: "bench"}, testtools.Synthetic(1000))
	mod, err := quickjs.Load(ctx, quickjs.ModuleOptions{})
	if err != nil {
		return nil, err
	}
	eng, err := sandbox.NewEngine(ctx, mod)
	if err != nil {
		return nil, err
	}
	return []sandboxBench{
		{name: "template restore to first eval", run: eng.BenchRestore},
		{name: "trivial exec (return 1+1)", run: cellBench(s, "return 1+1", "2")},
		{name: "fib(25)", heavy: true, run: cellBench(s, "function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2) } return fib(25)", "75025")},
		{name: "100 KB JSON parse+stringify", heavy: true, run: cellBench(s, `const o = []; for (let i = 0; i < 1000; i++) o.push({id: i, name: "item " + i + " of the benchmark set", tags: ["a", "b", "c"], score: i / 7});
const s = JSON.stringify(o); const back = JSON.parse(s); return [s.length > 90000, JSON.stringify(back) === s]`, "[true,true]")},
		{name: "1,000-tool catalog: trivial exec", run: cellBench(big, "return 1+1", "2")},
		{name: "1,000-tool catalog: exec with one tools.search", run: cellBench(big, `return (await tools.search("export the invoice report")).length`, "8")},
		{name: "1,000-tool catalog: 100 sequential awaited calls", run: cellBench(big, `for (let i = 0; i < 100; i++) await tools.callValue(ALL_TOOLS[i].id, {id: "x"}); return 1`, "1")},
		{name: "1,000-tool catalog: 100 calls through Promise.all", run: cellBench(big, `await Promise.all(ALL_TOOLS.slice(0, 100).map(t => tools.callValue(t.id, {id: "x"}))); return 1`, "1")},
	}, nil
}

// runBenchSearch evaluates the search ranking on the real MCP catalog.
func runBenchSearch(args []string, stdout, stderr io.Writer) int {
	c := newCommand("bench search", "[--catalog FILE] [--queries FILES]", `
Scores the tool search (tools.search and MCP.$search) on a catalog of real MCP tool definitions
and query files ({query, relevant: ["server/tool", …], kind}): recall@1/5/10 and MRR, overall
and per query kind. The defaults are the repository's evaluation files: run it from the
repository root, or pass both flags.`, stdout, stderr)
	catalogPath := c.fs.String("catalog", filepath.Join("internal", "search", "testdata", "catalog.json"), "`FILE` of real MCP tool definitions")
	queries := c.fs.String("queries", filepath.Join("internal", "search", "testdata", "queries.json")+","+filepath.Join("internal", "search", "testdata", "queries-dev.json"), "comma-separated query `FILES`")
	pos, status, done := c.parse(args)
	if done {
		return status
	}
	if len(pos) > 0 {
		return c.usageError("unexpected argument %q", pos[0])
	}
	var paths []string
	for _, p := range strings.Split(*queries, ",") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	if _, err := searcheval.Run(stdout, *catalogPath, paths...); err != nil {
		fmt.Fprintln(stderr, "codemode bench search:", err, "(run it from the repository root, or pass --catalog and --queries)")
		return exitFailed
	}
	return exitOK
}
