package catalog

import (
	"strconv"
	"strings"
	"unicode"
)

// jsReserved are words that cannot be plain identifiers in strict-mode JavaScript.
var jsReserved = map[string]bool{
	"break": true, "case": true, "catch": true, "class": true, "const": true, "continue": true,
	"debugger": true, "default": true, "delete": true, "do": true, "else": true, "enum": true,
	"export": true, "extends": true, "false": true, "finally": true, "for": true, "function": true,
	"if": true, "implements": true, "import": true, "in": true, "instanceof": true, "interface": true,
	"let": true, "new": true, "null": true, "package": true, "private": true, "protected": true,
	"public": true, "return": true, "static": true, "super": true, "switch": true, "this": true,
	"throw": true, "true": true, "try": true, "typeof": true, "var": true, "void": true,
	"while": true, "with": true, "yield": true, "await": true,
}

// objectMembers are names no tool or server may take on a guest object: Object.prototype's
// members, and the names the engine or ordinary code reads and calls on any object. A tool
// there would be called implicitly — `'x' + MCP.srv` calls valueOf, `String(x)` toString,
// JSON.stringify toJSON, await then — or shadow what code expects of every object (issue 18
// item 7). They get the next free name instead (toString_2), as `then` always has.
var objectMembers = []string{
	"__proto__", "constructor", "prototype", "then", "catch", "finally", "toJSON",
	"toString", "toLocaleString", "valueOf", "hasOwnProperty", "isPrototypeOf",
	"propertyIsEnumerable", "__defineGetter__", "__defineSetter__", "__lookupGetter__",
	"__lookupSetter__",
}

// withObjectMembers returns a set of names plus objectMembers.
func withObjectMembers(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range append(names, objectMembers...) {
		m[n] = true
	}
	return m
}

// Names inside MCP.<server> that belong to the namespace helpers (M2) or to every object.
var mcpReserved = withObjectMembers("$api", "resources", "prompts")

// Names on MCP itself that are not servers.
var mcpRootReserved = withObjectMembers("$search")

// CamelIdent maps a server or tool name to a JavaScript identifier (M4): separators start a new
// word (chrome-devtools → chromeDevtools, create_issue → createIssue), other characters are
// dropped, a leading digit gets a `_` prefix. The mapping is deterministic; collisions are
// resolved by the callers.
func CamelIdent(name string) string {
	var b strings.Builder
	upper := false
	for _, r := range name {
		switch {
		case r == '-' || r == '_' || r == '.' || r == ' ' || r == '/' || r == ':':
			upper = b.Len() > 0
		case r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '$'):
			if b.Len() == 0 && unicode.IsDigit(r) {
				b.WriteByte('_')
			}
			if upper {
				r = unicode.ToUpper(r)
				upper = false
			}
			b.WriteRune(r)
		default:
			upper = b.Len() > 0
		}
	}
	s := b.String()
	if s == "" {
		return "_"
	}
	if jsReserved[s] {
		return s + "_"
	}
	return s
}

// uniqueIdent returns base, or base_2, base_3… — the first not in taken or reserved.
func uniqueIdent(base string, taken, reserved map[string]bool) string {
	if !taken[base] && !reserved[base] {
		return base
	}
	for i := 2; ; i++ {
		n := base + "_" + strconv.Itoa(i)
		if !taken[n] && !reserved[n] {
			return n
		}
	}
}

// assignMCPNames groups MCP entries by server and gives every server and tool a collision-free
// identifier. Order decides: the first server/tool (in catalog order) keeps the plain form.
func (c *Catalog) assignMCPNames() {
	serverIdx := map[string]int{}
	takenServers := map[string]bool{}
	for _, e := range c.mcp {
		i, ok := serverIdx[e.Tool.Owner]
		if !ok {
			js := uniqueIdent(CamelIdent(e.Tool.Owner), takenServers, mcpRootReserved)
			takenServers[js] = true
			i = len(c.servers)
			serverIdx[e.Tool.Owner] = i
			c.servers = append(c.servers, MCPServer{Name: e.Tool.Owner, JS: js})
		}
		c.servers[i].Entries = append(c.servers[i].Entries, e)
		e.JSServer = c.servers[i].JS
	}
	for i := range c.servers {
		taken := map[string]bool{}
		for _, e := range c.servers[i].Entries {
			e.JSName = uniqueIdent(CamelIdent(e.Tool.Name), taken, mcpReserved)
			taken[e.JSName] = true
		}
	}
}
