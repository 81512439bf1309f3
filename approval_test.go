package codemode

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
)

// files is a write tool that counts how often each path was written: approvals must never make a
// call run twice.
type files struct {
	mu     sync.Mutex
	writes map[string]int
}

func (f *files) tool() *api.Tool {
	return &api.Tool{Name: "write", Description: "Write a file.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path"]}`),
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			var in struct{ Path string }
			_ = json.Unmarshal(c.Input, &in)
			f.mu.Lock()
			f.writes[in.Path]++
			f.mu.Unlock()
			return api.TextResult("wrote "+in.Path, map[string]any{"path": in.Path})
		}}
}

func (f *files) counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.writes {
		out[k] = v
	}
	return out
}

// threeWrites writes a, b and c at once; b needs approval. The cell reports what happened to b.
const threeWrites = `
const results = await Promise.all(["a", "b", "c"].map(async (path) => {
  try { await tools.write({path, content: "x"}); return path + ": written" }
  catch (e) { return path + ": " + e.code }
}));
text("after the writes");
return results`

// onlyBRuntime is a runtime where only writes of b need a decision: a hook requires approval for
// them (no rule matches writes in general).
func onlyBRuntime(t *testing.T, rec *recorder, approver api.Approver) (*Runtime, *files) {
	t.Helper()
	f := &files{writes: map[string]int{}}
	rt := newRuntime(t, testConfig(t, func(c *config.Config) { c.Tools.CodeMode.TimeoutMs = 5000 }), func(o *Options) {
		o.Hooks = []api.BeforeToolCallHook{func(ctx context.Context, ev *api.ToolCallEvent) (api.HookDecision, error) {
			if ev.ToolID == "native:app:write" && strings.Contains(string(ev.Input), `"b"`) {
				return api.HookDecision{RequireApproval: true, ApprovalPrompt: "Write b?"}, nil
			}
			return api.HookDecision{}, nil
		}}
		if rec != nil {
			o.Trajectory = rec
		}
		o.Approver = approver
	})
	return rt, f
}

func TestApprovalSuspendsAndNothingReruns(t *testing.T) { // issue 11: approve → runs once; reject → catchable; nothing re-ran
	for _, approve := range []bool{true, false} {
		name := map[bool]string{true: "approve", false: "reject"}[approve]
		t.Run(name, func(t *testing.T) {
			var rec recorder
			rt, f := onlyBRuntime(t, &rec, nil)
			rc := api.RunContext{AgentID: "a", SessionKey: "s", RunID: "r"}
			s := rt.Activate(rc, []*api.Tool{f.tool()})
			start := time.Now()
			res := s.Handle(context.Background(), "call_1", "exec", mustJSON(map[string]string{"code": threeWrites})).Exec
			if res.Status != api.StatusWaiting || res.Reason != api.ReasonApproval || len(res.PendingApprovals) != 1 {
				t.Fatalf("%+v", res)
			}
			if time.Since(start) > 3*time.Second {
				t.Fatalf("the run waited for its deadline instead of returning when only the approval was left")
			}
			req := res.PendingApprovals[0]
			if req.Tool != "native:app:write" || req.Prompt != "Write b?" || !strings.Contains(string(req.Input), `"b"`) || !strings.HasPrefix(req.CallID, "call_1/") {
				t.Fatalf("request %+v", req)
			}
			if got := f.counts(); got["a"] != 1 || got["c"] != 1 || got["b"] != 0 {
				t.Fatalf("before the decision: %v", got)
			}
			if err := s.Decide(context.Background(), res.RunID, req.CallID, api.Decision{Approve: approve, Reason: "not today", By: "tester"}); err != nil {
				t.Fatal(err)
			}
			w := s.Handle(context.Background(), "call_2", "wait", mustJSON(map[string]string{"runId": res.RunID})).Exec
			want := `["a: written","b: written","c: written"]`
			if !approve {
				want = `["a: written","b: not_approved","c: written"]`
			}
			if got := mustComplete(t, *w); got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
			wantB := map[bool]int{true: 1, false: 0}[approve]
			if got := f.counts(); got["a"] != 1 || got["c"] != 1 || got["b"] != wantB {
				t.Fatalf("writes %v: something ran twice or the rejected write ran", got)
			}
			if len(w.Output) != 1 || w.Output[0].Text != "after the writes" {
				t.Fatalf("output %+v", w.Output)
			}
			// The trajectory shows the request, the decision (who, why) and the call it governed.
			var reqEv, decEv *api.TrajectoryEvent
			for _, ev := range rec.events() {
				ev := ev
				switch ev.Kind {
				case api.EventApprovalRequest:
					reqEv = &ev
				case api.EventApprovalDecision:
					decEv = &ev
				}
			}
			wantStatus := map[bool]string{true: "approved", false: "rejected"}[approve]
			if reqEv == nil || reqEv.CallID != req.CallID || reqEv.Approval.Prompt != "Write b?" ||
				decEv == nil || decEv.Status != wantStatus || decEv.Approval.By != "tester" || decEv.Approval.Reason != "not today" {
				t.Fatalf("trajectory: %+v %+v", reqEv, decEv)
			}
		})
	}
}

func TestDecideFailsCleanly(t *testing.T) { // issue 11: forged ids, other sessions, twice, expired
	rt, f := onlyBRuntime(t, nil, nil)
	rc := api.RunContext{AgentID: "a", SessionKey: "s", RunID: "r"}
	s := rt.Activate(rc, []*api.Tool{f.tool()})
	res := execCode(t, s, threeWrites)
	if res.Reason != api.ReasonApproval {
		t.Fatalf("%+v", res)
	}
	id := res.PendingApprovals[0].CallID
	ctx := context.Background()
	other := s.ForRun(api.RunContext{AgentID: "a", SessionKey: "other", RunID: "r"})
	for name, err := range map[string]error{
		"forged call id":                    s.Decide(ctx, res.RunID, "call_1/99", api.Decision{Approve: true}),
		"a nested call that is not waiting": s.Decide(ctx, res.RunID, strings.Replace(id, "/2", "/1", 1), api.Decision{Approve: true}),
		"unknown run":                       s.Decide(ctx, "run_nope", id, api.Decision{Approve: true}),
		"other session":                     other.Decide(ctx, res.RunID, id, api.Decision{Approve: true}),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := other.Decide(ctx, res.RunID, id, api.Decision{Approve: true}); err == nil || err.Error() != "code mode run belongs to a different session." {
		t.Fatalf("other session: %v", err)
	}
	if err := s.Decide(ctx, res.RunID, id, api.Decision{Approve: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Decide(ctx, res.RunID, id, api.Decision{Approve: false}); err == nil || !strings.Contains(err.Error(), "one-shot") {
		t.Fatalf("second decision: %v", err)
	}
	mustComplete(t, waitRaw(s, "w", mustJSON(map[string]string{"runId": res.RunID})))
	if f.counts()["b"] != 1 {
		t.Fatalf("%v", f.counts())
	}
}

func TestApprovalExpiry(t *testing.T) { // issue 11: expiry rejects
	f := &files{writes: map[string]int{}}
	rt := newRuntime(t, testConfig(t), func(o *Options) {
		o.Approvals = api.Approvals{Rules: []api.ApprovalRule{{Match: "write", Timeout: 200 * time.Millisecond}}}
	})
	s := rt.Activate(api.RunContext{SessionKey: "s"}, []*api.Tool{f.tool()})
	res := execCode(t, s, `try { await tools.write({path: "x"}) } catch (e) { return e.code + ": " + e.message }`)
	if res.Reason != api.ReasonApproval {
		t.Fatalf("%+v", res)
	}
	id := res.PendingApprovals[0].CallID
	time.Sleep(400 * time.Millisecond)
	if err := s.Decide(context.Background(), res.RunID, id, api.Decision{Approve: true}); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("decision after expiry: %v", err)
	}
	got := mustComplete(t, waitRaw(s, "w", mustJSON(map[string]string{"runId": res.RunID})))
	if !strings.Contains(got, "approval_expired") || f.counts()["x"] != 0 {
		t.Fatalf("%s %v", got, f.counts())
	}
}

func TestApproverAnswersInline(t *testing.T) { // issue 11: a person asked through an Approver; the cell goes on meanwhile
	asked := make(chan api.ApprovalRequest, 4)
	approver := api.ApproverFunc(func(ctx context.Context, req api.ApprovalRequest) (api.Decision, error) {
		asked <- req
		time.Sleep(50 * time.Millisecond) // a person takes a moment
		return api.Decision{Approve: true, By: "alice"}, nil
	})
	rt, f := onlyBRuntime(t, nil, approver)
	s := rt.Activate(api.RunContext{SessionKey: "s"}, []*api.Tool{f.tool()})
	got := mustComplete(t, execCode(t, s, threeWrites))
	if got != `["a: written","b: written","c: written"]` || len(asked) != 1 {
		t.Fatalf("%s, asked %d", got, len(asked))
	}
	// An Approver that cannot ask anybody gets the rule's fallback: deny by default…
	noOne := api.ApproverFunc(func(ctx context.Context, req api.ApprovalRequest) (api.Decision, error) {
		return api.Decision{}, api.ErrNoApprover
	})
	rt2, f2 := onlyBRuntime(t, nil, noOne)
	s2 := rt2.Activate(api.RunContext{SessionKey: "s"}, []*api.Tool{f2.tool()})
	if got := mustComplete(t, execCode(t, s2, threeWrites)); got != `["a: written","b: not_approved","c: written"]` {
		t.Fatalf("fallback: %s", got)
	}
	// …or allow when the rule says so.
	rt3 := newRuntime(t, testConfig(t), func(o *Options) {
		o.Approvals = api.Approvals{Rules: []api.ApprovalRule{{Match: "native:app:*", Fallback: api.FallbackAllow}}}
		o.Approver = noOne
	})
	f3 := &files{writes: map[string]int{}}
	if got := mustComplete(t, execCode(t, rt3.Activate(api.RunContext{}, []*api.Tool{f3.tool()}), threeWrites)); got != `["a: written","b: written","c: written"]` {
		t.Fatalf("fallback allow: %s", got)
	}
}

func TestApprovalRulesAndDirectCalls(t *testing.T) { // issue 11: patterns, read-only exemption, direct calls through the same gate
	f := &files{writes: map[string]int{}}
	var asked []string
	var mu sync.Mutex
	approver := api.ApproverFunc(func(ctx context.Context, req api.ApprovalRequest) (api.Decision, error) {
		mu.Lock()
		asked = append(asked, req.Tool)
		mu.Unlock()
		return api.Decision{Approve: req.Tool != "image"}, nil
	})
	rt := newRuntime(t, testConfig(t), func(o *Options) {
		o.Approvals = api.Approvals{ExemptReadOnly: true, Rules: []api.ApprovalRule{
			{Match: "native:*:*"}, {Match: "mcp:*:create*"}, {Match: "image"},
		}}
		o.Approver = approver
	})
	s := rt.Activate(api.RunContext{SessionKey: "s"}, append(fixtureTools(), f.tool()))
	got := mustComplete(t, execCode(t, s, `
		await tools.read({path: "x"});              // read-only: exempt
		await tools.write({path: "y"});             // native:*:* → asked
		await MCP.github.createIssue({title: "t"}); // mcp:*:create* → asked
		return 1`))
	if got != "1" || strings.Join(asked, ",") != "native:app:write,mcp:github:create_issue" {
		t.Fatalf("%s, asked %v", got, asked)
	}
	// A direct-only tool called by the model goes through the same gate, synchronously.
	h := s.Handle(context.Background(), "d1", "image", json.RawMessage(`{}`))
	if h.Err == nil || !strings.Contains(h.Err.Error(), "image was not approved") {
		t.Fatalf("direct call: %+v", h)
	}
	// Without an Approver a direct call gets the fallback (deny).
	rt2 := newRuntime(t, testConfig(t), func(o *Options) {
		o.Approvals = api.Approvals{Rules: []api.ApprovalRule{{Match: "image"}}}
	})
	h = rt2.Activate(api.RunContext{}, fixtureTools()).Handle(context.Background(), "d1", "image", json.RawMessage(`{}`))
	if h.Err == nil || !strings.Contains(h.Err.Error(), "no person can be asked") {
		t.Fatalf("direct call without approver: %+v", h)
	}
	// Invalid rules are refused at New.
	for _, rules := range [][]api.ApprovalRule{{{Match: "["}}, {{Match: "x", Fallback: "maybe"}}, {{Match: ""}}} {
		if _, err := New(context.Background(), Options{Approvals: api.Approvals{Rules: rules}}); err == nil {
			t.Errorf("rules %+v accepted", rules)
		}
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestWithApprovals: a surface can carry approval rules of its own (a gateway's per-principal
// policy, issue 19 item 3); the runtime's surface and others derived from it are unaffected.
func TestWithApprovals(t *testing.T) {
	f := &files{writes: map[string]int{}}
	rt := newRuntime(t, testConfig(t))
	base := rt.Activate(api.RunContext{SessionKey: "s"}, []*api.Tool{f.tool()})
	strict, err := base.WithApprovals(api.Approvals{Rules: []api.ApprovalRule{{Match: "write"}}})
	if err != nil {
		t.Fatal(err)
	}
	code := `await tools.write({path: "a"}); return "done"`
	if r := execCode(t, strict.ForRun(api.RunContext{SessionKey: "s2"}), code); r.Status != api.StatusWaiting || r.Reason != api.ReasonApproval {
		t.Fatalf("strict surface: %+v", r)
	}
	if r := execCode(t, base, code); r.Status != api.StatusCompleted {
		t.Fatalf("base surface: %+v", r)
	}
	if got := f.counts()["a"]; got != 1 {
		t.Fatalf("writes of a: %d", got)
	}
	if _, err := base.WithApprovals(api.Approvals{Rules: []api.ApprovalRule{{Match: "["}}}); err == nil {
		t.Fatal("an invalid pattern was accepted")
	}
}
