package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// TestAgentSmoke runs the agent loop in process against a scripted model: the model sees exec and
// wait, runs a cell, and answers with what the cell returned.
func TestAgentSmoke(t *testing.T) {
	for _, prov := range []string{scripted.OpenAI, scripted.Anthropic} {
		t.Run(prov, func(t *testing.T) {
			srv := scripted.New(t,
				func(r *scripted.Request) scripted.Reply {
					if got := strings.Join(r.ToolNames(), ","); got != "exec,wait" {
						t.Errorf("tools sent to the model: %s", got)
					}
					return scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "exec", Arguments: `{"code":"return 6*7"}`}}}
				},
				func(r *scripted.Request) scripted.Reply {
					last := r.Messages[len(r.Messages)-1]
					if len(last.Results) != 1 || !strings.Contains(last.Results[0].Content, `"value":42`) {
						t.Errorf("tool result: %+v", last)
					}
					return scripted.Reply{Text: "The answer is 42."}
				})
			transcript := filepath.Join(t.TempDir(), "t.jsonl")
			code, out, errs := run(t, "", "agent", "--base-url", srv.BaseURL(prov), "--provider", prov, "--model", "m",
				"--api-key-env", "NO_SUCH_KEY_VAR", "--transcript", transcript, "what is six times seven?")
			if code != 0 || strings.TrimSpace(out) != "The answer is 42." {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			if !strings.Contains(errs, "[turn 1] model → 1 tool call") || !strings.Contains(errs, "exec") {
				t.Fatalf("progress: %s", errs)
			}
			b, _ := os.ReadFile(transcript)
			if !strings.Contains(string(b), `"kind":"control"`) || !strings.Contains(string(b), `"tool":"exec"`) {
				t.Fatalf("transcript: %s", b)
			}
			code, out, _ = run(t, "", "trace", transcript)
			if code != 0 || !strings.Contains(out, "exec ") || !strings.Contains(out, "completed") {
				t.Fatalf("trace: %d %s", code, out)
			}
		})
	}
}
