package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// The client tools of the §20 run: programs that read their JSON input on stdin.
const (
	greetScript    = `printf '{"greeting":"hello","input":'; cat; printf '}'`
	slowScript     = `sleep 2; echo '{"slow":"done"}'`
	progressScript = `for i in 1 2 3; do echo "step $i of 3" >&2; sleep 0.05; done; echo '{"progress":"finished"}'`
)

func planClientTools(t *testing.T, dir string) string {
	return writeJSON(t, dir, "client-tools.json5", []obj{
		clientTool("greet", "Greet someone.", greetScript),
		clientTool("slow", "A tool that takes two seconds.", slowScript),
		clientTool("progress", "A tool that reports progress on stderr.", progressScript),
	})
}

// TestPlan is SPEC §20 steps 1–16 against the real binary, once per provider protocol
// (OpenAI as JSON, Anthropic streamed).
func TestPlan(t *testing.T) {
	needBinary(t)
	for _, prov := range []string{scripted.OpenAI, scripted.Anthropic} {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()
			t.Run("disabled", func(t *testing.T) { t.Parallel(); planDisabled(t, prov) })
			t.Run("enabled", func(t *testing.T) { t.Parallel(); planEnabled(t, prov) })
			t.Run("cancel", func(t *testing.T) { t.Parallel(); planCancel(t, prov) })
			t.Run("expiry", func(t *testing.T) { t.Parallel(); planExpiry(t, prov) })
		})
	}
}

// planDisabled is steps 1–3: with code mode disabled, the request's tools are exactly the run's
// direct tools (A4), and the model calls one of them directly.
func planDisabled(t *testing.T, prov string) {
	dir := t.TempDir()
	cfg := config(t, dir, workspace(t), func(c obj) {
		tools(c)["codeMode"] = obj{"enabled": false, "timeoutMs": 1000} // limits alone never enable it (C1)
		tools(c)["allow"] = []string{"read", "ls", "client:cli:*"}
	})
	ct := writeJSON(t, dir, "client-tools.json5", []obj{clientTool("greet", "Greet someone.", greetScript)})
	d := newDriver(t, []string{"read", "ls", "greet"},
		step{name: "direct read", reply: func(*scripted.Request) scripted.Reply {
			return callTool("read", obj{"path": "README.md"})
		}, check: func(t testing.TB, turns [][]result) {
			r := turns[0][0]
			if r.IsError || !strings.Contains(r.Content, "plain workspace") {
				t.Errorf("direct read: %+v", r)
			}
		}},
		step{name: "direct client tool", reply: func(*scripted.Request) scripted.Reply {
			return callTool("greet", obj{"who": "direct"})
		}, check: func(t testing.TB, turns [][]result) {
			if r := turns[0][0]; r.IsError || !strings.Contains(r.Content, `"who":"direct"`) {
				t.Errorf("direct client tool: %+v", r)
			}
		}},
		answer(func() string { return "read it" }),
	)
	srv := d.server(t, scripted.Options{})
	transcript := filepath.Join(dir, "t.jsonl")
	out := agentCmd{Config: cfg, Provider: prov, Server: srv, ClientTools: ct, Transcript: transcript}.run(t)
	out.mustSucceed(t)
	d.done(t)
	if strings.TrimSpace(out.Stdout) != "read it" {
		t.Fatalf("stdout %q", out.Stdout)
	}
	if !strings.Contains(out.Stderr, "model sees read, ls, greet") {
		t.Errorf("stderr does not say what the model sees:\n%s", out.Stderr)
	}
	direct := events(readTranscript(t, transcript), func(ev api.TrajectoryEvent) bool { return ev.Kind == api.EventDirect })
	if len(direct) != 2 || direct[0].Tool != "read" || direct[1].Tool != "greet" || direct[0].Status != "ok" {
		t.Fatalf("direct calls in the transcript: %+v", direct)
	}
}

