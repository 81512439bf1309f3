package server

//lint:file-ignore SA1019 sampling is deprecated by SEP-2577 but still forwarded

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/relay"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// askTool stands in for an upstream MCP server that asks the client while it serves a call: it
// asks through the relay client of its call's context exactly as internal/upstream's handlers do
// (the real upstream path is TestAggregatorClientTraffic in internal/cli).
type askTool struct {
	mu      sync.Mutex
	started chan struct{} // when set, signalled when a call starts
	hold    chan struct{} // when set, each call waits for it before asking
	asking  chan struct{} // when set, signalled right before asking
	timeout time.Duration // when set, the question's lifetime (an upstream's call timeout)
	ended   []string      // each call's result
}

func (a *askTool) set(f func(a *askTool)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a)
}

func (a *askTool) calls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ended)
}

func (a *askTool) tool() *api.Tool {
	return &api.Tool{Name: "ask", Description: "Ask the client.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"kind":{"type":"string"},"q":{"type":"string"},"times":{"type":"integer"}}}`),
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			var in struct {
				Kind  string
				Q     string
				Times int
			}
			_ = json.Unmarshal(c.Input, &in)
			a.mu.Lock()
			started, hold, asking, timeout := a.started, a.hold, a.asking, a.timeout
			a.mu.Unlock()
			if started != nil {
				started <- struct{}{}
			}
			if hold != nil {
				<-hold
			}
			cl, _ := relay.From(ctx).(interface {
				Elicit(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)
				CreateMessage(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
			})
			if cl == nil {
				return nil, fmt.Errorf("no client")
			}
			if asking != nil {
				asking <- struct{}{}
			}
			var out []string
			for i := 0; i < max(in.Times, 1); i++ {
				actx, cancel := ctx, context.CancelFunc(func() {})
				if timeout > 0 {
					actx, cancel = context.WithTimeout(ctx, timeout)
				}
				if in.Kind == "sample" {
					r, err := cl.CreateMessage(actx, &mcp.CreateMessageParams{MaxTokens: 10,
						Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Q}}}})
					if err != nil {
						out = append(out, "error: "+err.Error())
					} else {
						out = append(out, fmt.Sprintf("model=%s text=%s", r.Model, r.Content.(*mcp.TextContent).Text))
					}
				} else {
					if in.Kind == "unattributed" {
						actx = relay.Unattributed(actx) // as upstream marks a stdio server's question
					}
					r, err := cl.Elicit(actx, &mcp.ElicitParams{Message: in.Q,
						RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
					if err != nil {
						out = append(out, "error: "+err.Error())
					} else {
						b, _ := json.Marshal(r.Content)
						out = append(out, fmt.Sprintf("action=%s content=%s", r.Action, b))
					}
				}
				cancel()
			}
			a.mu.Lock()
			a.ended = append(a.ended, strings.Join(out, "; "))
			a.mu.Unlock()
			return api.TextResult(strings.Join(out, "; "), nil)
		}}
}

// askServer serves the ask tool over HTTP to two principals, code mode on or off.
func askServer(t *testing.T, a *askTool, codeMode bool, timeoutMs int) string {
	_, url := askServerOf(t, a, codeMode, timeoutMs)
	return url
}

func askServerOf(t *testing.T, a *askTool, codeMode bool, timeoutMs int) (*Server, string) {
	t.Helper()
	cfg := config.Default()
	cfg.Tools.CodeMode.Enabled = codeMode
	cfg.Tools.CodeMode.TimeoutMs = timeoutMs
	cfg.Serve.Principals = []config.Principal{{Name: "alice"}, {Name: "bob"}}
	srv, _, ctx := openServer(t, cfg, []*api.Tool{a.tool()})
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true, Principals: []PrincipalToken{
		{Name: "alice", Token: aliceToken}, {Name: "bob", Token: bobToken}}}))
	t.Cleanup(ts.Close)
	return srv, ts.URL + "/mcp"
}

func parked(srv *Server) int {
	srv.parks.mu.Lock()
	defer srv.parks.mu.Unlock()
	return len(srv.parks.byID)
}

