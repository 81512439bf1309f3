package catalog

import (
	"path"

	"github.com/codemode-go/codemode/api"
)

// Policy is the effective tool policy of a run (A3, A7).
type Policy struct {
	// Allow lists tool names or catalog ids (globs with * and ?). nil allows everything; an empty,
	// non-nil list allows nothing (a run with no tools).
	Allow []string
	// Deny removes matching tools; it wins over Allow.
	Deny []string
	// DisableTools marks a run that intentionally has no tools.
	DisableTools bool
}

// NoTools reports a run that intentionally has no tools: code mode does not activate (A7).
func (p Policy) NoTools() bool { return p.DisableTools || (p.Allow != nil && len(p.Allow) == 0) }

// Permits applies allow/deny to a tool.
func (p Policy) Permits(t *api.Tool) bool {
	if p.NoTools() {
		return false
	}
	id := t.ID()
	if matchAny(p.Deny, t.Name, id) {
		return false
	}
	return p.Allow == nil || matchAny(p.Allow, t.Name, id)
}

func matchAny(patterns []string, name, id string) bool {
	for _, pat := range patterns {
		if Match(pat, name, id) {
			return true
		}
	}
	return false
}

// Match reports whether a policy pattern — a tool name or a catalog id, with '*' and '?' globs
// ("read", "native:core:*", "mcp:*:delete*") — matches a tool.
func Match(pattern, name, id string) bool {
	if pattern == name || pattern == id {
		return true
	}
	if ok, err := path.Match(pattern, name); err == nil && ok {
		return true
	}
	ok, err := path.Match(pattern, id)
	return err == nil && ok
}
