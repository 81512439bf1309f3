package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recorder counts the writes of a "record" tool: approvals must never make a call run twice.
type recordTool struct {
	mu     sync.Mutex
	writes map[string]int
}

func (r *recordTool) tool() *api.Tool {
	return &api.Tool{Name: "record", Description: "Record a value.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`),
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			var in struct{ Key string }
			_ = json.Unmarshal(c.Input, &in)
			r.mu.Lock()
			r.writes[in.Key]++
			r.mu.Unlock()
			return api.TextResult("recorded "+in.Key, map[string]string{"key": in.Key})
		}}
}

func (r *recordTool) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.writes {
		out[k] = v
	}
	return out
}

const recordThree = `return await Promise.all(["a", "b", "c"].map(async (key) => {
  try { await tools.record({key}); return key + ": recorded" } catch (e) { return key + ": " + e.code }
}))`

// connectWith starts a server with an approval rule on the record tool and connects a client.
func connectWith(t *testing.T, rec *recordTool, opts *mcp.ClientOptions, version string, fallback string) *mcp.ClientSession {
	t.Helper()
	cfg := config.Default()
	cfg.Tools.CodeMode.TimeoutMs = 5000
	cfg.Tools.Approvals = api.Approvals{Rules: []api.ApprovalRule{{Match: "native:app:record", Prompt: "Record this value?", Fallback: fallback}}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g, err := gateway.Open(ctx, cfg, gateway.Options{Tools: []*api.Tool{rec.tool()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv := New(g, nil)
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = srv.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "approver", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestApprovalsThroughElicitation(t *testing.T) { // issue 11: serve asks the MCP client; nothing re-runs
	for _, version := range []string{"", "2025-06-18"} { // multi round-trip, and the SDK eliciting for an older client
		name := map[string]string{"": "multi round-trip client", "2025-06-18": "older client"}[version]
		t.Run(name, func(t *testing.T) {
			rec := &recordTool{writes: map[string]int{}}
			var mu sync.Mutex
			var asked []string
			opts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked = append(asked, req.Params.Message)
				mu.Unlock()
				if strings.Contains(req.Params.Message, `"b"`) {
					return &mcp.ElicitResult{Action: "decline"}, nil
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"reason": "looks fine"}}, nil
			}}
			cs := connectWith(t, rec, opts, version, "")
			r := callExec(t, cs, "exec", map[string]any{"code": recordThree})
			for i := 0; r.Status == api.StatusWaiting && i < 5; i++ {
				// An older client gets one elicitation round per tool call: the model waits again.
				r = callExec(t, cs, "wait", map[string]any{"runId": r.RunID})
			}
			if r.Status != api.StatusCompleted || string(r.Value) != `["a: recorded","b: not_approved","c: recorded"]` {
				t.Fatalf("%+v", r)
			}
			if got := rec.counts(); got["a"] != 1 || got["b"] != 0 || got["c"] != 1 {
				t.Fatalf("writes %v", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 3 || !strings.Contains(asked[0], "Record this value?") || !strings.Contains(asked[0], "native:app:record") {
				t.Fatalf("asked %q", asked)
			}
		})
	}
}

func TestApprovalsWithoutElicitation(t *testing.T) { // issue 11: a client that cannot elicit gets the fallback
	for _, fallback := range []string{"", "allow"} {
		t.Run("fallback "+fallback, func(t *testing.T) {
			rec := &recordTool{writes: map[string]int{}}
			cs := connectWith(t, rec, nil, "", fallback)
			r := callExec(t, cs, "exec", map[string]any{"code": recordThree})
			want, writes := `["a: not_approved","b: not_approved","c: not_approved"]`, 0
			if fallback == "allow" {
				want, writes = `["a: recorded","b: recorded","c: recorded"]`, 1
			}
			if r.Status != api.StatusCompleted || string(r.Value) != want {
				t.Fatalf("%+v", r)
			}
			if got := rec.counts(); got["a"] != writes || got["b"] != writes || got["c"] != writes {
				t.Fatalf("writes %v", got)
			}
		})
	}
}

func TestForgedRequestState(t *testing.T) { // a retry cannot be pointed at another run
	rec := &recordTool{writes: map[string]int{}}
	cs := connectWith(t, rec, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		}}, "", "")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"code": recordThree}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || len(res.InputRequests) != 3 || res.RequestState == "" {
		t.Fatalf("%+v", res)
	}
	forged := res.RequestState[:len(res.RequestState)-2] + "xx"
	answers := mcp.InputResponseMap{}
	for id := range res.InputRequests {
		answers[id] = &mcp.ElicitResult{Action: "accept"}
	}
	res2, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"code": recordThree},
		RequestState: forged, InputResponses: answers})
	if err != nil {
		t.Fatal(err)
	}
	text := res2.Content[0].(*mcp.TextContent).Text
	if !res2.IsError || !strings.Contains(text, "requestState was not issued") || len(rec.counts()) != 0 {
		t.Fatalf("%s %v", text, rec.counts())
	}
}
