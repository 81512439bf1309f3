package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// TestSwarmThroughAgent is issue 25 through `codemode agent` (items 1, 3, 5): with tools.swarm
// on, a cell fans out two children that talk to the same provider as the run (from the agent's
// flags), one with a structured result; the answer reaches the model, stderr shows the
// children, and `codemode trace` draws them under their agents.run calls. Both wire formats
// (Anthropic streamed).
func TestSwarmThroughAgent(t *testing.T) {
	needBinary(t)
	for _, prov := range []string{scripted.OpenAI, scripted.Anthropic} {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := config(t, dir, workspace(t), func(c obj) { tools(c)["swarm"] = obj{"enabled": true, "maxConcurrent": 2} })
			var mu sync.Mutex
			var parentValue string
			var childTools []string
			srv := scripted.Start(t, scripted.Options{Repeat: func(r *scripted.Request) scripted.Reply {
				turn := 0
				for _, m := range r.Messages {
					if m.Role == "assistant" {
						turn++
					}
				}
				if strings.HasPrefix(r.System, "You are a sub-agent") {
					mu.Lock()
					childTools = r.ToolNames()
					mu.Unlock()
					switch prompt := r.Messages[0].Text; {
					case prompt == "review a" && turn == 0:
						return callTool("exec", obj{"code": `return (await tools.read({path: "README.md"})).content`})
					case prompt == "review a":
						return scripted.Reply{Text: "a is fine"}
					case prompt == "review b" && turn == 0:
						return callTool("structured_output", obj{"ok": true})
					default:
						return scripted.Reply{Text: "submitted"}
					}
				}
				if turn == 0 {
					if !strings.Contains(r.Tools[0].Description, "agents.run(prompt") {
						t.Errorf("the exec description does not teach agents.run")
					}
					return callTool("exec", obj{"code": `
						phase("two reviews");
						const [a, b] = await Promise.all([agents.run("review a", {label: "a"}),
							agents.run("review b", {label: "b", schema: {type: "object", properties: {ok: {type: "boolean"}}, required: ["ok"]}})]);
						return {a, b};`})
				}
				res := parseResults(r)
				if len(res) != 1 || res[0].Exec == nil {
					t.Errorf("results %+v", res)
					return scripted.Reply{Text: "?"}
				}
				mu.Lock()
				parentValue = string(res[0].Exec.Value)
				mu.Unlock()
				return scripted.Reply{Text: "reviews: " + string(res[0].Exec.Value)}
			}})
			transcript := filepath.Join(dir, "t.jsonl")
			out := agentCmd{Config: cfg, Provider: prov, Server: srv, Transcript: transcript}.run(t)
			out.mustSucceed(t)
			if parentValue != `{"a":"a is fine","b":{"ok":true}}` || !strings.Contains(out.Stdout, `reviews: {"a":"a is fine","b":{"ok":true}}`) {
				t.Fatalf("value %s\nstdout %s\nstderr %s", parentValue, out.Stdout, out.Stderr)
			}
			if strings.Join(childTools, ",") != "exec,wait" && strings.Join(childTools, ",") != "exec,wait,structured_output" {
				t.Fatalf("child tools %v", childTools)
			}
			for _, want := range []string{"phase: two reviews", "agent a: started", "✓ agents.run a completed", "✓ agents.run b completed"} {
				if !strings.Contains(out.Stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, out.Stderr)
				}
			}
			evs := readTranscript(t, transcript)
			agents := 0
			for _, ev := range evs {
				if ev.Kind == api.EventAgent {
					agents++
					var res struct{ RunID string }
					_ = json.Unmarshal(ev.Result, &res)
					if ev.Status != "completed" || !strings.HasSuffix(res.RunID, "/"+ev.CallID) {
						t.Errorf("agent event %+v", ev)
					}
				}
			}
			if agents != 2 {
				t.Fatalf("%d agent events", agents)
			}
			tr := trace(t, transcript)
			if strings.Count(tr, "child run ") != 2 || !strings.Contains(tr, "agents.run a ") || !strings.Contains(tr, "structured_output toolu_") && !strings.Contains(tr, "structured_output call_") ||
				!strings.Contains(tr, "native:core:read") {
				t.Fatalf("trace:\n%s", tr)
			}
		})
	}
}

// TestSwarmCtrlC: Ctrl-C while a suspended cell's children are talking to the model ends the
// agent with 130 and cancels every child: each ends "cancelled" in the transcript (issue 25
// item 4).
func TestSwarmCtrlC(t *testing.T) {
	needBinary(t)
	dir := t.TempDir()
	cfg := config(t, dir, workspace(t), func(c obj) {
		codeMode(c)["timeoutMs"] = 300
		tools(c)["swarm"] = true
	})
	var mu sync.Mutex
	children := 0
	asked := make(chan struct{})
	srv := scripted.Start(t, scripted.Options{Repeat: func(r *scripted.Request) scripted.Reply {
		if strings.HasPrefix(r.System, "You are a sub-agent") {
			mu.Lock()
			children++
			mu.Unlock()
			return scripted.Reply{Text: "never sent", Delay: 30 * time.Second} // cancelled with the agent
		}
		if len(r.Messages) == 1 {
			return callTool("exec", obj{"code": `return await Promise.all([1, 2, 3].map((i) => agents.run("child " + i)))`})
		}
		close(asked)
		return scripted.Reply{Text: "never sent", Delay: 30 * time.Second}
	}})
	transcript := filepath.Join(dir, "t.jsonl")
	cmd := agentCmd{Config: cfg, Provider: scripted.OpenAI, Server: srv, Transcript: transcript}.command(t.Context())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked: // the exec returned waiting on its children; the model thinks
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the agent never got to its second turn\nstderr:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr.String())
	}
	mu.Lock()
	n := children
	mu.Unlock()
	if n != 3 {
		t.Fatalf("%d children asked the model", n)
	}
	cancelled := 0
	for _, ev := range readTranscript(t, transcript) {
		if ev.Kind == api.EventAgent && ev.Status == "cancelled" {
			cancelled++
		}
	}
	if cancelled != 3 || !strings.Contains(stderr.String(), "1 suspended code-mode run dropped") {
		t.Fatalf("%d children recorded cancelled\nstderr:\n%s", cancelled, stderr.String())
	}
}
