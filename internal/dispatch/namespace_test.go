package dispatch

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/catalog"
	"github.com/codemode-go/codemode/internal/namespace"
	"github.com/codemode-go/codemode/internal/sandbox"
)

func TestForgedNamespaceCalls(t *testing.T) { // N5: forged namespace ids and callables are refused
	ran := 0
	tool := &api.Tool{Name: "list", Owner: "p", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		ran++
		return api.TextResult("", map[string]bool{"ok": true})
	}}
	other := &api.Tool{Name: "drop_all", Owner: "p", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		ran += 100
		return api.TextResult("", nil)
	}}
	cat := catalog.Build([]*api.Tool{tool, other})
	d := &Dispatcher{Catalog: cat, Gate: &Gate{}, Counters: &Counters{},
		Namespaces: map[string]*namespace.Scope{"ns": {ID: "ns", GlobalName: "P", PluginID: "p",
			Calls: []namespace.Callable{{Path: []string{"list"}, Tool: "list"}}}}}
	call := func(payload string) error {
		_, err := d.Async(context.Background(), &sandbox.Call{ID: "c/1", Op: "ns.call", Payload: []byte(payload)})
		return err
	}
	for name, payload := range map[string]string{
		"unknown namespace":  `{"ns":"nope","call":0,"args":[]}`,
		"index out of range": `{"ns":"ns","call":1,"args":[]}`,
		"negative index":     `{"ns":"ns","call":-1,"args":[]}`,
		"tool name instead":  `{"ns":"ns","call":0,"tool":"drop_all","args":[]}`,
		"malformed":          `{"ns":`,
	} {
		err := call(payload)
		if name == "tool name instead" {
			// Extra fields are ignored: the callable decides the tool, never the payload.
			if err != nil || ran != 1 {
				t.Fatalf("%s: %v (ran %d)", name, err, ran)
			}
			continue
		}
		var te *api.ToolError
		if err == nil || !errors.As(err, &te) {
			t.Fatalf("%s: %v", name, err)
		}
		if name != "malformed" && !strings.Contains(te.Message, "namespace") {
			t.Fatalf("%s: %v", name, te.Message)
		}
	}
	if ran != 1 {
		t.Fatalf("ran %d", ran)
	}
}
