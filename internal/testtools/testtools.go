// Package testtools makes synthetic tool catalogs for benchmarks (`go test -bench` and
// `codemode bench` measure the same thing), and synthetic tools tests share.
package testtools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/codemode-go/codemode/api"
)

// Synthetic returns n read-only native tools spread over 20 plugins, with distinct names,
// descriptions and a small input schema. Each returns {"ok":true} immediately.
func Synthetic(n int) []*api.Tool {
	verbs := []string{"list", "get", "create", "update", "delete", "search", "archive", "export"}
	nouns := []string{"issue", "invoice", "customer", "file", "message", "deployment", "ticket", "report", "page", "user"}
	exec := func(ctx context.Context, c *api.Call) (*api.Result, error) {
		return &api.Result{Details: json.RawMessage(`{"ok":true}`)}, nil
	}
	out := make([]*api.Tool, n)
	for i := range out {
		v, o := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
		out[i] = &api.Tool{
			Name: fmt.Sprintf("%s_%s_%d", v, o, i), Owner: fmt.Sprintf("plugin%d", i%20),
			Description: fmt.Sprintf("%s a %s in system %d. Returns the %s record.", v, o, i, o),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["id"]}`),
			ReadOnly:    true,
			Execute:     exec,
		}
	}
	return out
}

// Blocker is a read-only tool named "block" whose calls block until release is closed (then it
// returns {"released":true}) or the call is cancelled; started receives a value as each call
// begins (buffered 1: a test reads it before starting another).
func Blocker() (tool *api.Tool, started chan struct{}, release chan struct{}) {
	started, release = make(chan struct{}, 1), make(chan struct{})
	tool = &api.Tool{Name: "block", Description: "Blocks until released.", ReadOnly: true,
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return api.TextResult("", map[string]any{"released": true})
		}}
	return tool, started, release
}
