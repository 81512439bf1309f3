// Package catalog builds a run's tool catalog (K1–K5): policy filtering, catalog ids, the compact
// entries cells see in ALL_TOOLS, safe convenience names, compiled output contracts, the search
// indexes and the quick index of the exec description. A Catalog is immutable and may be shared
// by every run whose effective tool set is the same (Cache).
package catalog

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/contract"
	"github.com/codemode-go/codemode/internal/schemahint"
	"github.com/codemode-go/codemode/internal/search"
)

// ControlTools are never catalogued (K3, A8, S9): code mode's own wait, and the tool-search
// control tools. A tool named `exec` in the effective list is the shell tool (A11) and IS
// catalogued; code mode's own exec is added to the model surface, never to the list.
var ControlTools = map[string]bool{
	"wait": true, "tool_search_code": true, "tool_search": true, "tool_describe": true, "tool_call": true,
}

// Helpers and object members a convenience name may never shadow (G3, S10; names.go).
var reservedSafeNames = withObjectMembers("search", "describe", "call", "callValue")

// Bounds on what one entry may put in front of a cell or the model.
const (
	hintLen        = 240    // compact input/output hints
	entryDescLen   = 400    // description in ALL_TOOLS / search results
	describeDescLn = 8000   // description in tools.describe
	maxSchemaBytes = 256000 // a larger input schema is "unknown" (still sent raw by describe, bounded)
)

// Entry is one catalogued tool.
type Entry struct {
	Tool *api.Tool
	ID   string
	// Input and Output are the compact hints; Output is "" unless the tool is native and its
	// declared output schema renders completely (G1, O3).
	Input  string
	Output string
	// SafeName is the tools.<name> convenience (guest-visible entries only), or "".
	SafeName string
	// JSServer/JSName are the MCP namespace identifiers (MCP entries only, M4).
	JSServer, JSName string
	contract         *contract.Schema
	contractErr      error
	mcpHintOnce      sync.Once
	mcpHint          string
	inputOnce        sync.Once
	input            *contract.Schema
	inputReady       atomic.Bool
}

// InputSchema is the compiled input schema a nested call's input is checked against before the
// tool runs, or nil when the tool has none that can be used (missing, too large or deep, invalid,
// referring outside itself): then the input is not validated — an untrusted MCP or client schema
// never makes a tool unusable. Compiled on first use: most tools of a large catalog are never
// called.
func (e *Entry) InputSchema() *contract.Schema {
	e.inputOnce.Do(func() {
		e.input = contract.CompileInput(e.ID, e.Tool.InputSchema)
		e.inputReady.Store(true)
	})
	return e.input
}

// CompiledInputSchema is InputSchema when it is already compiled; ok is false before the first
// InputSchema call finished. It never compiles: a caller on a latency-sensitive goroutine (the
// VM's) leaves the first, possibly slow, compilation to another.
func (e *Entry) CompiledInputSchema() (s *contract.Schema, ok bool) {
	if !e.inputReady.Load() {
		return nil, false
	}
	return e.input, true
}

// Guest reports whether the entry is visible through ALL_TOOLS and tools.* (MCP entries are not, K4).
func (e *Entry) Guest() bool { return e.Tool.Source != api.SourceMCP }

// ContractError is non-nil when the tool declared an invalid output schema: it cannot run (O4).
func (e *Entry) ContractError() error { return e.contractErr }

// Contract is the compiled output schema, or nil.
func (e *Entry) Contract() *contract.Schema { return e.contract }

// Catalog is a run catalog.
type Catalog struct {
	Entries []*Entry // K1 order
	// DirectOnly are the tools that stay visible to the model (never catalogued).
	DirectOnly []*api.Tool
	byID       map[string]*Entry
	guest      []*Entry
	mcp        []*Entry
	guestIndex *search.Index
	mcpIndex   *search.Index
	servers    []MCPServer
	quickIndex string
	warnings   []string
	files      apiFiles
	dense      *dense // optional dense retrieval (EnableDense)
}

// MCPServer groups the MCP entries of one server.
type MCPServer struct {
	Name    string
	JS      string
	Entries []*Entry
}

