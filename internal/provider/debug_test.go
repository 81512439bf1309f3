package provider

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/internal/provider/scripted"
)

const testKey = "sk-test-0123456789abcdefghij"

// TestDebugPayloadTools: CODEMODE_DEBUG_MODEL_PAYLOAD=tools logs the model-facing tool names of
// each request, read from the body (D1).
func TestDebugPayloadTools(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) {
			var logs logBuffer
			srv := scripted.New(t, scripted.Say("ok"))
			c := newClient(t, srv, v, func(o *Options) { o.Logger = logs.logger(); o.Debug.Payload = DebugPayloadTools })
			if _, err := c.Complete(context.Background(), hi); err != nil {
				t.Fatal(err)
			}
			recs := logs.records(t, "model payload tools")
			if len(recs) != 1 {
				t.Fatalf("%d records:\n%s", len(recs), logs.String())
			}
			names, _ := recs[0]["names"].([]any)
			if len(names) != 2 || names[0] != "exec" || names[1] != "wait" || recs[0]["provider"] != v.provider {
				t.Errorf("record = %v", recs[0])
			}
		})
	}
}

// TestDebugPayloadFullRedacted: a bounded, redacted JSON snapshot of the real body (D1): no API
// key or bearer token, long strings clipped, the whole at most 32 KB even for a huge request.
func TestDebugPayloadFullRedacted(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) {
			var logs logBuffer
			srv := scripted.New(t, scripted.Say("ok"))
			c := newClient(t, srv, v, func(o *Options) { o.Logger = logs.logger(); o.Debug.Payload = DebugPayloadFullRedacted })
			req := hi
			req.Messages = []Message{
				{Role: RoleUser, Text: "my key is " + testKey + " and my token is Bearer abcdefghijklmnop"},
				{Role: RoleAssistant, Text: strings.Repeat("long answer ", 20000)},
				{Role: RoleUser, Text: "ghp_0123456789abcdefghijklmnopqrstuvwxyz"},
			}
			if _, err := c.Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			recs := logs.records(t, "model payload (redacted)")
			if len(recs) != 1 {
				t.Fatalf("%d records", len(recs))
			}
			body, _ := recs[0]["body"].(string)
			if len(body) > snapshotLimit {
				t.Errorf("snapshot is %d bytes, limit %d", len(body), snapshotLimit)
			}
			var parsed map[string]any
			if err := json.Unmarshal([]byte(body), &parsed); err != nil {
				t.Errorf("snapshot is not JSON: %v", err)
			}
			if parsed["model"] != "test-model" {
				t.Errorf("snapshot lost the model: %.300s", body)
			}
			for _, secret := range []string{testKey, "abcdefghijklmnop", "ghp_0123"} {
				if strings.Contains(logs.String(), secret) {
					t.Errorf("the log contains %q", secret)
				}
			}
			if !strings.Contains(body, "[redacted]") || !strings.Contains(body, "more bytes]") || !strings.Contains(body, `"exec"`) {
				t.Errorf("snapshot = %.500s", body)
			}
		})
	}
}

// TestDebugSSE: "events" logs every event type as it was on the wire; "peek" the first five
// events with their (redacted, clipped) data.
func TestDebugSSE(t *testing.T) {
	reply := scripted.Reply{Text: "a reply long enough for several deltas", ToolCalls: []scripted.ToolCall{{Name: "exec", Arguments: `{"code":"return 1"}`}}}
	wantEvents := map[string][]string{
		// role, 3 text deltas, tool call start, 2 argument deltas, finish, usage, [DONE]
		OpenAI: {"message", "message", "message", "message", "message", "message", "message", "message", "message", "[DONE]"},
		Anthropic: {"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta", "content_block_delta",
			"content_block_stop", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"},
	}
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) {
			var logs logBuffer
			srv := scripted.New(t, scripted.Fixed(reply), scripted.Fixed(reply))
			c := newClient(t, srv, v, func(o *Options) { o.Logger = logs.logger(); o.Debug.SSE = DebugSSEEvents })
			if _, err := c.Complete(context.Background(), hi); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range logs.records(t, "model sse event") {
				got = append(got, r["event"].(string))
			}
			if !v.stream {
				if len(got) != 0 {
					t.Errorf("a JSON response logged SSE events %v", got)
				}
				return
			}
			if !slices.Equal(got, wantEvents[v.provider]) {
				t.Errorf("events = %q\nwant     %q", got, wantEvents[v.provider])
			}

			var peek logBuffer
			c = newClient(t, srv, v, func(o *Options) { o.Logger = peek.logger(); o.Debug.SSE = DebugSSEPeek })
			if _, err := c.Complete(context.Background(), hi); err != nil {
				t.Fatal(err)
			}
			recs := peek.records(t, "model sse peek")
			if len(recs) != peekEvents {
				t.Fatalf("%d peek records, want %d", len(recs), peekEvents)
			}
			for i, r := range recs {
				if r["event"] != wantEvents[v.provider][i] || r["data"] == "" || r["n"] != float64(i+1) {
					t.Errorf("peek %d = %v", i, r)
				}
			}
		})
	}
}

// TestDebugTransport logs every attempt, retries included, and warns about each retry.
func TestDebugTransport(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) {
			var logs logBuffer
			srv := scripted.New(t, scripted.Fixed(scripted.Reply{Status: 503, Header: ms("1")}), scripted.Say("ok"))
			c := newClient(t, srv, v, func(o *Options) { o.Logger = logs.logger(); o.Debug.Transport = true })
			if _, err := c.Complete(context.Background(), hi); err != nil {
				t.Fatal(err)
			}
			recs := logs.records(t, "model http attempt")
			if len(recs) != 2 || recs[0]["status"] != float64(503) || recs[1]["status"] != float64(200) || recs[1]["attempt"] != float64(2) {
				t.Fatalf("records: %s", logs.String())
			}
			if u, _ := recs[0]["url"].(string); !strings.HasPrefix(u, srv.URL) {
				t.Errorf("url = %q", u)
			}
			if w := logs.records(t, "model request failed; retrying"); len(w) != 1 {
				t.Errorf("%d retry warnings", len(w))
			}
			if strings.Contains(logs.String(), testKey) {
				t.Error("the log contains the API key")
			}
		})
	}
}

func TestDebugFromEnv(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want DebugOptions
		err  string
	}{
		{nil, DebugOptions{}, ""},
		{map[string]string{EnvDebugPayload: "tools"}, DebugOptions{Payload: "tools"}, ""},
		{map[string]string{EnvDebugPayload: "full-redacted", EnvDebugSSE: "peek", EnvDebugTransport: "1"},
			DebugOptions{Payload: "full-redacted", SSE: "peek", Transport: true}, ""},
		{map[string]string{EnvDebugSSEAlias: "events"}, DebugOptions{SSE: "events"}, ""},
		{map[string]string{EnvDebugSSE: "peek", EnvDebugSSEAlias: "events"}, DebugOptions{SSE: "peek"}, ""},
		{map[string]string{EnvDebugPayload: "0", EnvDebugTransport: "false"}, DebugOptions{}, ""},
		{map[string]string{EnvDebugPayload: "everything", EnvDebugSSE: "all"}, DebugOptions{},
			`CODEMODE_DEBUG_MODEL_PAYLOAD="everything": want "tools" or "full-redacted"; CODEMODE_DEBUG_MODEL_SSE="all"`},
	}
	for _, c := range cases {
		got, err := DebugFromEnv(func(k string) string { return c.env[k] })
		if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("DebugFromEnv(%v) = %+v, %v; want %+v, %q", c.env, got, err, c.want, c.err)
		}
	}
}
