package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/provider/scripted"
	"github.com/codemode-go/codemode/internal/trajectory"
)

// binary is the codemode binary built by TestMain; skipReason is set when it cannot be.
var (
	binary     string
	cacheDir   string // wazero's compilation cache, shared by every process of the suite
	skipReason string
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "codemode-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cacheDir = filepath.Join(dir, "wazero")
	root := repoRoot()
	if _, err := os.Stat(filepath.Join(root, "internal", "quickjs", "assets", "quickjs.wasm")); err != nil {
		skipReason = "the QuickJS wasm is not in internal/quickjs/assets (run `make wasm`)"
	} else if runtime.GOOS == "windows" {
		skipReason = "the end-to-end tests use sh for client tools"
	} else {
		binary = filepath.Join(dir, "codemode")
		cmd := exec.Command("go", "build", "-o", binary, "./cmd/codemode")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: go build: %v\n%s", err, out)
			return 1
		}
	}
	return m.Run()
}

func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Join(wd, "..", "..")
}

func needBinary(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}

// everything returns the command line of the pinned server-everything MCP server, or skips.
func everything(t *testing.T) []string {
	t.Helper()
	entry := filepath.Join(repoRoot(), ".cache", "npm", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Skipf("server-everything is not installed in .cache/npm (run `make testdeps`): the MCP steps of §20 need a real MCP server")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH: the MCP steps of §20 need it to run server-everything")
	}
	return []string{"node", entry, "stdio"}
}

// writeJSON writes v as a JSON file (JSON is JSON5) and returns its path.
func writeJSON(t *testing.T, dir, name string, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// obj is a JSON object literal.
type obj = map[string]any

// config returns a configuration with code mode on, short limits, the suite's compilation cache
// and the given workspace; mutate changes it before it is written.
func config(t *testing.T, dir, workspace string, mutate func(c obj)) string {
	t.Helper()
	c := obj{
		"workspace": workspace,
		"tools": obj{
			"codeMode": obj{"enabled": true, "timeoutMs": 1000, "snapshotTtlSeconds": 60},
			"webFetch": obj{"enabled": true},
		},
		"runtime": obj{"compileCacheDir": cacheDir},
	}
	if mutate != nil {
		mutate(c)
	}
	return writeJSON(t, dir, "codemode.json5", c)
}

// tools returns c["tools"].
func tools(c obj) obj { return c["tools"].(obj) }

// codeMode returns c["tools"]["codeMode"].
func codeMode(c obj) obj { return tools(c)["codeMode"].(obj) }

// clientTool is one entry of a --client-tools file.
func clientTool(name, description, script string) obj {
	return obj{"name": name, "description": description, "command": []string{"sh", "-c", script},
		"inputSchema": obj{"type": "object", "properties": obj{}}}
}

// agentCmd is one `codemode agent` invocation.
type agentCmd struct {
	Config      string
	Provider    string
	Server      *scripted.Server
	ClientTools string
	Transcript  string
	Stdin       string
	Args        []string // extra flags
	Env         []string // extra environment
	Prompt      string
}

// agentOut is how it ended.
type agentOut struct {
	Code           int
	Stdout, Stderr string
}

func (c agentCmd) command(ctx context.Context) *exec.Cmd {
	args := []string{"agent", "--base-url", c.Server.BaseURL(c.Provider), "--provider", c.Provider,
		"--model", "scripted-model", "--api-key-env", "E2E_API_KEY"}
	if c.Config != "" {
		args = append(args, "--config", c.Config)
	}
	if c.ClientTools != "" {
		args = append(args, "--client-tools", c.ClientTools)
	}
	if c.Transcript != "" {
		args = append(args, "--transcript", c.Transcript)
	}
	if c.Provider == scripted.Anthropic {
		args = append(args, "--stream") // §20 runs stream in one of the two protocols
	}
	args = append(args, c.Args...)
	prompt := c.Prompt
	if prompt == "" {
		prompt = "do the end-to-end plan"
	}
	args = append(args, prompt)
	cmd := exec.CommandContext(ctx, binary, args...)
	// A clean environment: no API keys or debug switches of the person running the tests.
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8"}, c.Env...)
	cmd.Stdin = strings.NewReader(c.Stdin)
	return cmd
}

// run runs the agent to the end (at most a minute).
func (c agentCmd) run(t *testing.T) agentOut {
	t.Helper()
	needBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := c.command(ctx)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := agentOut{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		out.Code = ee.ExitCode()
	default:
		t.Fatalf("codemode agent: %v\nstderr:\n%s", err, out.Stderr)
	}
	if ctx.Err() != nil {
		t.Fatalf("codemode agent did not finish within a minute\nstderr:\n%s", out.Stderr)
	}
	return out
}

// mustSucceed fails the test unless the agent exited 0.
func (o agentOut) mustSucceed(t *testing.T) {
	t.Helper()
	if o.Code != 0 {
		t.Fatalf("codemode agent exited %d\nstdout:\n%s\nstderr:\n%s", o.Code, o.Stdout, o.Stderr)
	}
}

// readTranscript reads a trajectory file.
func readTranscript(t *testing.T, path string) []api.TrajectoryEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("transcript: %v", err)
	}
	defer f.Close()
	evs, bad, err := trajectory.Read(f)
	if err != nil || len(bad) > 0 {
		t.Fatalf("transcript: %v %v", err, bad)
	}
	return evs
}

