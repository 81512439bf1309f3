package catalog

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/codemode-go/codemode/internal/jsname"
	"github.com/codemode-go/codemode/internal/suggest"
)

// Messages for names a cell reaches for that do not exist: `tools.<name>`, `MCP.<server>`,
// `MCP.<server>.<tool>` and catalog ids. A model corrects itself from the message alone, so each
// says what does not exist, the nearest names that do (by edit distance, ignoring case and
// separators, so `get_sum` finds `getSum`; then by the search index, so `add` finds a tool that
// adds), and how to look further. Names come from the catalog, never from descriptions, and the
// message is bounded whatever the cell asked for.

const (
	maxSuggestions = 3
	maxNameInMsg   = 80
	maxGuess       = 128 // longer guesses are not compared: no name is that long
	maxListed      = 12  // servers listed when there is no close match
)

// candidate is one name a guess may be compared with (keys) and how to show it.
type candidate struct {
	keys []string
	show string
}

// nearest returns up to n of the candidates' shows whose keys are close to got.
func nearest(got string, cands []candidate, n int) []string {
	if len(got) > maxGuess {
		return nil // bounded work whatever the cell asked for (this runs on the VM goroutine)
	}
	g := fold(got)
	if g == "" {
		return nil
	}
	type hit struct {
		show string
		dist int
	}
	best := map[string]int{}
	for _, c := range cands {
		for _, k := range c.keys {
			f := fold(k)
			if f == "" {
				continue
			}
			tol := suggest.Tolerance(len(f))
			d := len(g) + len(f) // not computed: the lengths alone are too far apart
			if abs(len(g)-len(f)) <= tol {
				d = suggest.Distance(g, f)
			}
			ok := d <= tol
			if len(g) >= 4 && (strings.HasPrefix(f, g) || strings.Contains(f, g)) || len(f) >= 4 && strings.Contains(g, f) {
				ok = true
			}
			if !ok {
				continue
			}
			if old, seen := best[c.show]; !seen || d < old {
				best[c.show] = d
			}
		}
	}
	hits := make([]hit, 0, len(best))
	for s, d := range best {
		hits = append(hits, hit{s, d})
	}
	sort.Slice(hits, func(i, j int) bool {
		return hits[i].dist < hits[j].dist || hits[i].dist == hits[j].dist && hits[i].show < hits[j].show
	})
	out := make([]string, 0, n)
	for _, h := range hits {
		if len(out) == n || len(out) > 0 && hits[0].dist == 0 && h.dist > 0 {
			break // the same name spelled differently (get_sum → getSum) is the answer
		}
		out = append(out, h.show)
	}
	return out
}

func abs(n int) int { return max(n, -n) }

// sameTool reports whether a guess names e (get_sum for get-sum or getSum); folded is
// foldGuess(guess).
func sameTool(e *Entry, folded, guess string) bool {
	return folded != "" && fold(e.Tool.Name) == folded || e.JSName == guess
}

// foldGuess folds a guess once, or returns "" for one too long to be any tool's name.
func foldGuess(guess string) string {
	if len(guess) > maxGuess {
		return ""
	}
	return fold(guess)
}

// fold ignores case and the separators that name mappings change (create_issue ↔ createIssue).
func fold(s string) string { return suggest.Fold(s, "_-. $/") }

// quote shows a name the cell made up, bounded.
func quote(s string) string {
	if len(s) > maxNameInMsg {
		s = s[:maxNameInMsg] + "…"
	}
	return strconv.Quote(s)
}

// member shows obj.name, or obj["name"] when name is not an identifier.
func member(obj, name string) string { return obj + jsname.Property(name, maxNameInMsg) }

func didYouMean(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return "; did you mean " + names[0] + "?"
	}
	return "; did you mean " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1] + "?"
}

// guestCall is how a cell calls a guest entry: its convenience function, or callValue by id.
func guestCall(e *Entry) string {
	if e.SafeName != "" {
		return "tools." + e.SafeName
	}
	return "tools.callValue(" + strconv.Quote(e.ID) + ", …)"
}

func mcpCall(e *Entry) string { return "MCP." + e.JSServer + "." + e.JSName }

// guestCandidates are the guest entries by safe name, tool name and id.
func (c *Catalog) guestCandidates(show func(*Entry) string) []candidate {
	out := make([]candidate, 0, len(c.guest))
	for _, e := range c.guest {
		out = append(out, candidate{keys: []string{e.SafeName, e.Tool.Name, e.ID}, show: show(e)})
	}
	return out
}

