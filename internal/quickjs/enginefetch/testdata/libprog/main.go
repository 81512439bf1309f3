// Command libprog is what a user of the library writes after `go get github.com/codemode-go/codemode`
// with no QuickJS module anywhere: TestEndToEndWithoutEngine builds it against a copy of the
// module and runs it. Keep it to the public API; update it when that API changes.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
)

func main() {
	ctx := context.Background()
	rt, err := codemode.New(ctx, codemode.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "New:", err)
		os.Exit(1)
	}
	defer rt.Close()
	add := &api.Tool{
		Name:        "add",
		Description: "Add two numbers.",
		ReadOnly:    true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			var in struct{ A, B float64 }
			if err := json.Unmarshal(c.Input, &in); err != nil {
				return nil, err
			}
			return api.TextResult("", map[string]float64{"sum": in.A + in.B})
		},
	}
	s := rt.Activate(api.RunContext{SessionKey: "libprog"}, []*api.Tool{add})
	r := s.Handle(ctx, "call_1", "exec", json.RawMessage(`{"code":"const [t] = await tools.search(\"add numbers\"); return (await tools.callValue(t.id, {a: 40, b: 2})).sum"}`))
	res := r.Exec
	out, _ := json.Marshal(map[string]any{"status": res.Status, "value": res.Value, "error": res.Error, "code": res.Code})
	fmt.Println(string(out))
	if res.Status != api.StatusCompleted {
		os.Exit(1)
	}
}