// answering is a 2026-07-28 client whose MRTR middleware (go-sdk's default) answers every
// question: elicitations with the action the question's text names, sampling with a completion.
func answering(t *testing.T, url string) *mcp.ClientSession {
	return statelessClient(t, url, aliceToken, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			switch {
			case strings.Contains(r.Params.Message, "decline"):
				return &mcp.ElicitResult{Action: "decline"}, nil
			case strings.Contains(r.Params.Message, "cancel"):
				return &mcp.ElicitResult{Action: "cancel"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada:" + r.Params.Message}}, nil
		},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m1", Role: "assistant",
				Content: &mcp.TextContent{Text: "re:" + r.Params.Messages[0].Content.(*mcp.TextContent).Text}}, nil
		},
	})
}

// TestSessionlessQuestions: an upstream's elicitation and sampling during a sessionless
// (2026-07-28) client's call are multi round-trips: accept with content, decline, cancel,
// sampling, two questions in a row and two at once (a cell's parallel calls), with code mode on
// (nested calls) and off (a direct call) (issue 21 item 2).
func TestSessionlessQuestions(t *testing.T) {
	a := &askTool{}
	for _, codeMode := range []bool{true, false} {
		t.Run(fmt.Sprintf("codeMode=%v", codeMode), func(t *testing.T) {
			cs := answering(t, askServer(t, a, codeMode, 10000))
			if cs.ID() != "" {
				t.Fatal("not sessionless")
			}
			cases := []struct{ args, want string }{
				{`{"q":"who"}`, `action=accept content={"name":"ada:who"}`},
				{`{"q":"decline it"}`, `action=decline content=null`},
				{`{"q":"cancel it"}`, `action=cancel content=null`},
				{`{"kind":"sample","q":"hi"}`, `model=m1 text=re:hi`},
				{`{"q":"again","times":2}`, `action=accept content={"name":"ada:again"}; action=accept content={"name":"ada:again"}`},
			}
			for _, c := range cases {
				var got string
				if codeMode {
					r := callExec(t, cs, "exec", map[string]any{"code": `return (await tools.ask(` + c.args + `))`})
					if r.Status != api.StatusCompleted {
						t.Fatalf("%s: %+v", c.args, r)
					}
					_ = json.Unmarshal(r.Value, &got)
				} else {
					var args map[string]any
					_ = json.Unmarshal([]byte(c.args), &args)
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask", Arguments: args})
					if err != nil {
						t.Fatal(err)
					}
					got = res.Content[0].(*mcp.TextContent).Text
				}
				if got != c.want {
					t.Errorf("%s: got %q, want %q", c.args, got, c.want)
				}
			}
			if codeMode {
				// Two nested calls ask at once: one input-required result lists both.
				r := callExec(t, cs, "exec", map[string]any{"code": `const rs = await Promise.all([tools.ask({q: "x"}), tools.ask({q: "y"})]); return rs.join(" | ")`})
				if want := `"action=accept content={\"name\":\"ada:x\"} | action=accept content={\"name\":\"ada:y\"}"`; r.Status != api.StatusCompleted || string(r.Value) != want {
					t.Errorf("parallel: %+v", r)
				}
			}
		})
	}
}

