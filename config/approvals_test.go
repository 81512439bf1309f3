package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
)

func TestApprovals(t *testing.T) { // issue 11: tools.approvals
	cases := []struct {
		name, src string
		want      api.Approvals
		err       string
	}{
		{"shorthand list", `{tools: {approvals: ["native:core:write", "mcp:github:*"]}}`,
			api.Approvals{Rules: []api.ApprovalRule{{Match: "native:core:write"}, {Match: "mcp:github:*"}}}, ""},
		{"object form", `{tools: {approvals: {exemptReadOnly: true, rules: [{match: "mcp:*:delete*", prompt: "Delete?", timeoutSeconds: 120, fallback: "allow"}]}}}`,
			api.Approvals{ExemptReadOnly: true, Rules: []api.ApprovalRule{{Match: "mcp:*:delete*", Prompt: "Delete?", Timeout: 120 * time.Second, Fallback: "allow"}}}, ""},
		{"absent", `{}`, api.Approvals{}, ""},
		{"bad pattern", `{tools: {approvals: ["["]}}`, api.Approvals{}, `tools.approvals[0]: "[" is not a valid pattern`},
		{"empty pattern", `{tools: {approvals: [""]}}`, api.Approvals{}, "tools.approvals[0]: the pattern is empty"},
		{"bad fallback", `{tools: {approvals: [{match: "x", fallback: "maybe"}]}}`, api.Approvals{}, `fallback must be "deny" or "allow"`},
		{"no match", `{tools: {approvals: [{prompt: "x"}]}}`, api.Approvals{}, "a rule needs `match`"},
		{"typo", `{tools: {approvals: [{mach: "x"}]}}`, api.Approvals{}, `tools.approvals[0].mach: unknown key (did you mean "match"?)`},
		{"timeout range", `{tools: {approvals: [{match: "x", timeoutSeconds: 0}]}}`, api.Approvals{}, "out of range (1–86400)"},
		{"wrong type", `{tools: {approvals: 3}}`, api.Approvals{}, "expected a list of rules or an object"},
		{"rules not a list", `{tools: {approvals: {rules: "x"}}}`, api.Approvals{}, "tools.approvals.rules: expected an array of rules"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.err != "" {
				if got := parseErr(t, c.src); !strings.Contains(got, c.err) {
					t.Fatalf("got %q, want %q", got, c.err)
				}
				return
			}
			cfg := mustParse(t, c.src)
			if !reflect.DeepEqual(cfg.Tools.Approvals, c.want) {
				t.Fatalf("got %+v, want %+v", cfg.Tools.Approvals, c.want)
			}
		})
	}
}