// searchFound falls back to the search index: tools that share no spelling with the guess but
// match it as a query (`add` → a tool described as adding numbers). It is worded as what a search
// finds, not as a correction.
func searchFound(query string, entries []*Entry, show func(*Entry) string) string {
	var out []string
	for _, e := range entries {
		out = append(out, show(e))
		if len(out) == maxSuggestions {
			break
		}
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprintf("; searching for %s finds %s", quote(query), strings.Join(out, ", "))
}

// suggestion is "; did you mean …?" for close names, else what a search finds.
func suggestion(close []string, search func() string) string {
	if len(close) > 0 {
		return didYouMean(close)
	}
	return search()
}

// UnknownGuestName explains `tools.<name>` for a name with no convenience function (G3).
func (c *Catalog) UnknownGuestName(name string) string {
	what := member("tools", name)
	folded := foldGuess(name)
	// An MCP tool: reachable through its namespace only (K4).
	for _, e := range c.mcp {
		if sameTool(e, folded, name) {
			return fmt.Sprintf("%s is not a function: %s is a tool of the MCP server %s; call %s({...})", what, quote(e.Tool.Name), quote(e.Tool.Owner), mcpCall(e))
		}
	}
	if name == "exec" || name == "wait" || ControlTools[name] {
		return fmt.Sprintf("%s is not a function: %s is a code-mode control tool and cannot be called from a cell", what, quote(name))
	}
	// Two tools normalise to the same safe name: neither has one (G3).
	var same []string
	for _, e := range c.guest {
		if safeName(e.Tool.Name) == name {
			same = append(same, strconv.Quote(e.ID))
		}
	}
	if len(same) > 1 {
		return fmt.Sprintf("%s is not a function: %d tools share that name (%s); call tools.callValue(id, input) with one of those ids", what, len(same), strings.Join(same, ", "))
	}
	if len(same) == 1 {
		return fmt.Sprintf("%s is not a function: that tool has no convenience name; call tools.callValue(%s, input)", what, same[0])
	}
	hint := suggestion(nearest(name, c.guestCandidates(guestCall), maxSuggestions), func() string {
		return searchFound(name, c.Search(name, maxSuggestions), guestCall)
	})
	return fmt.Sprintf("%s is not a function: no tool of this run has that name%s (tools.search(query) finds tools by what they do; `%s in tools` tests for a name)", what, hint, quote(name))
}

// UnknownServer explains `MCP.<name>` for a name that is no visible server (M2).
func (c *Catalog) UnknownServer(name string) string {
	what := member("MCP", name)
	folded := foldGuess(name)
	if len(c.servers) == 0 {
		return fmt.Sprintf("%s is undefined: no MCP server is connected in this run", what)
	}
	cands := make([]candidate, 0, len(c.servers))
	for _, s := range c.servers {
		cands = append(cands, candidate{keys: []string{s.JS, s.Name}, show: "MCP." + s.JS})
	}
	sugg := nearest(name, cands, maxSuggestions)
	// A tool name used as a server (MCP.getSum(...)): point at its server.
	if len(sugg) == 0 {
		for _, e := range c.mcp {
			if sameTool(e, folded, name) {
				sugg = append(sugg, mcpCall(e))
				if len(sugg) == maxSuggestions {
					break
				}
			}
		}
	}
	if len(sugg) > 0 {
		return fmt.Sprintf("%s is undefined: there is no MCP server of that name%s", what, didYouMean(sugg))
	}
	names := make([]string, 0, maxListed)
	for i, s := range c.servers {
		if i == maxListed {
			names = append(names, "…")
			break
		}
		names = append(names, "MCP."+s.JS)
	}
	return fmt.Sprintf("%s is undefined: there is no MCP server of that name; the servers are %s", what, strings.Join(names, ", "))
}

// UnknownMCPTool explains `MCP.<server>.<name>` for a name that is no tool of that server.
func (c *Catalog) UnknownMCPTool(server, name string) string {
	var srv *MCPServer
	for i := range c.servers {
		if c.servers[i].Name == server {
			srv = &c.servers[i]
		}
	}
	if srv == nil {
		return c.UnknownServer(server)
	}
	what := member("MCP."+srv.JS, name)
	folded := foldGuess(name)
	cands := make([]candidate, 0, len(srv.Entries))
	for _, e := range srv.Entries {
		cands = append(cands, candidate{keys: []string{e.JSName, e.Tool.Name}, show: mcpCall(e)})
	}
	sugg := nearest(name, cands, maxSuggestions)
	if len(sugg) == 0 {
		// The same tool on another server.
		for _, e := range c.mcp {
			if e.Tool.Owner != server && sameTool(e, folded, name) {
				sugg = append(sugg, mcpCall(e))
				if len(sugg) == maxSuggestions {
					break
				}
			}
		}
	}
	hint := suggestion(sugg, func() string {
		return searchFound(name, c.SearchMCP(name, maxSuggestions, server), mcpCall)
	})
	return fmt.Sprintf("%s is not a function: the MCP server %s has no tool of that name%s (MCP.$search(query, {server: %s}) and API.read(%s) list its tools)",
		what, quote(server), hint, strconv.Quote(server), strconv.Quote("mcp/"+server+".d.ts"))
}

// UnknownID explains a catalog id that is not in the catalog (tools.callValue, call, describe).
// The tool-name part of the guess is what is compared (`native:core:reed` → `native:core:read`,
// a bare `read` too): the source and owner prefix would make every id look alike.
func (c *Catalog) UnknownID(id string) string {
	name := id[strings.LastIndexByte(id, ':')+1:]
	folded := foldGuess(name)
	show := func(e *Entry) string { return strconv.Quote(e.ID) }
	cands := make([]candidate, 0, len(c.guest))
	for _, e := range c.guest {
		cands = append(cands, candidate{keys: []string{e.Tool.Name, e.SafeName}, show: show(e)})
	}
	sugg := nearest(name, cands, maxSuggestions)
	// An MCP id or name: reachable through its namespace only (K4).
	for _, e := range c.mcp {
		if len(sugg) == maxSuggestions {
			break
		}
		if sameTool(e, folded, name) {
			sugg = append(sugg, mcpCall(e)+"({...})")
		}
	}
	hint := suggestion(sugg, func() string { return searchFound(id, c.Search(id, maxSuggestions), show) })
	return fmt.Sprintf("unknown tool id %s%s (ids look like \"native:core:read\"; use an exact id from ALL_TOOLS or tools.search(...))", quote(id), hint)
}