// TestSessionlessQuestionAbuse: the requestState of an upstream's question is useless forged,
// to another principal and replayed; answers to other ids or of the wrong kind do not reach the
// question as answers; a question past its lifetime fails upstream and the call goes on; a client
// that drops its request cancels the parked call (issue 21 item 2).
func TestSessionlessQuestionAbuse(t *testing.T) {
	a := &askTool{}
	srv, url := askServerOf(t, a, true, 10000)
	manual := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, fmt.Errorf("unused") }}
	alice := statelessClient(t, url, aliceToken, manual)
	bob := statelessClient(t, url, bobToken, manual)
	code := map[string]any{"code": `return (await tools.ask({q: "name?"}))`}
	call := func(cs *mcp.ClientSession, state string, answers mcp.InputResponseMap) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: code, RequestState: state, InputResponses: answers})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	text := func(res *mcp.CallToolResult) string {
		if res.NeedsInput() {
			return "input-required"
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	asked := func(res *mcp.CallToolResult) (string, mcp.InputResponseMap) {
		t.Helper()
		if !res.NeedsInput() || len(res.InputRequests) != 1 || !strings.HasPrefix(res.RequestState, "v2.") {
			t.Fatalf("not one question: %+v", res)
		}
		for id, q := range res.InputRequests {
			if p, ok := q.(*mcp.ElicitParams); !ok || p.Message != "name?" || !strings.HasPrefix(id, "elicit-") {
				t.Fatalf("question %s: %#v", id, q)
			}
			return id, mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}}
		}
		return "", nil
	}

	first := call(alice, "", nil)
	id, accept := asked(first)
	forged := first.RequestState[:len(first.RequestState)-2] + "xx"
	if got := text(call(alice, forged, accept)); !strings.Contains(got, "not issued by this gateway") {
		t.Fatalf("forged: %s", got)
	}
	if got := text(call(bob, first.RequestState, accept)); !strings.Contains(got, "another principal") {
		t.Fatalf("another principal: %s", got)
	}
	// Answers to ids the state does not name are ignored: the question is asked again.
	again := call(alice, first.RequestState, mcp.InputResponseMap{"elicit-999": accept[id]})
	id2, accept2 := asked(again)
	if id2 != id {
		t.Fatalf("asked again as %s, was %s", id2, id)
	}
	if got := text(call(alice, first.RequestState, accept)); !strings.Contains(got, "already answered") {
		t.Fatalf("replay: %s", got)
	}
	if got := text(call(alice, again.RequestState, accept2)); !strings.Contains(got, `action=accept content={\"name\":\"ada\"}`) || !strings.Contains(got, `"status":"completed"`) {
		t.Fatalf("answered: %s", got)
	}
	if got := text(call(alice, again.RequestState, accept2)); !strings.Contains(got, "already answered") {
		t.Fatalf("replay after the answer: %s", got)
	}
	// An answer of the wrong kind reaches the upstream as an error, not as an answer.
	res := call(alice, "", nil)
	qid, _ := asked(res)
	wrong := mcp.InputResponseMap{qid: &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "x"}}}
	if got := text(call(alice, res.RequestState, wrong)); !strings.Contains(got, "answered an elicitation with a sampling result") {
		t.Fatalf("wrong kind: %s", got)
	}

	// A question whose lifetime passes (the upstream's call timeout) fails upstream; the call
	// goes on, and the late retry gets its result.
	a.set(func(a *askTool) { a.timeout = 300 * time.Millisecond })
	n := a.calls()
	late := call(alice, "", nil)
	lid, lacc := asked(late)
	eventually(t, "the question expired", func() bool { return a.calls() > n })
	if got := text(call(alice, late.RequestState, lacc)); !strings.Contains(got, "did not answer in time") {
		t.Fatalf("late answer to %s: %s", lid, got)
	}

	// The client drops its request while its call is parked: the call is cancelled (before the
	// call asks: a question that wins the race is answered input-required to nobody, and that
	// call ends when its state expires).
	eventually(t, "every call above ended", func() bool { return parked(srv) == 0 })
	hold, started := make(chan struct{}), make(chan struct{}, 1)
	a.set(func(a *askTool) { a.timeout, a.hold, a.started = 0, hold, started })
	n = a.calls()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: code})
		done <- err
	}()
	<-started
	cancel()
	<-done
	eventually(t, "the dropped call's parking ended", func() bool { return parked(srv) == 0 })
	close(hold)
	eventually(t, "the dropped call ended", func() bool { return a.calls() > n })
	a.mu.Lock()
	got := a.ended[len(a.ended)-1]
	a.mu.Unlock()
	if !strings.Contains(got, errParkingEnded.Error()) {
		t.Errorf("the dropped call's question: %s", got)
	}
}

// TestSessionlessQuestionBetweenRequests: a nested call that asks after its exec returned waiting
// (its question is parked with the run) is asked by the next wait on the run (issue 21 item 2).
func TestSessionlessQuestionBetweenRequests(t *testing.T) {
	a := &askTool{hold: make(chan struct{}), asking: make(chan struct{}, 1)}
	cs := answering(t, askServer(t, a, true, 200))
	r := callExec(t, cs, "exec", map[string]any{"code": `return (await tools.ask({q: "later"}))`})
	if r.Status != api.StatusWaiting || r.RunID == "" {
		t.Fatalf("exec: %+v", r)
	}
	close(a.hold)
	<-a.asking // the nested call asks while no request of the client is in flight
	r = callExec(t, cs, "wait", map[string]any{"runId": r.RunID})
	for i := 0; r.Status == api.StatusWaiting && i < 20; i++ {
		r = callExec(t, cs, "wait", map[string]any{"runId": r.RunID})
	}
	if r.Status != api.StatusCompleted || string(r.Value) != `"action=accept content={\"name\":\"ada:later\"}"` {
		t.Fatalf("wait: %+v", r)
	}
}