// planEnabled is steps 4–14, 15 (timeout) and 16, plus the §19 transcript items.
func planEnabled(t *testing.T, prov string) {
	mcp := everything(t)
	dir := t.TempDir()
	cfg := config(t, dir, gitRepo(t), func(c obj) {
		tools(c)["deny"] = []string{"native:core:web_fetch"}
		tools(c)["directOnly"] = []string{"mcp:everything:get-tiny-image"}
		c["plugins"] = obj{"git": obj{"enabled": true}}
		c["mcp"] = obj{"servers": obj{"everything": obj{"command": mcp[0], "args": mcp[1:], "timeoutMs": 20000}}}
	})
	ct := planClientTools(t, dir)
	var (
		afterRestore string // output produced after the restore, for the final answer
		callCounts   []int  // telemetry callCount of each exec's final result
	)
	// Y1: every result reports the model-visible tools; the run's counters only grow.
	telemetry := func(t testing.TB, r *execResult) {
		callCounts = append(callCounts, r.Telemetry.CallCount)
		if got := r.Telemetry.VisibleTools; !slices.Equal(got, []string{"exec", "wait", "get-tiny-image"}) {
			t.Errorf("telemetry visibleTools %v", got)
		}
		if r.Telemetry.Sources.MCP == 0 || r.Telemetry.Sources.Client != 3 || r.Telemetry.CatalogSize == 0 {
			t.Errorf("telemetry catalog: %+v", r.Telemetry)
		}
	}
	d := newDriver(t, []string{"exec", "wait", "get-tiny-image"},
		// 7: ALL_TOOLS has the eligible tools, not the direct-only, MCP or denied ones.
		execStep("ALL_TOOLS", `return ALL_TOOLS.map(t => t.id)`, false, func(t testing.TB, turns [][]result) {
			r := only(t, turns)
			telemetry(t, r)
			var ids []string
			r.value(t, &ids)
			for _, want := range []string{"native:core:read", "native:core:write", "native:git:git_log", "native:git:git_status",
				"client:cli:greet", "client:cli:slow", "client:cli:progress"} {
				if !slices.Contains(ids, want) {
					t.Errorf("ALL_TOOLS lacks %s: %v", want, ids)
				}
			}
			for _, id := range ids {
				if strings.HasPrefix(id, "mcp:") || id == "native:core:web_fetch" {
					t.Errorf("ALL_TOOLS has %s: %v", id, ids)
				}
			}
			if i, j := slices.Index(ids, "native:core:read"), slices.Index(ids, "client:cli:greet"); i > j {
				t.Errorf("core tools do not come before client tools (K1): %v", ids)
			}
		}),
		// 8: core, plugin and client tools through search, describe, callValue and call.
		execStep("search describe call", `
const hits = await tools.search("git commit history log", {limit: 5});
const desc = await tools.describe("native:git:git_log");
const log = await tools.callValue("native:git:git_log", {limit: 5});
const readme = await tools.callValue("native:core:read", {path: "README.md"});
const raw = await tools.call("client:cli:greet", {who: "e2e"});
const short = await tools.greet({who: "short"});
return {hit: hits.some(h => h.id === "native:git:git_log"), params: Object.keys(desc.parameters.properties),
  subjects: log.commits.map(c => c.subject), readme: readme.content.split("\n")[0], raw, short};`, false,
			func(t testing.TB, turns [][]result) {
				r := only(t, turns)
				telemetry(t, r)
				var v struct {
					Hit      bool
					Params   []string
					Subjects []string
					Readme   string
					Raw      json.RawMessage
					Short    struct{ Greeting string }
				}
				r.value(t, &v)
				if !v.Hit || !slices.Contains(v.Params, "limit") || !slices.Equal(v.Subjects, []string{"Add notes", "Add the README"}) ||
					v.Readme != "# e2e" || v.Short.Greeting != "hello" || !strings.Contains(string(v.Raw), `"who":"e2e"`) {
					t.Errorf("value %s", r.Value)
				}
			}),
		// 9–10: the MCP declarations and an MCP namespace call; MCP entries are not in tools.*.
		execStep("MCP", `
const files = await API.list("mcp");
const dts = await API.read("mcp/everything.d.ts");
const echo = await MCP.everything.echo({message: "through MCP"});
let direct; try { await tools.callValue("mcp:everything:echo", {message: "x"}); direct = "called" } catch (e) { direct = e.code || String(e) }
return {files: files.map(f => f.path), declaresEcho: dts.includes("function echo("), echo: echo.content[0].text, direct,
  inAll: ALL_TOOLS.some(t => t.id.startsWith("mcp:")), toolsEcho: ("echo" in tools ? typeof tools.echo : "undefined"),
  found: (await tools.search("echo message")).some(h => h.id.startsWith("mcp:"))};`, false,
			func(t testing.TB, turns [][]result) {
				r := only(t, turns)
				telemetry(t, r)
				var v struct {
					Files        []string
					DeclaresEcho bool
					Echo, Direct string
					InAll, Found bool
					ToolsEcho    string
				}
				r.value(t, &v)
				if !slices.Equal(v.Files, []string{"mcp/index.d.ts", "mcp/everything.d.ts"}) || !v.DeclaresEcho ||
					v.Echo != "Echo: through MCP" || v.Direct != "unknown_tool" || v.InAll || v.Found || v.ToolsEcho != "undefined" {
					t.Errorf("value %s", r.Value)
				}
			}),
		// 11: a denied tool is absent and cannot be called by a guessed id.
		execStep("denied", `
let called; try { await tools.callValue("native:core:web_fetch", {url: "http://127.0.0.1:1/"}); called = "called" } catch (e) { called = e.code + ": " + e.message }
return {called, inAll: ALL_TOOLS.some(t => t.id === "native:core:web_fetch"),
  inSearch: (await tools.search("fetch a web page url http")).some(h => h.id === "native:core:web_fetch"),
  short: ("web_fetch" in tools ? typeof tools.web_fetch : "undefined")};`, false,
			func(t testing.TB, turns [][]result) {
				r := only(t, turns)
				telemetry(t, r)
				var v struct {
					Called          string
					InAll, InSearch bool
					Short           string
				}
				r.value(t, &v)
				if !strings.HasPrefix(v.Called, `unknown_tool: unknown tool id "native:core:web_fetch"`) || v.InAll || v.InSearch || v.Short != "undefined" {
					t.Errorf("value %s", r.Value)
				}
			}),
		// 12–14: a slow nested call makes exec return waiting; wait delivers its result into the
		// restored VM, and the output produced after the restore reaches the final answer. A
		// call that streams progress shows on stderr and in the transcript (E1).
		execStep("slow call", `
text("before the slow call");
const p = await tools.progress({});
const [slow, op] = await Promise.all([tools.callValue("client:cli:slow", {}),
  MCP.everything.triggerLongRunningOperation({duration: 1, steps: 2})]);
text("after the restore: " + slow.slow + ", progress " + p.progress);
text("operation: " + op.content[0].text);
return slow;`, true,
			func(t testing.TB, turns [][]result) {
				first := turns[0][0].Exec
				if first == nil || first.Status != api.StatusWaiting || first.Reason != api.ReasonPendingTools || first.RunID == "" {
					t.Fatalf("exec did not return waiting for the slow call: %+v", turns[0][0])
				}
				if !strings.Contains(turns[0][0].Content, `call the wait tool with {"runId":"`+first.RunID+`"}`) {
					t.Errorf("the waiting result does not say how to continue: %s", turns[0][0].Content)
				}
				last := final(t, turns)
				telemetry(t, last)
				if last.Status != api.StatusCompleted || string(last.Value) != `{"slow":"done"}` {
					t.Fatalf("after wait: %+v", last)
				}
				afterRestore = last.outputText()
				if !strings.Contains(afterRestore, "after the restore: done, progress finished") ||
					!strings.Contains(afterRestore, "operation: Long running operation completed. Duration: 1 seconds, Steps: 2.") {
					t.Errorf("output after the restore: %+v", last.Output)
				}
			}),
		// The direct-only tool is called directly by the model.
		step{name: "direct-only", reply: func(*scripted.Request) scripted.Reply { return callTool("get-tiny-image", obj{}) },
			check: func(t testing.TB, turns [][]result) {
				if r := turns[0][0]; r.IsError || !strings.Contains(r.Content, "[image content]") {
					t.Errorf("direct-only call: %+v", r)
				}
			}},
		// 15: an endless cell ends near timeoutMs.
		execStep("timeout", `while (true) {}`, false, func(t testing.TB, turns [][]result) {
			r := only(t, turns)
			if r.Status != api.StatusFailed || r.Code != string(api.CodeTimeout) {
				t.Fatalf("%+v", r)
			}
			if ms := r.Telemetry.DurationMs; ms < 900 || ms > 15000 {
				t.Errorf("a 1000 ms timeout took %d ms", ms)
			}
		}),
		// …and the runtime is none the worse for it: the next cell runs.
		execStep("after the timeout", `return "alive"`, false, func(t testing.TB, turns [][]result) {
			if r := only(t, turns); r.Status != api.StatusCompleted || string(r.Value) != `"alive"` {
				t.Errorf("%+v", r)
			}
		}),
		answer(func() string { return "Done. " + afterRestore }),
	)
	srv := d.server(t, scripted.Options{})
	transcript := filepath.Join(dir, "t.jsonl")
	out := agentCmd{Config: cfg, Provider: prov, Server: srv, ClientTools: ct, Transcript: transcript}.run(t)
	out.mustSucceed(t)
	d.done(t)
	if t.Failed() {
		t.FailNow()
	}
	// 14: output produced after the restore is in the final answer.
	if !strings.Contains(out.Stdout, "after the restore: done, progress finished") {
		t.Fatalf("final answer %q", out.Stdout)
	}
	// Y1/§19: the run's counters are cumulative across its execs.
	if !slices.IsSorted(callCounts) || callCounts[len(callCounts)-1] <= callCounts[0] {
		t.Errorf("callCount across execs: %v", callCounts)
	}
	// E1 on the progress display.
	for _, want := range []string{"… client:cli:progress: step 1 of 3", "… client:cli:progress: step 3 of 3",
		"✓ client:cli:slow (", "✓ native:git:git_log (", "exec call_", "→ waiting (pending_tools, ", "wait "} {
		if prov == scripted.Anthropic {
			want = strings.Replace(want, "exec call_", "exec toolu_", 1)
		}
		if !strings.Contains(out.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out.Stderr)
		}
	}
	checkPlanTranscript(t, transcript, d)
}

