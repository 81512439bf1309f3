package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// BenchmarkAgentTurn measures the loop's overhead per model turn, the model excluded: each run is
// two turns against a scripted server on loopback — the model calls exec with a trivial cell, then
// answers — so one op is two payload builds and A10 checks, two HTTP round trips with parsing,
// and one exec. Target: ≤ 2 ms per turn (µs/turn).
//
//	go test -run '^$' -bench AgentTurn -benchtime 200x ./internal/agent
func BenchmarkAgentTurn(b *testing.B) {
	rt := newRuntime(b, nil)
	for _, c := range []struct {
		prov   string
		stream bool
	}{{scripted.OpenAI, false}, {scripted.OpenAI, true}, {scripted.Anthropic, false}, {scripted.Anthropic, true}} {
		name := c.prov + map[bool]string{false: "/json", true: "/sse"}[c.stream]
		b.Run(name, func(b *testing.B) {
			s := rt.Activate(api.RunContext{SessionKey: "bench-" + name}, nil)
			srv := scripted.Start(b, scripted.Options{Repeat: func(r *scripted.Request) scripted.Reply {
				if r.Last().Role == "user" {
					return scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "exec", Arguments: `{"code":"return 1 + 1"}`}}}
				}
				return scripted.Reply{Text: "2"}
			}})
			opts := Options{Client: client(b, srv, c.prov, c.stream, s), Model: "m"}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := Run(ctx, s, opts, fmt.Sprint("what is 1 + 1? ", i))
				if err != nil || res.Answer != "2" {
					b.Fatalf("%+v %v", res, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(2*b.N), "µs/turn")
		})
	}
}

// BenchmarkExecTrivial is the exec part of a turn alone, for comparison.
func BenchmarkExecTrivial(b *testing.B) {
	rt := newRuntime(b, nil)
	s := rt.Activate(api.RunContext{SessionKey: "bench"}, nil)
	ctx := context.Background()
	args := []byte(`{"code":"return 1 + 1"}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if r := s.Handle(ctx, "c", "exec", args); r.IsError() {
			b.Fatal(r.Text())
		}
	}
}