// TestParkingBounds: the tables stay bounded and empty out: calls that completed leave nothing,
// an abandoned input-required call is cancelled after its state expires (issue 21 item 2).
func TestParkingBounds(t *testing.T) {
	old := retryGrace
	retryGrace = 0
	t.Cleanup(func() { retryGrace = old })
	a := &askTool{timeout: 200 * time.Millisecond}
	cfg := config.Default()
	cfg.Tools.CodeMode.TimeoutMs = 10000
	srv, _, ctx := openServer(t, cfg, []*api.Tool{a.tool()})
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true}))
	t.Cleanup(ts.Close)
	manual := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, fmt.Errorf("unused") }}
	cs := statelessClient(t, ts.URL+"/mcp", "", manual)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"code": `return (await tools.ask({q: "?"}))`}})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("%v %+v", err, res)
	}
	count := func() int { return parked(srv) }
	if count() != 1 {
		t.Fatalf("%d parkings", count())
	}
	// Nobody comes back: the question expires, then the call is abandoned (its run dropped).
	eventually(t, "the abandoned call was removed", func() bool { return count() == 0 })
	if got := srv.g.RT.Stats().SuspendedRuns; got != 0 {
		t.Errorf("%d suspended runs after the abandoned call", got)
	}
	// A call nothing asks leaves no parking.
	r := callExec(t, cs, "exec", map[string]any{"code": `return 1`})
	if r.Status != api.StatusCompleted || count() != 0 {
		t.Fatalf("%+v, %d parkings", r, count())
	}
}

// TestSessionlessUnattributedQuestion: a question the protocol does not tie to a call (a stdio
// upstream's) goes to the scope's mailbox: a call of the same principal whose own request is gone
// (an input-required nobody retried) does not swallow it; the request waiting now shows it, and
// another principal's does not (issue 21 item 2).
func TestSessionlessUnattributedQuestion(t *testing.T) {
	a := &askTool{}
	url := askServer(t, a, true, 10000)
	manual := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, fmt.Errorf("unused") }}
	alice := statelessClient(t, url, aliceToken, manual)
	bob := statelessClient(t, url, bobToken, manual)
	call := func(cs *mcp.ClientSession, q, state string, answers mcp.InputResponseMap) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", RequestState: state, InputResponses: answers,
			Arguments: map[string]any{"code": `return await tools.ask({kind: "unattributed", q: "` + q + `"})`}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ids := func(res *mcp.CallToolResult) string {
		var out []string
		for id, q := range res.InputRequests {
			out = append(out, id+"="+q.(*mcp.ElicitParams).Message)
		}
		slices.Sort(out)
		return strings.Join(out, ",")
	}
	stale := call(alice, "first", "", nil) // asked, never answered
	if got := ids(stale); got != "elicit-s1=first" {
		t.Fatalf("first: %s", got)
	}
	theirs := call(bob, "bob's", "", nil)
	if got := ids(theirs); got != "elicit-s1=bob's" {
		t.Fatalf("bob sees %s", got)
	}
	// Alice's next call shows the scope's questions — the stale call's at once, its own when it
	// asks — and the person answers them all there.
	shown := map[string]bool{}
	res := call(alice, "second", "", nil)
	for i := 0; res.NeedsInput() && i < 5; i++ {
		answers := mcp.InputResponseMap{}
		for id, q := range res.InputRequests {
			shown[q.(*mcp.ElicitParams).Message] = true
			answers[id] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": q.(*mcp.ElicitParams).Message}}
		}
		res = call(alice, "second", res.RequestState, answers)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !shown["first"] || !shown["second"] || !strings.Contains(text, `action=accept content={\"name\":\"second\"}`) {
		t.Fatalf("shown %v; result %s", shown, text)
	}
	eventually(t, "alice's first call got its answer", func() bool { return a.calls() >= 2 })
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.Contains(a.ended, `action=accept content={"name":"first"}`) {
		t.Errorf("calls ended with %q", a.ended)
	}
}