// trace runs `codemode trace FILE`.
func trace(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command(binary, "trace", path).CombinedOutput()
	if err != nil {
		t.Fatalf("codemode trace: %v\n%s", err, out)
	}
	return string(out)
}

// result is one tool result the model received, with the CodeModeResult parsed when it is one.
type result struct {
	CallID  string
	Name    string // the tool the model called
	Content string
	IsError bool
	Exec    *execResult
}

// execResult is the CodeModeResult as the model reads it.
type execResult struct {
	Status           string            `json:"status"`
	Value            json.RawMessage   `json:"value"`
	RunID            string            `json:"runId"`
	Reason           string            `json:"reason"`
	PendingToolCalls []json.RawMessage `json:"pendingToolCalls"`
	PendingApprovals []json.RawMessage `json:"pendingApprovals"`
	Output           []api.Output      `json:"output"`
	Error            string            `json:"error"`
	Code             string            `json:"code"`
	Telemetry        api.Telemetry     `json:"telemetry"`
}

// value decodes the completed value into v.
func (r *execResult) value(t testing.TB, v any) {
	t.Helper()
	if r == nil || r.Status != api.StatusCompleted {
		t.Fatalf("not a completed result: %+v", r)
	}
	if err := json.Unmarshal(r.Value, v); err != nil {
		t.Fatalf("value %s: %v", r.Value, err)
	}
}