// checkPlanTranscript is step 16 and the §19 transcript items.
func checkPlanTranscript(t *testing.T, path string, d *driver) {
	evs := readTranscript(t, path)
	t.Logf("transcript: %d events", len(evs))
	// Every exec and wait the model made is a control event with its input and result.
	var modelCalls []result
	for _, r := range d.results {
		if r.Name == "exec" || r.Name == "wait" {
			modelCalls = append(modelCalls, r)
		}
	}
	control := events(evs, func(ev api.TrajectoryEvent) bool { return ev.Kind == api.EventControl })
	if len(control) != len(modelCalls) {
		t.Fatalf("%d control events for %d exec/wait calls", len(control), len(modelCalls))
	}
	byID := map[string]api.TrajectoryEvent{}
	for _, ev := range control {
		byID[ev.CallID] = ev
		if len(ev.Input) == 0 || len(ev.Result) == 0 || ev.Status == "" {
			t.Errorf("control event without input, result or status: %+v", ev)
		}
	}
	for _, r := range modelCalls {
		ev, ok := byID[r.CallID]
		if !ok || ev.Tool != r.Name || ev.Status != r.Exec.Status {
			t.Errorf("call %s (%s %s) is not in the transcript as such: %+v", r.CallID, r.Name, r.Exec.Status, ev)
		}
	}
	// Nested calls: parent exec, catalog id, status, duration.
	nested := events(evs, func(ev api.TrajectoryEvent) bool { return ev.Kind == api.EventNested })
	var slow api.TrajectoryEvent
	for _, ev := range nested {
		parent, ok := byID[ev.ParentCallID]
		if !ok || parent.Tool != "exec" || !strings.HasPrefix(ev.CallID, ev.ParentCallID+"/") {
			t.Errorf("nested call %s has no exec parent in the transcript (%q)", ev.CallID, ev.ParentCallID)
		}
		if ev.Status != "ok" && ev.Tool != "native:core:web_fetch" && ev.Tool != "mcp:everything:echo" {
			t.Errorf("nested call %s %s: %s %s", ev.CallID, ev.Tool, ev.Status, ev.Error)
		}
		if ev.Tool == "client:cli:slow" {
			slow = ev
		}
	}
	for _, want := range []string{"native:git:git_log", "native:core:read", "client:cli:greet", "mcp:everything:echo", "client:cli:progress", "client:cli:slow",
		"mcp:everything:trigger-long-running-operation"} {
		if len(events(nested, func(ev api.TrajectoryEvent) bool { return ev.Tool == want })) == 0 {
			t.Errorf("no nested call of %s in the transcript", want)
		}
	}
	if slow.DurationMs < 1900 {
		t.Errorf("the slow call's duration: %+v", slow)
	}
	// The wait lists the slow call among the calls it delivered.
	var delivered bool
	for _, ev := range control {
		if ev.Tool == "wait" && slices.Contains(ev.Delivered, slow.CallID) {
			delivered = true
		}
	}
	if !delivered {
		t.Errorf("no wait delivered %s", slow.CallID)
	}
	// E1: the progress updates, under the call that streamed them.
	updates := events(evs, func(ev api.TrajectoryEvent) bool { return ev.Kind == api.EventUpdate })
	updates = events(updates, func(ev api.TrajectoryEvent) bool { return ev.Tool == "client:cli:progress" })
	if len(updates) != 3 || updates[0].Update.Text != "step 1 of 3" || updates[0].ParentCallID != slow.ParentCallID {
		t.Errorf("update events: %+v", updates)
	}
	// E1 for MCP: server-everything's long-running operation sends progress notifications.
	t.Run("MCP progress", func(t *testing.T) {
		op := events(evs, func(ev api.TrajectoryEvent) bool {
			return ev.Tool == "mcp:everything:trigger-long-running-operation"
		})
		if len(events(op, func(ev api.TrajectoryEvent) bool { return ev.Kind == api.EventNested && ev.Status == "ok" })) != 1 {
			t.Fatalf("the long-running operation in the transcript: %+v", op)
		}
		if len(events(op, func(ev api.TrajectoryEvent) bool { return ev.Kind == api.EventUpdate })) == 0 {
			t.Errorf("the long-running operation's MCP progress notifications are not in the transcript: %+v", op)
		}
	})
	// `codemode trace` prints the tree: exec → nested calls, wait → what it delivered.
	tree := trace(t, path)
	t.Logf("trace:\n%s", tree)
	lines := strings.Split(tree, "\n")
	execLine := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "exec "+slow.ParentCallID) })
	slowLine := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "─ client:cli:slow "+slow.CallID) })
	waitLine := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "wait ") })
	delivLine := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "─ delivered client:cli:slow "+slow.CallID) })
	if execLine < 0 || slowLine <= execLine || waitLine <= slowLine || delivLine <= waitLine {
		t.Errorf("trace tree shape: exec %d, slow %d, wait %d, delivered %d", execLine, slowLine, waitLine, delivLine)
	}
	if !strings.Contains(tree, "update: step 2 of 3") {
		t.Errorf("trace lacks the progress updates")
	}
}

