package provider

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// BenchmarkTurn is one model turn through the provider layer: render the request body, run the A10 check on the body, send it over loopback to the scripted server, and parse the
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

// BenchmarkTurnCanned is BenchmarkTurn against a server that answers with fixed bytes (the
// scripted server's reply, captured once), so the figure is the provider layer plus loopback
// HTTP only.
func BenchmarkTurnCanned(b *testing.B) {
	reply := scripted.Reply{Text: "Running it.", ToolCalls: []scripted.ToolCall{{Name: "exec", Arguments: `{"code":"return 1"}`}}}
	for _, v := range variants {
		b.Run(v.String(), func(b *testing.B) {
			// Capture the scripted reply's bytes for this variant.
			srv := scripted.Start(b, scripted.Options{Repeat: scripted.Fixed(reply)})
			var canned []byte
			var ctype string
			capture := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				res, err := http.DefaultTransport.RoundTrip(r)
				if err == nil {
					canned, _ = io.ReadAll(res.Body)
					res.Body.Close()
					ctype = res.Header.Get("Content-Type")
					res.Body = io.NopCloser(bytes.NewReader(canned))
				}
				return res, err
			})}
			c := newClient(b, srv, v, func(o *Options) { o.HTTPClient = capture })
			if _, err := c.Complete(context.Background(), conversation); err != nil {
				b.Fatal(err)
			}
			base := newLoopback(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", ctype)
				_, _ = w.Write(canned)
			}))
			if v.provider == OpenAI {
				base += "/v1"
			}
			c, err := New(Options{Provider: v.provider, BaseURL: base, APIKey: "k", Stream: v.stream, CheckPayload: a10()})
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
	body, err := openaiBody(conversation, false)
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
