package provider

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// TestRoundTrip runs a three-turn conversation with tool calls and results through both
// providers, as JSON and as SSE, and checks both what the server parsed and what the client got.
func TestRoundTrip(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) {
			checkGoroutines(t)
			srv := scripted.New(t,
				scripted.Fixed(scripted.Reply{Text: "Let me compute that. ✓ ünïcödé",
					ToolCalls: []scripted.ToolCall{{ID: "call_a", Name: "exec", Arguments: `{"code":"return 1 + 1","language":"javascript"}`}}}),
				func(r *scripted.Request) scripted.Reply {
					res := r.LastResults()
					if len(res) != 1 || res[0].CallID != "call_a" || res[0].Content != `{"status":"completed","value":2}` {
						t.Errorf("turn 2 results = %+v", res)
					}
					return scripted.Reply{ToolCalls: []scripted.ToolCall{
						{Name: "exec", Arguments: `{"code":"await yield_control()"}`},
						{Name: "wait", Arguments: `{"runId":"r1"}`},
					}}
				},
				func(r *scripted.Request) scripted.Reply {
					// OpenAI: tool messages, then the text as a user message. Anthropic: one user
					// message with the tool_result blocks and the text.
					tool := r.Messages[4]
					if len(tool.Results) != 2 || tool.Results[1].IsError != (v.provider == Anthropic) || tool.Results[0].IsError {
						t.Errorf("turn 3 results = %+v", tool.Results)
					}
					if r.Last().Text != "go on" {
						t.Errorf("turn 3 text beside the results = %q", r.Last().Text)
					}
					return scripted.Reply{Text: "The answer is 2.", InputTokens: 120, OutputTokens: 7}
				},
			)
			c := newClient(t, srv, v, nil)
			ctx := context.Background()
			req := Request{Model: "test-model", System: "You are terse.", Tools: surface, MaxTokens: 500,
				Messages: []Message{{Role: RoleUser, Text: "What is 1+1?"}}}

			r1, err := c.Complete(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if r1.Text != "Let me compute that. ✓ ünïcödé" || len(r1.ToolCalls) != 1 || r1.StopReason != StopToolCalls {
				t.Fatalf("turn 1 = %+v", r1)
			}
			tc := r1.ToolCalls[0]
			if tc.ID != "call_a" || tc.Name != "exec" || tc.Malformed != "" || !jsonEqual(tc.Arguments, `{"code":"return 1 + 1","language":"javascript"}`) {
				t.Fatalf("turn 1 call = %+v", tc)
			}
			if r1.RequestID != "req_scripted_1" {
				t.Errorf("request id = %q", r1.RequestID)
			}

			req.Messages = append(req.Messages,
				Message{Role: RoleAssistant, Text: r1.Text, ToolCalls: r1.ToolCalls},
				Message{Role: RoleTool, Results: []ToolResult{{CallID: "call_a", Name: "exec", Content: `{"status":"completed","value":2}`}}})
			r2, err := c.Complete(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(r2.ToolCalls) != 2 || r2.ToolCalls[0].Name != "exec" || r2.ToolCalls[1].Name != "wait" || r2.ToolCalls[0].ID == r2.ToolCalls[1].ID {
				t.Fatalf("turn 2 = %+v", r2)
			}

			req.Messages = append(req.Messages,
				Message{Role: RoleAssistant, ToolCalls: r2.ToolCalls},
				Message{Role: RoleTool, Text: "go on", Results: []ToolResult{
					{CallID: r2.ToolCalls[0].ID, Content: `{"status":"waiting","runId":"r1"}`},
					{CallID: r2.ToolCalls[1].ID, Content: "code mode run is unavailable or expired.", IsError: true}}})
			r3, err := c.Complete(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if r3.Text != "The answer is 2." || len(r3.ToolCalls) != 0 || r3.StopReason != StopEnd {
				t.Fatalf("turn 3 = %+v", r3)
			}
			if r3.Usage != (Usage{InputTokens: 120, OutputTokens: 7}) {
				t.Errorf("usage = %+v", r3.Usage)
			}

			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("server saw %d requests", len(reqs))
			}
			for i, r := range reqs {
				if r.Model != "test-model" || r.System != "You are terse." || r.Stream != v.stream || r.MaxTokens != 500 {
					t.Errorf("request %d: model %q system %q stream %v max %d", i+1, r.Model, r.System, r.Stream, r.MaxTokens)
				}
				if !slices.Equal(r.ToolNames(), []string{"exec", "wait"}) {
					t.Errorf("request %d tools = %v", i+1, r.ToolNames())
				}
				if !jsonEqual(r.Tools[0].Schema, string(execSchema)) || r.Tools[0].Description != "Run a code-mode cell." {
					t.Errorf("request %d exec tool = %+v", i+1, r.Tools[0])
				}
			}
			roles := func(r *scripted.Request) (out []string) {
				for _, m := range r.Messages {
					out = append(out, m.Role)
				}
				return out
			}
			if got := roles(reqs[2]); !slices.Equal(got, []string{"user", "assistant", "tool", "assistant", "tool"}) && v.provider == Anthropic ||
				v.provider == OpenAI && !slices.Equal(got, []string{"user", "assistant", "tool", "assistant", "tool", "user"}) {
				t.Errorf("request 3 roles = %v", got)
			}
		})
	}
}

func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
