package config

import (
	pathpkg "path"
	"time"

	"github.com/codemode-go/codemode/api"
)

// tools.approvals says which calls need a person's decision before they run. It applies to
// every call through the one gate — nested calls of cells, namespace calls and the model's
// direct calls. Written either as a list of rules (the shorthand) or as
// {rules: [...], exemptReadOnly: true}; a rule is a pattern string or an object:
//
//	approvals: ["native:core:write", {match: "mcp:*:delete*", prompt: "Delete?", timeoutSeconds: 120, fallback: "deny"}]
//
// It decodes into api.Approvals, the type the runtime takes: timeoutSeconds (1–86400) becomes
// the rule's Timeout; unset, it is the run's snapshotTtlSeconds.

var approvalRuleKeys = []string{"match", "prompt", "timeoutSeconds", "fallback"}

func (d *decoder) approvals(p path, v any, a *api.Approvals) {
	var rules any
	switch x := v.(type) {
	case []any:
		rules = x
	case map[string]any:
		m, _ := d.object(p, v, "rules", "exemptReadOnly")
		d.setBool(p, m, "exemptReadOnly", &a.ExemptReadOnly)
		rules = m["rules"]
		p = p.key("rules")
		if rules == nil {
			return
		}
	default:
		d.errorf(p, "expected a list of rules or an object {rules, exemptReadOnly}, got %s", describe(v))
		return
	}
	list, ok := rules.([]any)
	if !ok {
		d.errorf(p, "expected an array of rules, got %s", describe(rules))
		return
	}
	for i, e := range list {
		ep := p.index(i)
		var r api.ApprovalRule
		switch x := e.(type) {
		case string:
			r.Match = x
		case map[string]any:
			m, _ := d.object(ep, x, approvalRuleKeys...)
			d.setString(ep, m, "match", &r.Match)
			d.setString(ep, m, "prompt", &r.Prompt)
			var secs int
			setInt(d, ep, m, "timeoutSeconds", 1, 86400, &secs)
			r.Timeout = time.Duration(secs) * time.Second
			d.setString(ep, m, "fallback", &r.Fallback)
			if _, ok := m["match"]; !ok {
				d.errorf(ep, "a rule needs `match` (a tool name or catalog id pattern)")
				continue
			}
		default:
			d.errorf(ep, "expected a pattern string or a rule object, got %s", describe(e))
			continue
		}
		if r.Match == "" {
			d.errorf(ep, "the pattern is empty")
			continue
		}
		if _, err := pathpkg.Match(r.Match, ""); err != nil {
			d.errorf(ep, "%q is not a valid pattern (globs are * and ?)", r.Match)
			continue
		}
		if r.Fallback != "" && r.Fallback != api.FallbackDeny && r.Fallback != api.FallbackAllow {
			d.errorf(ep, "fallback must be \"deny\" or \"allow\", not %q", r.Fallback)
			continue
		}
		a.Rules = append(a.Rules, r)
	}
}