// planCancel is step 15's cancellation: SIGINT while a run is suspended with a nested call in
// flight ends the agent with 130, drops the suspended run and kills the call's program.
func planCancel(t *testing.T, prov string) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "slow.pid")
	marker := filepath.Join(dir, "slow.done")
	cfg := config(t, dir, workspace(t), func(c obj) { codeMode(c)["timeoutMs"] = 300 })
	ct := writeJSON(t, dir, "client-tools.json5", []obj{
		clientTool("slow", "Slow.", fmt.Sprintf(`echo $$ > %s; sleep 5; touch %s; echo '{}'`, pidFile, marker)),
	})
	asked := make(chan struct{})
	d := newDriver(t, []string{"exec", "wait"},
		execStep("suspend", `return await tools.callValue("client:cli:slow", {})`, false, func(t testing.TB, turns [][]result) {
			if r := only(t, turns); r.Status != api.StatusWaiting {
				t.Errorf("%+v", r)
			}
		}),
		step{name: "thinking", reply: func(*scripted.Request) scripted.Reply {
			close(asked)
			return scripted.Reply{Text: "never sent", Delay: 30 * time.Second} // the agent is interrupted first
		}},
	)
	srv := d.server(t, scripted.Options{})
	transcript := filepath.Join(dir, "t.jsonl")
	c := agentCmd{Config: cfg, Provider: prov, Server: srv, ClientTools: ct, Transcript: transcript}
	cmd := c.command(t.Context())
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the agent never got to its second model turn\nstderr:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if code != 130 {
		t.Fatalf("exit %d (%v), want 130\nstderr:\n%s", code, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted; the run was cancelled with its suspended work (1 suspended code-mode run dropped)") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	// The nested call's program was killed with the run: its pid is gone and it never finished.
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the slow tool never started: %v", err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Errorf("the slow tool's program (pid %d) is still there: %v", pid, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the slow tool ran to its end")
	}
	evs := readTranscript(t, transcript)
	slow := events(evs, func(ev api.TrajectoryEvent) bool { return ev.Tool == "client:cli:slow" })
	if len(slow) != 1 || slow[0].Status != "error" {
		t.Errorf("the cancelled call in the transcript: %+v", slow)
	}
}

