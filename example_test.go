package codemode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
)

// An agent loop embeds code mode in a few lines: activate the run's tools, send the model the
// surface's tools (exec and wait), and hand every tool call the model makes to Handle.
func ExampleSurface_Handle() {
	ctx := context.Background()
	rt, err := codemode.New(ctx, codemode.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	weather := &api.Tool{
		Name:        "weather",
		Description: "Current weather for a city.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			var in struct{ City string }
			if err := json.Unmarshal(c.Input, &in); err != nil {
				return nil, err
			}
			return api.TextResult("sunny in "+in.City, map[string]any{"city": in.City, "celsius": 21})
		},
	}
	s := rt.Activate(api.RunContext{AgentID: "demo", SessionKey: "s1"}, []*api.Tool{weather})
	fmt.Println("the model sees:", s.ToolNames())

	// The model answers with a tool call; its arguments go to Handle unchanged.
	args := json.RawMessage(`{"code": "const w = await tools.weather({city: 'Lisbon'}); return w.celsius > 20 ? 'warm' : 'cold'"}`)
	res := s.Handle(ctx, "call_1", "exec", args)
	if res.Exec.Status == api.StatusFailed {
		log.Fatalf("%s: %s", res.Exec.Code, res.Exec.Error)
	}
	fmt.Println(res.Exec.Status, string(res.Exec.Value))
	// Output:
	// the model sees: [exec wait]
	// completed "warm"
}

// A native tool that declares an output schema gets a typed line in the exec description's quick
// index, so a model can use its fields in the first cell it writes.
func Example_outputSchema() {
	ctx := context.Background()
	rt, _ := codemode.New(ctx, codemode.Options{})
	defer rt.Close()
	shipments := &api.Tool{
		Name: "shipping_list", Owner: "shipping", Description: "List shipments.", ReadOnly: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		OutputSchema: json.RawMessage(`{"type":"array","items":{"type":"object","properties":{
			"id":{"type":"string"},"paid":{"type":"boolean"},"tons":{"type":"number"}},
			"required":["id","paid","tons"],"additionalProperties":false}}`),
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			return api.TextResult("3 shipments", []map[string]any{
				{"id": "a", "paid": false, "tons": 12}, {"id": "b", "paid": true, "tons": 40}, {"id": "c", "paid": false, "tons": 3}})
		},
	}
	s := rt.Activate(api.RunContext{}, []*api.Tool{shipments})
	for _, line := range strings.Split(s.Tools()[0].Description, "\n") {
		if strings.Contains(line, "shipping_list") {
			fmt.Println(line)
		}
	}
	res := s.Handle(ctx, "c1", "exec", json.RawMessage(`{"code":"return (await tools.shipping_list({})).filter(s => !s.paid && s.tons > 10).map(s => s.id)"}`))
	fmt.Println(string(res.Exec.Value))
	// Output:
	// tools.shipping_list({}) -> Array<{ id: string; paid: boolean; tons: number }>  // native:shipping:shipping_list
	// ["a"]
}

