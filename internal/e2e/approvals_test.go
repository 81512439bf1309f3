package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// threeWrites writes a.txt, b.txt and c.txt one after the other with the write built-in, then
// reads the README (a read-only tool); it reports what happened to each call. A rejected call is
// a catchable error in the guest (G5).
const threeWrites = `
const out = [];
for (const path of ["a.txt", "b.txt", "c.txt"]) {
  try { await tools.write({path, content: "content of " + path}); out.push(path + ": written") }
  catch (e) { out.push(path + ": " + e.code) }
}
try { out.push("README: " + (await tools.read({path: "README.md"})).content.trim()) }
catch (e) { out.push("README: " + e.code) }
text("the cell went on after the decisions");
return out;`

// TestApprovalsThroughAgent is issue 11 through `codemode agent`: tools.approvals in the config,
// decisions from the terminal (scripted stdin: y, n, a) or from --approve. Approved calls run
// exactly once, rejected ones are catchable errors and write nothing, the cell completes in one
// model-visible exec, and the transcript has each request and decision (who, reason).
func TestApprovalsThroughAgent(t *testing.T) {
	needBinary(t)
	const (
		written  = "written"
		rejected = "not_approved"
	)
	cases := []struct {
		name, approve, stdin string
		a, b, c, readme      string // what happens to each call
		questions            int    // prompts shown on the terminal
		by                   string // who decided b.txt
	}{
		{"ask: yes to all", "ask", "y\ny\ny\ny\n", written, written, written, written, 4, "terminal"},
		{"ask: no to the second", "ask", "y\nn\ny\ny\n", written, rejected, written, written, 4, "terminal"},
		{"ask: always", "ask", "a\ny\n", written, written, written, written, 2, "terminal (always for this run)"},
		{"ask: input closed", "ask", "y\n", written, rejected, rejected, rejected, 4, "terminal"},
		{"none", "none", "", rejected, rejected, rejected, rejected, 0, "--approve none"},
		{"all", "all", "", written, written, written, written, 0, "--approve all"},
		{"readonly", "readonly", "", rejected, rejected, rejected, written, 0, "--approve readonly"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ws := workspace(t)
			cfg := config(t, dir, ws, func(cf obj) {
				tools(cf)["approvals"] = []any{
					obj{"match": "native:core:write", "prompt": "Write this file?"},
					"native:core:read",
				}
			})
			var value []string
			var outText string
			d := newDriver(t, []string{"exec", "wait"},
				execStep("three writes", threeWrites, false, func(t testing.TB, turns [][]result) {
					// The runtime continues approval waits itself: the model sees one final result.
					r := only(t, turns)
					r.value(t, &value)
					outText = r.outputText()
				}),
				answer(func() string { return strings.Join(value, "; ") }),
			)
			srv := d.server(t, scripted.Options{})
			transcript := filepath.Join(dir, "t.jsonl")
			out := agentCmd{Config: cfg, Provider: scripted.OpenAI, Server: srv, Transcript: transcript,
				Stdin: c.stdin, Args: []string{"--approve", c.approve}}.run(t)
			out.mustSucceed(t)
			d.done(t)
			want := []string{"a.txt: " + c.a, "b.txt: " + c.b, "c.txt: " + c.c}
			wantReadme := "README: # plain workspace"
			if c.readme == rejected {
				wantReadme = "README: not_approved"
			}
			want = append(want, wantReadme)
			if strings.Join(value, "; ") != strings.Join(want, "; ") {
				t.Fatalf("cell value %q, want %q\nstderr:\n%s", value, want, out.Stderr)
			}
			if outText != "the cell went on after the decisions" {
				t.Errorf("output %q", outText)
			}
			if got := strings.Count(out.Stderr, "? approval needed: "); got != c.questions {
				t.Errorf("%d questions on the terminal, want %d:\n%s", got, c.questions, out.Stderr)
			}
			if c.questions > 0 && !strings.Contains(out.Stderr, `? approval needed: native:core:write {"path":"a.txt","content":"content of a.txt"}`+"\n  Write this file?") {
				t.Errorf("the question does not show the tool, its input and the prompt:\n%s", out.Stderr)
			}
			// Files: written once with their content, or absent.
			for _, f := range []struct{ path, status string }{{"a.txt", c.a}, {"b.txt", c.b}, {"c.txt", c.c}} {
				b, err := os.ReadFile(filepath.Join(ws, f.path))
				switch {
				case f.status == written && string(b) != "content of "+f.path:
					t.Errorf("%s: %q, %v", f.path, b, err)
				case f.status == rejected && err == nil:
					t.Errorf("%s was written although it was rejected", f.path)
				}
			}
			checkApprovalTranscript(t, transcript, c.b, c.by)
		})
	}
}

// checkApprovalTranscript: every write ran at most once, and b.txt's request and decision are
// recorded with who decided.
func checkApprovalTranscript(t *testing.T, path, bStatus, by string) {
	t.Helper()
	evs := readTranscript(t, path)
	runs := map[string]int{}
	for _, ev := range events(evs, func(ev api.TrajectoryEvent) bool {
		return ev.Kind == api.EventNested && ev.Tool == "native:core:write" && ev.Status == "ok"
	}) {
		for _, p := range []string{"a.txt", "b.txt", "c.txt"} {
			if strings.Contains(string(ev.Input), `"`+p+`"`) {
				runs[p]++
			}
		}
	}
	for p, n := range runs {
		if n != 1 {
			t.Errorf("%s was written %d times", p, n)
		}
	}
	var reqID string
	for _, ev := range events(evs, func(ev api.TrajectoryEvent) bool { return ev.Kind == api.EventApprovalRequest }) {
		if strings.Contains(string(ev.Input), "b.txt") || ev.Approval != nil && strings.Contains(ev.Approval.Prompt, "b.txt") {
			reqID = ev.CallID
		}
	}
	decisions := events(evs, func(ev api.TrajectoryEvent) bool { return ev.Kind == api.EventApprovalDecision })
	var dec *api.TrajectoryEvent
	for i := range decisions {
		if decisions[i].CallID == reqID {
			dec = &decisions[i]
		}
	}
	if reqID == "" || dec == nil {
		t.Fatalf("no approval request and decision for b.txt in the transcript (request %q): %+v", reqID, decisions)
	}
	wantStatus := map[string]string{"written": "approved", "not_approved": "rejected"}[bStatus]
	if dec.Status != wantStatus || dec.Approval == nil || dec.Approval.By != by {
		t.Errorf("decision for b.txt: %s by %+v, want %s by %s", dec.Status, dec.Approval, wantStatus, by)
	}
	if wantStatus == "rejected" && dec.Approval.Reason == "" {
		t.Errorf("a rejection without a reason: %+v", dec.Approval)
	}
}
