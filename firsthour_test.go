package codemode

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
)

// TypeScript sent as JavaScript fails with the engine's SyntaxError and what to do about it —
// when TypeScript is an enabled language (issue 24). TypeScript's own errors read like
// JavaScript's: "SyntaxError: … (line L:C)".
func TestSyntaxErrorsSayWhatToDo(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, args string
		langs      []string
		want, not  string
	}{
		{"typescript as javascript", `{"code":"const n: number = 1; return n"}`, nil, `SyntaxError: missing initializer for variable (line 1:8); this looks like TypeScript: call exec again with "language": "typescript"`, ""},
		{"javascript only: no hint", `{"code":"const n: number = 1; return n"}`, []string{"javascript"}, "SyntaxError: missing initializer", "TypeScript"},
		{"plain javascript error: no hint", `{"code":"return {a: 1"}`, nil, "SyntaxError:", "TypeScript"},
		{"typescript error", `{"code":"const n: number = ; return n","language":"typescript"}`, nil, `SyntaxError: Unexpected ";" (line 1:19)`, "exec:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t, testConfig(t, func(c *config.Config) {
				if tc.langs != nil {
					c.Tools.CodeMode.Languages = tc.langs
				}
			}))
			s := rt.Activate(api.RunContext{SessionKey: "s"}, nil)
			res := s.Handle(ctx, "c1", "exec", json.RawMessage(tc.args)).Exec
			if res.Status != api.StatusFailed || res.Code != api.CodeInvalidInput || !strings.Contains(res.Error, tc.want) ||
				(tc.not != "" && strings.Contains(res.Error, tc.not)) {
				t.Fatalf("%s %s: %q", res.Status, res.Code, res.Error)
			}
		})
	}
}

// Activate reports what would only fail at call time otherwise: a tool without an Execute
// function and a native tool whose outputSchema is not a valid schema (issue 24). The warning
// names the place in the schema, not the validator's whole metaschema tree.
func TestActivateWarnsAboutBrokenTools(t *testing.T) {
	rt := newRuntime(t, testConfig(t))
	tools := []*api.Tool{
		{Name: "noexec", Description: "no implementation"},
		{Name: "badschema", Description: "broken contract", OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"minimum":"zero"}}}`),
			Execute: func(context.Context, *api.Call) (*api.Result, error) {
				return api.TextResult("", map[string]int{"n": 1})
			}},
	}
	s := rt.Activate(api.RunContext{}, tools)
	w := strings.Join(s.Warnings(), "\n")
	for _, want := range []string{
		"tool native:app:noexec has no Execute function: calls to it fail",
		"tool native:app:badschema cannot be called until its outputSchema is fixed",
		"at /properties/n/minimum: got string, want number",
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	if strings.Contains(w, "metaschema") {
		t.Errorf("the warning dumps the metaschema:\n%s", w)
	}
}
