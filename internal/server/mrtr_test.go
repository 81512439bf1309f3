package server

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// approvalsOverHTTP serves the record tool behind an approval rule on a stateless-capable HTTP
// listener with two principals.
func approvalsOverHTTP(t *testing.T, rec *recordTool) string {
	t.Helper()
	cfg := config.Default()
	cfg.Tools.CodeMode.TimeoutMs = 5000
	cfg.Tools.Approvals = api.Approvals{Rules: []api.ApprovalRule{{Match: "native:app:record", Prompt: "Record this value?"}}}
	cfg.Serve.Principals = []config.Principal{{Name: "alice"}, {Name: "bob"}}
	srv, _, ctx := openServer(t, cfg, []*api.Tool{rec.tool()})
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true, Principals: []PrincipalToken{
		{Name: "alice", Token: aliceToken}, {Name: "bob", Token: bobToken}}}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// TestStatelessApprovalRoundTrip: a stateless client's approval prompt is an MRTR round trip;
// accept runs the call once, decline refuses it (issue 19 item 5).
func TestStatelessApprovalRoundTrip(t *testing.T) {
	rec := &recordTool{writes: map[string]int{}}
	url := approvalsOverHTTP(t, rec)
	var mu sync.Mutex
	asked := 0
	cs := statelessClient(t, url, aliceToken, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		asked++
		mu.Unlock()
		if strings.Contains(req.Params.Message, `"b"`) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}})
	if cs.ID() != "" {
		t.Fatal("not stateless")
	}
	r := callExec(t, cs, "exec", map[string]any{"code": recordThree})
	if r.Status != api.StatusCompleted || string(r.Value) != `["a: recorded","b: not_approved","c: recorded"]` {
		t.Fatalf("%+v", r)
	}
	if got := rec.counts(); got["a"] != 1 || got["b"] != 0 || got["c"] != 1 {
		t.Fatalf("writes %v", got)
	}
	if asked != 3 {
		t.Fatalf("asked %d times", asked)
	}
}

// TestStatelessRequestStateAbuse: a forged, replayed, foreign or redirected requestState does
// nothing (issue 19 item 5).
func TestStatelessRequestStateAbuse(t *testing.T) {
	rec := &recordTool{writes: map[string]int{}}
	url := approvalsOverHTTP(t, rec)
	noMRTR := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		}}
	alice := statelessClient(t, url, aliceToken, noMRTR)
	bob := statelessClient(t, url, bobToken, noMRTR)
	ask := func() *mcp.CallToolResult {
		res, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"code": recordThree}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.NeedsInput() || len(res.InputRequests) != 3 || !strings.HasPrefix(res.RequestState, "v2.") {
			t.Fatalf("%+v", res)
		}
		return res
	}
	accept := func(res *mcp.CallToolResult) mcp.InputResponseMap {
		m := mcp.InputResponseMap{}
		for id := range res.InputRequests {
			m[id] = &mcp.ElicitResult{Action: "accept"}
		}
		return m
	}
	retry := func(cs *mcp.ClientSession, state string, answers mcp.InputResponseMap) string {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"code": recordThree},
			RequestState: state, InputResponses: answers})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	first := ask()
	forged := first.RequestState[:len(first.RequestState)-2] + "xx"
	if got := retry(alice, forged, accept(first)); !strings.Contains(got, "not issued by this gateway") {
		t.Fatalf("forged: %s", got)
	}
	if got := retry(bob, first.RequestState, accept(first)); !strings.Contains(got, "another principal") {
		t.Fatalf("another principal's retry: %s", got)
	}
	// Answers to calls the state does not name are ignored: another run's pending calls cannot
	// be approved with this state.
	second := ask()
	if got := retry(alice, first.RequestState, accept(second)); !strings.Contains(got, "no answer to them") {
		t.Fatalf("answers to another run's calls: %s", got)
	}
	if len(rec.counts()) != 0 {
		t.Fatalf("writes %v", rec.counts())
	}
	// The second state answered properly completes its run, once; its replay is refused.
	if got := retry(alice, second.RequestState, accept(second)); !strings.Contains(got, `"status":"completed"`) {
		t.Fatalf("%s", got)
	}
	if got := retry(alice, second.RequestState, accept(second)); !strings.Contains(got, "already answered") {
		t.Fatalf("replay: %s", got)
	}
	if got := rec.counts(); got["a"] != 1 || got["b"] != 1 || got["c"] != 1 {
		t.Fatalf("writes %v", got)
	}
}

// TestRequestStateExpires: a state past its expiry is refused.
func TestRequestStateExpires(t *testing.T) {
	s := newStateSigner([]byte("0123456789abcdef0123456789abcdef"))
	st := s.sign(roundTrip{Kind: kindApproval, Scope: "p", Run: "r", Inputs: []string{"c"}, Exp: time.Now().Add(time.Minute).Unix()})
	s.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	if _, err := s.open(st, "p"); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("%v", err)
	}
	// Another replica with the same key accepts it in time; one with another key does not.
	other := newStateSigner([]byte("0123456789abcdef0123456789abcdef"))
	if rt, err := other.open(st, "p"); err != nil || rt.Run != "r" {
		t.Fatalf("%v", err)
	}
	if _, err := newStateSigner(nil).open(st, "p"); err == nil {
		t.Fatal("accepted with another key")
	}
}
