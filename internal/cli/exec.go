package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/gateway"
)

// runExec implements `codemode exec`: one cell, every exec/wait result as a JSON line. Exit 0
// when the last result is completed, 1 when failed, 2 for usage or config errors.
func runExec(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := newCommand("exec", "[--config FILE] [--language javascript|typescript] [--no-wait] (--code CODE | FILE | -)", `
Runs one cell — the body of an async JavaScript or TypeScript function — in the sandbox, with
the configuration's tools behind it, and prints every result as one JSON line: completed,
failed, or waiting (then it waits and prints the next, unless --no-wait). A FILE ending in .ts is
TypeScript. Exit status: 0 completed, 1 failed, 2 usage or configuration error.`, stdout, stderr)
	cfgPath := c.fs.String("config", "", "configuration `FILE` (JSON5); default: the embedded default")
	lang := c.fs.String("language", "", "`LANGUAGE` of the cell: javascript or typescript (default: from the file extension, else javascript)")
	code := c.fs.String("code", "", "the cell's `CODE`")
	noWait := c.fs.Bool("no-wait", false, "print only the first result, even if it is waiting")
	pos, status, done := c.parse(args)
	if done {
		return status
	}
	fs := c.fs
	var src string
	var err error
	switch {
	case isFlagSet(fs, "code") && len(pos) > 0:
		return c.usageError("give either --code or a FILE (or - for stdin), not both")
	case isFlagSet(fs, "code"):
		src = *code
	case len(pos) == 1:
		var b []byte
		if pos[0] == "-" {
			b, err = io.ReadAll(io.LimitReader(stdin, 16<<20))
		} else {
			b, err = os.ReadFile(pos[0])
			if *lang == "" && strings.EqualFold(filepath.Ext(pos[0]), ".ts") {
				*lang = "typescript"
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "codemode exec:", err)
			return exitUsage
		}
		src = string(b)
	case len(pos) > 1:
		return c.usageError("one FILE at a time (got %d)", len(pos))
	default:
		return c.usageError("no cell to run: give --code CODE, a FILE, or - to read stdin")
	}
	if *lang == "" {
		*lang = "javascript"
	}
	if *lang != "javascript" && *lang != "typescript" {
		return c.usageError("--language must be javascript or typescript, not %q", *lang)
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return configError(stderr, err)
	}
	if !cfg.Tools.CodeMode.Enabled {
		fmt.Fprintln(stderr, "codemode exec: code mode is disabled in this configuration (tools.codeMode.enabled is not true)")
		return exitUsage
	}
	g, err := gateway.Open(ctx, withoutAuditLog(cfg), gateway.Options{Logger: stderrLogger(stderr)})
	if err != nil {
		fmt.Fprintln(stderr, "codemode exec:", err)
		return exitFailed
	}
	defer g.Close()
	s := g.Surface(cliRun, nil)
	res := s.Exec(ctx, "exec_1", codemode.ExecInput{Code: src, Language: *lang})
	return printResults(ctx, "exec", s, res, *noWait, stdout, stderr)
}

// cliRun is the CLI's fixed run context: `codemode wait` in another process resumes the runs
// `codemode exec --no-wait` left in a shared store because both use it.
var cliRun = api.RunContext{AgentID: "cli", SessionKey: "cli", RunID: "cli"}

// printResults prints res and, unless noWait, every wait result until the run ends, one JSON
// object per line. Exit 0 when the last is completed (or waiting with noWait), 1 when failed.
func printResults(ctx context.Context, cmd string, s *codemode.Surface, res api.ExecResult, noWait bool, stdout, stderr io.Writer) int {
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	for i := 2; ; i++ {
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "codemode %s: %v\n", cmd, err)
			return exitFailed
		}
		if res.Status != api.StatusWaiting || noWait {
			break
		}
		res = waitRetryingBusy(ctx, s, fmt.Sprintf("wait_%d", i), res.RunID, stderr)
	}
	switch res.Status {
	case api.StatusCompleted, api.StatusWaiting:
		return exitOK
	default:
		return exitFailed
	}
}

// runWait implements `codemode wait RUNID`: it resumes a run another process left waiting in the
// shared run store (runStore.redis) and prints each result until the run ends, like exec.
func runWait(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCommand("wait", "[--config FILE] RUNID", `
Resumes a run that another process left waiting in the shared run store (runStore.redis) and
prints each result as one JSON line until the run ends, like exec. Exit status: 0 completed,
1 failed, 2 usage or configuration error.`, stdout, stderr)
	cfgPath := c.fs.String("config", "", "configuration `FILE` (JSON5) with runStore.redis; default: the embedded default")
	pos, status, done := c.parse(args)
	if done {
		return status
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return c.usageError("give one RUNID (the runId of a waiting result)")
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return configError(stderr, err)
	}
	if cfg.RunStore.Redis == nil {
		fmt.Fprintln(stderr, "codemode wait: this configuration keeps suspended runs in the memory of the process that made them, so no other process can resume them: configure a shared store (runStore: {redis: {url, keyEnv}}) for exec and wait alike")
		return exitUsage
	}
	if !cfg.Tools.CodeMode.Enabled {
		fmt.Fprintln(stderr, "codemode wait: code mode is disabled in this configuration (tools.codeMode.enabled is not true)")
		return exitUsage
	}
	g, err := gateway.Open(ctx, withoutAuditLog(cfg), gateway.Options{Logger: stderrLogger(stderr)})
	if err != nil {
		fmt.Fprintln(stderr, "codemode wait:", err)
		return exitFailed
	}
	defer g.Close()
	s := g.Surface(cliRun, nil)
	res := waitRetryingBusy(ctx, s, "wait_1", pos[0], stderr)
	return printResults(ctx, "wait", s, res, false, stdout, stderr)
}

// maxBusyWait bounds how long waitRetryingBusy keeps retrying a busy run: a stopped replica's
// hold runs out within runStore.redis.takeoverMs (5 s by default), a live wait's within timeoutMs.
const maxBusyWait = 2 * time.Minute

// waitRetryingBusy is a wait that retries, after the retryAfterMs it is given, while the run is
// busy (another wait holds it: a concurrent one, or one on a replica that stopped whose hold has
// not run out yet): busy is not a failure of the run (docs/semantics.md §4).
func waitRetryingBusy(ctx context.Context, s *codemode.Surface, callID, runID string, stderr io.Writer) api.ExecResult {
	deadline := time.Now().Add(maxBusyWait)
	for i := 1; ; i++ {
		res := s.Wait(ctx, callID, codemode.WaitInput{RunID: runID})
		if res.Code != api.CodeBusy || time.Now().After(deadline) {
			return res
		}
		d := min(max(time.Duration(res.RetryAfterMs)*time.Millisecond, 10*time.Millisecond), 5*time.Second)
		if i == 1 {
			fmt.Fprintf(stderr, "codemode wait: run %s is busy (another wait holds it); retrying in %v\n", runID, d.Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return res
		case <-time.After(d):
		}
		callID = fmt.Sprintf("%s#busy-%d", callID, i)
	}
}
