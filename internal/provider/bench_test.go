package provider

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// BenchmarkTurn is one model turn through the provider layer: build the SDK request, serialize
// it, run the A10 check on the body, send it over loopback to the scripted server, and parse the
// reply (a tool call). The figure includes the scripted server's own work (it parses and
// validates every request), so the layer alone costs less. The per-turn budget is 2 ms.
//
//	go test -run '^$' -bench Turn -benchtime 2s ./internal/provider/
func BenchmarkTurn(b *testing.B) {
	req := conversation
	req.Tools = []ToolDef{
		{Name: "exec", Description: strings.Repeat("Run a cell. tools.callValue(\"native:core:read\", {path: string}) -> ?\n", 40), InputSchema: execSchema},
		{Name: "wait", Description: "Wait for a suspended run.", InputSchema: waitSchema},
	}
	reply := scripted.Reply{Text: "Running it.", ToolCalls: []scripted.ToolCall{{Name: "exec", Arguments: `{"code":"const r = await tools.callValue(\"native:core:read\", {path: \"a.txt\"}); return r.length"}`}}}
	for _, v := range variants {
		b.Run(v.String(), func(b *testing.B) {
			srv := scripted.Start(b, scripted.Options{Repeat: scripted.Fixed(reply)})
			c := newClient(b, srv, v, func(o *Options) { o.CheckPayload = a10() })
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := c.Complete(ctx, req)
				if err != nil || len(res.ToolCalls) != 1 {
					b.Fatal(res, err)
				}
			}
		})
	}
}

// BenchmarkTurnCanned is BenchmarkTurn against a server that answers with fixed bytes, so the
// figure is the provider layer plus loopback HTTP only.
func BenchmarkTurnCanned(b *testing.B) {
	bodies := map[string]string{
		OpenAI:    `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Running it.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"exec","arguments":"{\"code\":\"return 1\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
		Anthropic: `{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Running it."},{"type":"tool_use","id":"toolu_1","name":"exec","input":{"code":"return 1"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`,
	}
	for _, p := range []string{OpenAI, Anthropic} {
		b.Run(p, func(b *testing.B) {
			body := bodies[p]
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(body))
			})
			ts := newLoopback(b, h)
			base := ts + "/v1"
			if p == Anthropic {
				base = ts
			}
			c, err := New(Options{Provider: p, BaseURL: base, APIKey: "k", CheckPayload: a10()})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if res, err := c.Complete(ctx, conversation); err != nil || len(res.ToolCalls) != 1 {
					b.Fatal(res, err)
				}
			}
		})
	}
}

// BenchmarkToolNames is the A10 check's own cost: finding the tool names in a serialized body.
func BenchmarkToolNames(b *testing.B) {
	p, err := openaiParams(conversation, false)
	if err != nil {
		b.Fatal(err)
	}
	body, err := p.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if names, err := toolNames(body); err != nil || len(names) != 2 {
			b.Fatal(names, err)
		}
	}
}