// Build creates a catalog from a run's effective tools, already filtered by the run's policy
// (A2–A6, K1–K3). It orders them by source (core, plugins, MCP, client) and keeps the given order
// within each source.
func Build(tools []*api.Tool) *Catalog {
	c := &Catalog{byID: map[string]*Entry{}}
	rank := func(t *api.Tool) int {
		switch {
		case t.Source == api.SourceMCP:
			return 2
		case t.Source == api.SourceClient:
			return 3
		case t.Owner == "" || t.Owner == api.CoreOwner || t.Owner == api.AppOwner:
			return 0 // the runtime's and the embedding program's own tools
		default:
			return 1
		}
	}
	ordered := make([]*api.Tool, 0, len(tools))
	for _, t := range tools {
		if t != nil && t.Name != "" {
			ordered = append(ordered, t)
		}
	}
	sort.SliceStable(ordered, func(i, j int) bool { return rank(ordered[i]) < rank(ordered[j]) })
	for _, t := range ordered {
		if ControlTools[t.Name] {
			c.warnings = append(c.warnings, fmt.Sprintf("tool %s is not catalogued: %q is the name of a code-mode control tool", t.ID(), t.Name))
			continue
		}
		if t.DirectOnly {
			c.DirectOnly = append(c.DirectOnly, t)
			continue
		}
		id := t.ID()
		if _, dup := c.byID[id]; dup {
			c.warnings = append(c.warnings, fmt.Sprintf("duplicate tool id %s: later definition ignored", id))
			continue
		}
		e := &Entry{Tool: t, ID: id}
		if t.Source == api.SourceMCP || t.Source == api.SourceClient {
			e.Input = "unknown" // untrusted schemas stay deferred until describe (G1)
		} else {
			e.Input = inputHint(t.InputSchema)
			e.Output, e.contract, e.contractErr = outputContract(id, t.OutputSchema)
			if e.contractErr != nil {
				// O4: the tool cannot run; say so when the tool set is activated, not at its
				// first call.
				c.warnings = append(c.warnings, fmt.Sprintf("tool %s cannot be called until its outputSchema is fixed: %v", id, e.contractErr))
			}
		}
		c.Entries = append(c.Entries, e)
		c.byID[id] = e
		if e.Guest() {
			c.guest = append(c.guest, e)
		} else {
			c.mcp = append(c.mcp, e)
		}
	}
	c.assignSafeNames()
	c.assignMCPNames()
	c.guestIndex = search.NewIndex(docs(c.guest))
	c.mcpIndex = search.NewIndexWith(docs(c.mcp), search.Options{Servers: servers(c.mcp)})
	c.quickIndex = renderQuickIndex(c)
	return c
}

// docs builds the search documents. MCP parameter names and descriptions feed ranking only; they
// are never shown from here (results are rendered from the entries).
func docs(entries []*Entry) []search.Doc {
	out := make([]search.Doc, len(entries))
	for i, e := range entries {
		names, pdocs := paramInfo(e.Tool.InputSchema)
		out[i] = search.Doc{
			ID: e.ID, Name: e.Tool.Name, Title: e.Tool.Label, Description: e.Tool.Description,
			Params: names, ParamDocs: pdocs, Group: e.Tool.Owner,
		}
	}
	return out
}

// servers collects the MCP servers' self-descriptions (issue 23: server-level search evidence).
func servers(entries []*Entry) []search.Server {
	var out []search.Server
	seen := map[string]bool{}
	for _, e := range entries {
		si := e.Tool.Server
		if si == nil || seen[e.Tool.Owner] {
			continue
		}
		seen[e.Tool.Owner] = true
		out = append(out, search.Server{Group: e.Tool.Owner, Name: si.Name, Title: si.Title, Description: si.Description, Instructions: si.Instructions})
	}
	return out
}

// paramInfo is the parameter names and descriptions of an input schema (issue 23 round 2: the
// descriptions are ranking evidence too).
func paramInfo(raw []byte) (names, descriptions []string) {
	if len(raw) > maxSchemaBytes {
		return nil, nil
	}
	return search.SchemaParams(raw)
}

func inputHint(raw []byte) string {
	if len(raw) == 0 {
		return "{}"
	}
	if len(raw) > maxSchemaBytes {
		return "unknown"
	}
	s, err := schemahint.Parse(raw)
	if err != nil {
		return "unknown"
	}
	return schemahint.InputHint(s, hintLen)
}

func outputContract(id string, raw []byte) (string, *contract.Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "", nil, nil
	}
	sch, err := contract.Compile(id, raw)
	if err != nil {
		return "", nil, err
	}
	hint := ""
	if s, err := schemahint.Parse(raw); err == nil {
		if h, ok := schemahint.OutputHint(s, hintLen); ok {
			hint = h
		}
	}
	return hint, sch, nil
}