// A plugin brings tools and a namespace: a domain API cells call as a global, backed by the
// plugin's own catalog tools (with their policy, hooks, approvals and trajectory).
func ExampleRuntime_AddPlugin() {
	ctx := context.Background()
	rt, _ := codemode.New(ctx, codemode.Options{})
	defer rt.Close()
	notes := map[string]string{"todo": "buy milk"}
	err := rt.AddPlugin(ctx, api.Plugin{
		ID: "notes",
		Tools: []*api.Tool{{
			Name: "notes_get", Description: "Read a note.", ReadOnly: true,
			Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
				var in struct{ Name string }
				_ = json.Unmarshal(c.Input, &in)
				return api.TextResult(notes[in.Name], map[string]string{"name": in.Name, "text": notes[in.Name]})
			},
		}},
		Namespaces: []api.Namespace{{
			ID: "notes", GlobalName: "Notes", Description: "The user's notes.",
			Prompt:            "Notes.get(name) returns {name, text}.",
			RequiredToolNames: []string{"notes_get"},
			CreateScope: func(ctx context.Context, sc api.NamespaceContext) (any, error) {
				return map[string]any{
					// Notes.get("todo") calls notes_get with {name: "todo"}.
					"get": api.NamespaceTool("notes_get", func(args []json.RawMessage) (json.RawMessage, error) {
						return json.Marshal(map[string]json.RawMessage{"name": args[0]})
					}),
				}, nil
			},
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	s := rt.Activate(api.RunContext{}, nil)
	res := s.Handle(ctx, "c1", "exec", json.RawMessage(`{"code":"return (await Notes.get('todo')).text"}`))
	fmt.Println(string(res.Exec.Value))
	// Output:
	// "buy milk"
}

// Hooks see every call (and may rewrite or block it); approval rules make a call wait for a
// person. Without an Approver the run returns waiting with reason "approval": the embedder decides
// each pending call, then waits — nothing that already ran runs again.
func Example_hooksAndApprovals() {
	ctx := context.Background()
	sent := 0
	send := &api.Tool{Name: "send_email", Description: "Send an email.",
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			sent++
			return api.TextResult("sent", map[string]any{"ok": true, "input": json.RawMessage(c.Input)})
		}}
	rt, _ := codemode.New(ctx, codemode.Options{
		Approvals: api.Approvals{Rules: []api.ApprovalRule{{Match: "native:app:send_email", Prompt: "Send this email?"}}},
		Hooks: []api.BeforeToolCallHook{func(ctx context.Context, ev *api.ToolCallEvent) (api.HookDecision, error) {
			if ev.ToolName == "send_email" {
				// A trusted rewrite: every email goes to the review address.
				return api.HookDecision{Input: json.RawMessage(`{"to":"review@example.com"}`)}, nil
			}
			return api.HookDecision{}, nil
		}},
	})
	defer rt.Close()
	s := rt.Activate(api.RunContext{SessionKey: "s1"}, []*api.Tool{send})

	res := s.Handle(ctx, "c1", "exec", json.RawMessage(`{"code":"const r = await tools.send_email({to: 'ceo@example.com'}); return r.input.to"}`)).Exec
	fmt.Println(res.Status, res.Reason, res.PendingApprovals[0].Tool, res.PendingApprovals[0].Prompt, "sent:", sent)

	p := res.PendingApprovals[0]
	if err := s.Decide(ctx, res.RunID, p.CallID, api.Decision{Approve: true, By: "alice"}); err != nil {
		log.Fatal(err)
	}
	done := s.Wait(ctx, "c2", codemode.WaitInput{RunID: res.RunID})
	fmt.Println(done.Status, string(done.Value), "sent:", sent)
	// Output:
	// waiting approval native:app:send_email Send this email? sent: 0
	// completed "review@example.com" sent: 1
}

// A slow tool makes exec return waiting; wait continues the same run (here, with yield_control,
// the cell asks for it explicitly). Output produced before and after travels with each result.
func ExampleSurface_Wait() {
	ctx := context.Background()
	rt, _ := codemode.New(ctx, codemode.Options{})
	defer rt.Close()
	s := rt.Activate(api.RunContext{SessionKey: "s1"}, nil)

	first := s.Exec(ctx, "c1", codemode.ExecInput{Code: `let n = 20; text("before"); await yield_control("checkpoint"); text("after"); return n + 1`})
	fmt.Println(first.Status, first.Reason, first.Output[0].Text)
	last := s.Wait(ctx, "c2", codemode.WaitInput{RunID: first.RunID})
	fmt.Println(last.Status, string(last.Value), last.Output[0].Text)
	// Output:
	// waiting yield before
	// completed 21 after
}

// A run store shares suspended runs between runtimes: a run one of them suspends, any other
// continues — across processes with Redis (codemode.OpenRunStore and runStore.redis), here
// between two runtimes of one program with the in-memory store.
func ExampleNewMemoryRunStore() {
	ctx := context.Background()
	store := codemode.NewMemoryRunStore(codemode.SuspendedLimits{})
	defer store.Close()
	a, _ := codemode.New(ctx, codemode.Options{RunStore: store})
	defer a.Close()
	b, _ := codemode.New(ctx, codemode.Options{RunStore: store})
	defer b.Close()

	run := api.RunContext{AgentID: "demo", SessionKey: "conversation-1"} // same scope on both
	first := a.Activate(run, nil).Exec(ctx, "c1", codemode.ExecInput{Code: `const t = Date.now(); await yield_control("on a"); return "resumed elsewhere"`})
	fmt.Println("a:", first.Status)
	last := b.Activate(run, nil).Wait(ctx, "c2", codemode.WaitInput{RunID: first.RunID})
	fmt.Println("b:", last.Status, string(last.Value))
	// Output:
	// a: waiting
	// b: completed "resumed elsewhere"
}