// outputText joins the text outputs.
func (r *execResult) outputText() string {
	var parts []string
	for _, o := range r.Output {
		if o.Type == "text" {
			parts = append(parts, o.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// parseResults parses the tool results of a request's last message, matching each to its call.
func parseResults(r *scripted.Request) []result {
	calls := map[string]string{}
	for _, m := range r.Messages {
		for _, c := range m.ToolCalls {
			calls[c.ID] = c.Name
		}
	}
	var out []result
	for _, tr := range r.LastResults() {
		res := result{CallID: tr.CallID, Name: calls[tr.CallID], Content: tr.Content, IsError: tr.IsError}
		if res.Name == "exec" || res.Name == "wait" {
			// The JSON result — inside the untrusted-content marking when untrusted sources
			// reached the cell (issue 22: its first two lines) — then (for waiting results) a
			// line saying how to continue.
			body := tr.Content
			if strings.HasPrefix(body, "<<<UNTRUSTED_CONTENT ") {
				if parts := strings.SplitN(body, "\n", 3); len(parts) == 3 {
					body = parts[2]
				}
			}
			var er execResult
			if err := json.NewDecoder(strings.NewReader(body)).Decode(&er); err == nil && er.Status != "" {
				res.Exec = &er
			}
		}
		out = append(out, res)
	}
	return out
}

// step is one model turn of a script and the check of what came back.
type step struct {
	name string
	// reply is the model's turn (tool calls, or the final text).
	reply func(r *scripted.Request) scripted.Reply
	// drain makes the model call wait while the result is waiting; check then gets every result,
	// the call's first.
	drain bool
	// check looks at the results of the turn's calls (one []result per model turn).
	check func(t testing.TB, turns [][]result)
}

// driver plays a script of steps as the model, checks the tools of every request, and records
// what it saw.
type driver struct {
	t     *testing.T
	tools []string // every request must carry exactly these tools, in this order (nil: no check)
	steps []step

	mu      sync.Mutex
	cur     int
	turns   [][]result
	waits   int
	seen    [][]string // the tool names of each request
	results []result   // every result the model received
}

func newDriver(t *testing.T, tools []string, steps ...step) *driver {
	return &driver{t: t, tools: tools, steps: steps, cur: -1}
}

// turn is the scripted server's turn function.
func (d *driver) turn(r *scripted.Request) scripted.Reply {
	d.mu.Lock()
	defer d.mu.Unlock()
	names := r.ToolNames()
	d.seen = append(d.seen, names)
	if d.tools != nil && !slices.Equal(names, d.tools) {
		d.t.Errorf("request %d carries tools %v, want exactly %v", r.N, names, d.tools)
	}
	if d.cur >= 0 {
		res := parseResults(r)
		d.results = append(d.results, res...)
		d.turns = append(d.turns, res)
		st := d.steps[d.cur]
		if st.drain && len(res) == 1 && res[0].Exec != nil && res[0].Exec.Status == api.StatusWaiting && d.waits < 30 {
			d.waits++
			return callTool("wait", obj{"runId": res[0].Exec.RunID})
		}
		if st.check != nil {
			func() {
				defer func() {
					if p := recover(); p != nil && p != errCheckFailed {
						panic(p)
					}
				}()
				st.check(&checkT{d.t, st.name}, d.turns)
			}()
		}
		d.turns = nil
	}
	d.cur++
	if d.cur >= len(d.steps) {
		d.t.Errorf("request %d: the script has no step left", r.N)
		return scripted.Reply{Text: "(script exhausted)"}
	}
	return d.steps[d.cur].reply(r)
}

// Turn returns the driver as a scripted turn.
func (d *driver) Turn() scripted.Turn { return d.turn }

// done fails the test when the script did not run to its end.
func (d *driver) done(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur != len(d.steps)-1 {
		t.Errorf("the script stopped at step %d of %d", d.cur+1, len(d.steps))
	}
}

// server starts a scripted model for the driver.
func (d *driver) server(t *testing.T, opts scripted.Options) *scripted.Server {
	opts.Repeat = d.Turn()
	return scripted.Start(t, opts)
}

var errCheckFailed = errors.New("check failed")

// checkT lets a check stop at its first fatal failure without killing the server goroutine.
type checkT struct {
	*testing.T
	step string
}

// Fatalf reports and ends the check (not the test: checks run on the server's goroutine).
func (c *checkT) Fatalf(format string, args ...any) {
	c.T.Helper()
	c.T.Errorf("step %q: "+format, append([]any{c.step}, args...)...)
	panic(errCheckFailed)
}

// Errorf names the step.
func (c *checkT) Errorf(format string, args ...any) {
	c.T.Helper()
	c.T.Errorf("step %q: "+format, append([]any{c.step}, args...)...)
}

// callTool is a model turn that calls one tool.
func callTool(name string, args any) scripted.Reply {
	b, _ := json.Marshal(args)
	return scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: name, Arguments: string(b)}}}
}

// execStep is a step whose turn runs code.
func execStep(name, code string, drain bool, check func(t testing.TB, turns [][]result)) step {
	return step{name: name, drain: drain, check: check,
		reply: func(*scripted.Request) scripted.Reply { return callTool("exec", obj{"code": code}) }}
}

// answer is the final step: the model replies with text.
func answer(text func() string) step {
	return step{name: "answer", reply: func(*scripted.Request) scripted.Reply { return scripted.Reply{Text: text()} }}
}

// only returns the single exec result of a turn list, failing otherwise.
func only(t testing.TB, turns [][]result) *execResult {
	t.Helper()
	if len(turns) != 1 || len(turns[0]) != 1 || turns[0][0].Exec == nil {
		t.Fatalf("want one exec/wait result, got %+v", turns)
	}
	return turns[0][0].Exec
}

// final returns the last exec result of a drained step.
func final(t testing.TB, turns [][]result) *execResult {
	t.Helper()
	last := turns[len(turns)-1]
	if len(last) != 1 || last[0].Exec == nil {
		t.Fatalf("want an exec/wait result, got %+v", last)
	}
	return last[0].Exec
}

// events filters a trajectory.
func events(evs []api.TrajectoryEvent, keep func(api.TrajectoryEvent) bool) []api.TrajectoryEvent {
	var out []api.TrajectoryEvent
	for _, ev := range evs {
		if keep(ev) {
			out = append(out, ev)
		}
	}
	return out
}