// safeName normalises a tool name to a JS identifier, or "" if it has no usable form.
func safeName(name string) string {
	var b strings.Builder
	for i, r := range name {
		switch {
		case r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" || strings.Trim(s, "_") == "" || jsReserved[s] {
		return ""
	}
	return s
}

// assignSafeNames installs tools.<name> only for unambiguous names (G3): if two guest tools
// normalise to the same name, neither gets it.
func (c *Catalog) assignSafeNames() {
	count := map[string]int{}
	for _, e := range c.guest {
		if n := safeName(e.Tool.Name); n != "" {
			count[n]++
		}
	}
	for _, e := range c.guest {
		n := safeName(e.Tool.Name)
		if n != "" && count[n] == 1 && !reservedSafeNames[n] {
			e.SafeName = n
		}
	}
}

// Lookup finds an entry by exact catalog id. Denied and control tools are not in the catalog,
// so a guessed id finds nothing (K3).
func (c *Catalog) Lookup(id string) *Entry { return c.byID[id] }

// Guest returns the entries of ALL_TOOLS and tools.* (no MCP entries, K4).
func (c *Catalog) Guest() []*Entry { return c.guest }

// MCP returns the MCP entries.
func (c *Catalog) MCP() []*Entry { return c.mcp }

// Servers returns the MCP servers with visible tools, in catalog order.
func (c *Catalog) Servers() []MCPServer { return c.servers }

// Warnings lists problems found while building (duplicates, invalid contracts).
func (c *Catalog) Warnings() []string { return c.warnings }

// QuickIndex is the bounded index appended to the exec description (Q1).
func (c *Catalog) QuickIndex() string { return c.quickIndex }

// Counts returns the catalog size by source (Y1).
func (c *Catalog) Counts() api.SourceCounts {
	var s api.SourceCounts
	for _, e := range c.Entries {
		switch e.Tool.Source {
		case api.SourceMCP:
			s.MCP++
		case api.SourceClient:
			s.Client++
		default:
			s.Native++
		}
	}
	return s
}

// Search ranks guest entries (K5).
func (c *Catalog) Search(query string, limit int) []*Entry {
	hits := c.guestIndex.Search(query, limit)
	out := make([]*Entry, len(hits))
	for i, h := range hits {
		out[i] = c.guest[h.Doc]
	}
	return out
}

// Hit is one search result with its explanation (issue 23 item 5).
type Hit struct {
	Entry *Entry
	// Why says in a few words why it ranked: the query words it matched (word≈term when through
	// a synonym) and whether its server matched the query.
	Why string
}

// SearchHits is Search with explanations, optionally restricted to one owner (the plugin or
// server id: "core", "git", an MCP server's name).
func (c *Catalog) SearchHits(query string, limit int, server string) []Hit {
	var keep func(int) bool
	if server != "" {
		keep = func(i int) bool {
			o := c.guest[i].Tool.Owner
			if o == "" {
				o = api.CoreOwner
			}
			return o == server
		}
	}
	return c.searchHits(query, limit, c.guestIndex, c.guest, keep, false)
}

func (c *Catalog) searchHits(query string, limit int, ix *search.Index, entries []*Entry, keep func(int) bool, mcp bool) []Hit {
	if c.dense == nil {
		return hitsOf(ix.SearchFilter(query, limit, keep), entries)
	}
	vecs := &c.dense.guest
	if mcp {
		vecs = &c.dense.mcp
	}
	return c.fuse(query, limit, ix.SearchFilter(query, max(limit, fusionDepth), keep), entries, vecs, keep)
}

// SearchMCPHits is SearchMCP with explanations.
func (c *Catalog) SearchMCPHits(query string, limit int, server string) []Hit {
	return c.searchHits(query, limit, c.mcpIndex, c.mcp, c.mcpKeep(server), true)
}

func hitsOf(hits []search.Hit, entries []*Entry) []Hit {
	out := make([]Hit, len(hits))
	for i, h := range hits {
		e := entries[h.Doc]
		out[i] = Hit{Entry: e, Why: h.Why(e.Tool.Owner)}
	}
	return out
}

func (c *Catalog) mcpKeep(server string) func(int) bool {
	if server == "" {
		return nil
	}
	return func(i int) bool {
		e := c.mcp[i]
		return e.Tool.Owner == server || e.JSServer == server
	}
}

// SearchMCP ranks MCP entries, optionally of one server (by server name or JS name).
func (c *Catalog) SearchMCP(query string, limit int, server string) []*Entry {
	var keep func(int) bool
	if server != "" {
		keep = func(i int) bool {
			e := c.mcp[i]
			return e.Tool.Owner == server || e.JSServer == server
		}
	}
	hits := c.mcpIndex.SearchFilter(query, limit, keep)
	out := make([]*Entry, len(hits))
	for i, h := range hits {
		out[i] = c.mcp[h.Doc]
	}
	return out
}