// planExpiry is step 15's snapshot expiry: the model waits after snapshotTtlSeconds and the run
// is gone.
func planExpiry(t *testing.T, prov string) {
	dir := t.TempDir()
	cfg := config(t, dir, workspace(t), func(c obj) { codeMode(c)["snapshotTtlSeconds"] = 1 })
	var runID string
	d := newDriver(t, []string{"exec", "wait"},
		execStep("suspend", `await yield_control("later"); return 1`, false, func(t testing.TB, turns [][]result) {
			r := only(t, turns)
			if r.Status != api.StatusWaiting || r.Reason != "yield" {
				t.Fatalf("%+v", r)
			}
			runID = r.RunID
		}),
		step{name: "late wait", reply: func(*scripted.Request) scripted.Reply {
			r := callTool("wait", obj{"runId": runID})
			r.Delay = 2500 * time.Millisecond // past the 1 s TTL
			return r
		}, check: func(t testing.TB, turns [][]result) {
			r := only(t, turns)
			if r.Status != api.StatusFailed || r.Code != string(api.CodeInvalidInput) || !strings.Contains(r.Error, "unavailable or expired") {
				t.Errorf("late wait: %+v", r)
			}
		}},
		answer(func() string { return "expired" }),
	)
	srv := d.server(t, scripted.Options{})
	out := agentCmd{Config: cfg, Provider: prov, Server: srv}.run(t)
	out.mustSucceed(t)
	d.done(t)
}
