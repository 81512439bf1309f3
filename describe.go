package codemode

import (
	"strings"
	"unicode/utf8"

	"github.com/codemode-go/codemode/internal/catalog"
	"github.com/codemode-go/codemode/internal/namespace"
)

// execDescription is the model-visible description of exec: how to write a cell, the guest API,
// the `-> ?` rule (Q2), whether MCP servers and their virtual declaration files exist (Q4, M3),
// and the quick index of trusted tools (Q1). It contains no tool descriptions.
func execDescription(cat *catalog.Catalog, languages []string, namespaces []*namespace.Entry, swarmPrompt string) string {
	var b strings.Builder
	b.WriteString("Run a short ")
	names := make([]string, len(languages))
	for i, l := range languages {
		names[i] = map[string]string{"javascript": "JavaScript", "typescript": "TypeScript"}[l]
	}
	b.WriteString(strings.Join(names, " or "))
	b.WriteString(` program in a sandbox to use the tool catalog: search it, call tools (in parallel with Promise.all), loop, join and filter, then return only what you need. The code is the body of an async function: use await and return a JSON-compatible value. There is no import/require, filesystem, network or environment: everything goes through these globals.
- tools.search(query, {limit?, server?}) → [{id, name, server, description, input, output?, why}]; tools.describe(id) → the same plus full JSON schemas; ALL_TOOLS lists every entry.
- tools.callValue(id, input) → the tool's JSON value; tools.call(id, input) → the raw {tool, result}; tools.<name>(input) is a shorthand where shown below. A failed call throws a catchable Error with .code.
- text(value), json(value) and console.log(...) add to the result's output (text and json fail when it is full; console lines past its cap are dropped with one marker); yield_control(reason) suspends the run and returns "waiting".
- results.save(value) keeps a value for later execs of this run and returns {id, bytes, shape, preview}; results.load(id) gives it back whole. A return value too large for the result arrives as {truncated: true, reference: {id, …}}: load it in a later exec and return only what you need.
- If the result is "waiting" (slow tools are still running), call wait with its runId. Calls and timers a cell starts without awaiting them still finish before the result.
- A name that does not exist on tools or MCP reads as undefined (test with typeof tools.x or "x" in MCP); calling one fails with the nearest names.
Output hints: "-> T" is the declared shape of what tools.callValue returns. "-> ?" means unknown: return the raw value first, look at it, and filter or transform it in a later exec instead of guessing field names (also when a declared value feeds a "-> ?" call).
`)
	if servers := cat.Servers(); len(servers) > 0 {
		b.WriteString(`MCP servers are connected: MCP.$search(query, {limit?, server?}) → [{server, tool, call, description, input, why}], then call a tool as MCP.<server>.<tool>({...}) with one object argument (it returns {content, structuredContent?, isError?}). Typed declarations are virtual files: await API.list("mcp") and await API.read("mcp/<server>.d.ts"); MCP.<server>.$api(toolName?) returns one tool's declaration inline. MCP tools are not in ALL_TOOLS or tools.*. Servers: `)
		for i, s := range servers {
			if i > 0 {
				b.WriteString(", ")
			}
			if i == 40 {
				b.WriteString("… (API.list(\"mcp\") has them all)")
				break
			}
			b.WriteString("MCP." + s.JS)
		}
		b.WriteString(".\n")
	}
	if len(namespaces) > 0 {
		// Q4: a visible namespace's description and prompt, and only a visible one's.
		b.WriteString("Namespaces (domain APIs of plugins, also under namespaces.<Name>; typed declarations: await API.read(\"namespaces/<Name>.d.ts\")):\n")
		for _, e := range namespaces {
			b.WriteString("- " + e.NS.GlobalName + ": " + clipLine(e.NS.Description, 600))
			if p := clipLine(e.NS.Prompt, 1200); p != "" {
				b.WriteString(" " + p)
			}
			b.WriteString("\n")
		}
	}
	// Child agents (agents.run, phase, log): only where this run may start them.
	b.WriteString(swarmPrompt)
	if qi := cat.QuickIndex(); qi != "" {
		b.WriteString("Tools (call → input -> output):\n")
		b.WriteString(qi)
	} else if len(cat.Guest()) == 0 && len(cat.Servers()) == 0 {
		b.WriteString("The catalog is empty in this run.\n")
	}
	return b.String()
}

// clipLine keeps plugin prose to one bounded line.
func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
