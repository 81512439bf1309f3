package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// TestProviderErrorsThroughAgent: what the provider layer does with HTTP errors, timeouts and
// malformed tool calls, seen from the outside of `codemode agent`: clear messages, bounded
// retries, exit status 1 when the run cannot go on, and a model that recovers from its own
// malformed call.
func TestProviderErrorsThroughAgent(t *testing.T) {
	needBinary(t)
	ok := func() []step { // a short successful run after the errors
		return []step{
			execStep("exec", `return 6 * 7`, false, func(t testing.TB, turns [][]result) {
				if r := only(t, turns); string(r.Value) != "42" {
					t.Errorf("%+v", r)
				}
			}),
			answer(func() string { return "42" }),
		}
	}
	cases := []struct {
		name     string
		skip     map[string]string // provider → why this case is skipped for it
		opts     scripted.Options
		before   []scripted.Turn // turns before the driver's
		steps    []step          // the driver's (nil: no successful turn)
		env      []string
		args     []string
		exit     int
		requests int      // HTTP requests the server got
		stderr   []string // substrings of stderr
	}{
		{name: "401 names the key variable", opts: scripted.Options{APIKey: "the-right-key"},
			env: []string{"E2E_API_KEY=a-wrong-key"}, exit: 1, requests: 1,
			stderr: []string{"the API key was rejected (HTTP 401", "E2E_API_KEY"}},
		{name: "429 with retry-after, then success", before: []scripted.Turn{scripted.RateLimited("1")},
			steps: ok(), exit: 0, requests: 3},
		{name: "5xx retried, then success", before: []scripted.Turn{scripted.Fail(500, "boom"), scripted.Fail(502, "bad gateway")},
			steps: ok(), exit: 0, requests: 4},
		{name: "5xx forever", opts: scripted.Options{Lenient: true}, before: []scripted.Turn{
			scripted.Fail(503, "down"), scripted.Fail(503, "down"), scripted.Fail(503, "down")},
			exit: 1, requests: 3, stderr: []string{"the server failed (HTTP 503: down", "after 3 attempts"}},
		{name: "5xx forever, no retries", args: []string{"--max-retries", "0"}, before: []scripted.Turn{scripted.Fail(500, "down")},
			exit: 1, requests: 1, stderr: []string{"the server failed (HTTP 500"}},
		{name: "timeout, then success", args: []string{"--timeout", "700ms"},
			before: []scripted.Turn{scripted.Fixed(scripted.Reply{Text: "too late", Delay: 5 * time.Second})},
			steps:  ok(), exit: 0, requests: 3},
		{name: "timeout forever", args: []string{"--timeout", "500ms", "--max-retries", "1"},
			before: []scripted.Turn{scripted.Fixed(scripted.Reply{Text: "too late", Delay: 5 * time.Second}),
				scripted.Fixed(scripted.Reply{Text: "too late", Delay: 5 * time.Second})},
			exit: 1, requests: 2, stderr: []string{"timed out", "after 2 attempts"}},
		{name: "not the protocol", before: []scripted.Turn{scripted.Fixed(scripted.Reply{Body: "<html>proxy login</html>", ContentType: "text/html"})},
			exit: 1, requests: 1, stderr: []string{"not the provider's protocol"}},
		{name: "malformed tool call, the model recovers", steps: append([]step{{
			name: "malformed",
			reply: func(*scripted.Request) scripted.Reply {
				return scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "exec", Arguments: `{"code": "return 1`}}}
			},
			check: func(t testing.TB, turns [][]result) {
				// (OpenAI tool messages have no error flag; Anthropic's tool_result has is_error.)
				r := turns[0][0]
				if (r.IsError != (r.CallID[:5] == "toolu")) || !strings.Contains(r.Content, "not a JSON object") || !strings.Contains(r.Content, "nothing ran") {
					t.Errorf("the model was not told its call was malformed: %+v", r)
				}
			}}}, ok()...), exit: 0, requests: 3},
	}
	for _, prov := range []string{scripted.OpenAI, scripted.Anthropic} {
		for _, c := range cases {
			t.Run(prov+"/"+c.name, func(t *testing.T) {
				if why := c.skip[prov]; why != "" {
					t.Skip(why)
				}
				t.Parallel()
				var d *driver
				opts := c.opts
				if c.steps != nil {
					d = newDriver(t, []string{"exec", "wait"}, c.steps...)
					opts.Repeat = d.Turn()
				}
				srv := scripted.Start(t, opts, c.before...)
				out := agentCmd{Config: config(t, t.TempDir(), workspace(t), nil), Provider: prov, Server: srv,
					Env: c.env, Args: c.args}.run(t)
				if out.Code != c.exit {
					t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", out.Code, c.exit, out.Stdout, out.Stderr)
				}
				if d != nil {
					d.done(t)
				}
				if got := srv.Count(); got != c.requests {
					t.Errorf("%d HTTP requests, want %d", got, c.requests)
				}
				for _, s := range c.stderr {
					if !strings.Contains(out.Stderr, s) {
						t.Errorf("stderr lacks %q:\n%s", s, out.Stderr)
					}
				}
				if c.exit == 0 && strings.TrimSpace(out.Stdout) != "42" {
					t.Errorf("stdout %q", out.Stdout)
				}
				if c.exit != 0 && out.Stdout != "" {
					t.Errorf("a failed run printed an answer: %q", out.Stdout)
				}
			})
		}
	}
}
