package provider

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// TestMalformedToolCalls: arguments that are not a JSON object are reported in Malformed (never
// a panic, never a silent `{}`), the raw text is kept, and the call can be answered with an
// error in the next turn, which the server accepts.
func TestMalformedToolCalls(t *testing.T) {
	cases := []struct {
		args string
		says string // "" = well formed
	}{
		{`{"code":"return 1"}`, ""},
		{``, ""}, // servers send "" for tools without parameters
		{`{"code": "return 1`, "not valid JSON"},
		{`{"code": "a"} trailing`, "not valid JSON"},
		{`[1,2]`, "not a JSON object"},
		{`"return 1"`, "not a JSON object"},
		{`null`, "null"},
	}
	for _, v := range variants {
		for _, tc := range cases {
			t.Run(v.String()+"/"+tc.args, func(t *testing.T) {
				srv := scripted.New(t,
					scripted.Fixed(scripted.Reply{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "exec", Arguments: tc.args}}}),
					func(r *scripted.Request) scripted.Reply {
						res, ok := r.Result("c1")
						if !ok || !strings.Contains(res.Content, "malformed") {
							t.Errorf("the error result did not reach the server: %+v", r.Messages)
						}
						return scripted.Reply{Text: "sorry"}
					})
				c := newClient(t, srv, v, nil)
				res, err := c.Complete(context.Background(), hi)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.ToolCalls) != 1 {
					t.Fatalf("calls = %+v", res.ToolCalls)
				}
				call := res.ToolCalls[0]
				if call.ID != "c1" || call.Name != "exec" {
					t.Fatalf("call = %+v", call)
				}
				if tc.says == "" {
					if call.Malformed != "" || !isJSONObject(call.Arguments) {
						t.Fatalf("well-formed call reported as %+v", call)
					}
				} else {
					says := tc.says
					if v.provider == Anthropic && !v.stream && !json.Valid([]byte(tc.args)) {
						says = "not a JSON object" // the server can only send invalid JSON as a JSON string
					}
					if !strings.Contains(call.Malformed, says) || call.Arguments != nil {
						t.Fatalf("malformed call = %+v, want Malformed saying %q", call, says)
					}
					if v.provider == OpenAI || v.stream {
						if call.RawArguments != tc.args {
							t.Errorf("raw arguments = %q, want %q", call.RawArguments, tc.args)
						}
					}
				}
				req := hi
				req.Messages = append(req.Messages[:1:1], Message{Role: RoleAssistant, ToolCalls: res.ToolCalls},
					Message{Role: RoleTool, Results: []ToolResult{{CallID: "c1", Content: "malformed or not, this is the answer", IsError: true}}})
				if _, err := c.Complete(context.Background(), req); err != nil {
					t.Fatalf("replaying the call: %v", err)
				}
			})
		}
	}
}

func TestParseArguments(t *testing.T) {
	for _, tc := range []struct {
		name, raw, says string
	}{
		{"exec", `{"a":1}`, ""},
		{"exec", ` {"a":1} `, ""},
		{"exec", `{}`, ""},
		{"", `{}`, "no tool name"},
		{"exec", `{`, "not valid JSON"},
		{"exec", `1`, "not a JSON object"},
		{"exec", `null`, "null"},
	} {
		call := ToolCall{Name: tc.name, RawArguments: tc.raw}
		parseArguments(&call)
		if tc.says == "" && (call.Malformed != "" || !isJSONObject(call.Arguments)) ||
			tc.says != "" && (!strings.Contains(call.Malformed, tc.says) || call.Arguments != nil) {
			t.Errorf("parseArguments(%q, %q) = %+v", tc.name, tc.raw, call)
		}
	}
}

func isJSONObject(b []byte) bool {
	s := strings.TrimSpace(string(b))
	return strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}")
}
