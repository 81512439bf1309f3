package codemode

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/catalog"
	"github.com/codemode-go/codemode/internal/dispatch"
	"github.com/codemode-go/codemode/internal/namespace"
	"github.com/codemode-go/codemode/internal/swarm"
)

// ModelTool is a tool definition as the model receives it.
type ModelTool struct {
	// Name is the name the model calls the tool by: "exec", "wait", or a direct tool's name.
	Name string `json:"name"`
	// Title is an optional human-readable title.
	Title string `json:"title,omitempty"`
	// Description is what the model reads about the tool; exec's carries the instructions for
	// writing cells and the catalog's quick index.
	Description string `json:"description"`
	// InputSchema is the JSON Schema of the tool's arguments, as the provider's tool
	// definition takes it.
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema describes the tool's structured result (its details / structuredContent).
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations are MCP tool annotations (readOnlyHint, destructiveHint, …) as JSON.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Wire is an upstream MCP server's own definition of the tool, for exact passthrough
	// (see api.Tool.Wire); nil for other tools.
	Wire json.RawMessage `json:"-"`
	// ID is the tool's catalog id (source:owner:name); "" for exec and wait.
	ID string `json:"-"`
}

// Surface is one run's model-facing tool surface and the handle that executes the model's calls
// for that run: exec and wait when code mode is active, the direct tools otherwise. It is
// immutable and safe for concurrent use; ForRun derives the same surface for another run.
type Surface struct {
	rt     *Runtime
	active bool
	tools  []ModelTool
	// direct is the set of model-visible tools other than exec and wait: what the fail-closed
	// payload check accepts beside them (A10).
	direct   map[string]bool
	warnings []string

	run    api.RunContext
	cached *cachedCatalog
	// namespaces are the plugin namespaces visible in this run (N2).
	namespaces []*namespace.Entry
	// byID and byName resolve this run's own tool implementations: the cached catalog is shared
	// between runs with identical definitions, but execution always uses the run's tools (A9).
	byID   map[string]*api.Tool
	byName map[string]*api.Tool
	// eff are the run's effective tools in order (what a child's tools are taken from).
	eff []*api.Tool
	// child is set on a child agent's surface (agents.run): its depth, its parent call.
	child *childInfo
	// gate replaces the runtime's for this surface's calls (WithApprovals); nil: the runtime's.
	gate *dispatch.Gate
}

// Active reports whether code mode replaced the run's tool list with exec, wait and the
// direct-only tools (A5–A6). It is false when code mode is disabled (A4) and for runs that
// intentionally have no tools (A7).
func (s *Surface) Active() bool { return s.active }

// Tools returns what the model sees, in order: exec, wait and the direct-only tools when Active;
// otherwise the policy-filtered tools unchanged. The slice and its schemas are copies.
func (s *Surface) Tools() []ModelTool {
	out := make([]ModelTool, len(s.tools))
	for i, t := range s.tools {
		t.InputSchema = slices.Clone(t.InputSchema)
		t.OutputSchema = slices.Clone(t.OutputSchema)
		t.Annotations = slices.Clone(t.Annotations)
		t.Wire = slices.Clone(t.Wire)
		out[i] = t
	}
	return out
}

// ToolNames lists the model-visible tool names, in the order of Tools (Y1).
func (s *Surface) ToolNames() []string {
	out := make([]string, len(s.tools))
	for i, t := range s.tools {
		out[i] = t.Name
	}
	return out
}

// RunContext returns the run the surface belongs to.
func (s *Surface) RunContext() api.RunContext { return s.run }

// Warnings lists problems with the run's tool set that did not stop activation: duplicate tool
// ids (the later definition is ignored) and direct-only entries that match no tool.
func (s *Surface) Warnings() []string { return slices.Clone(s.warnings) }

// CatalogInfo summarises a run catalog.
type CatalogInfo struct {
	// Size is the number of catalogued tools, MCP tools included (telemetry's catalogSize).
	Size int
	// Sources splits Size by source.
	Sources api.SourceCounts
	// IDs are the catalog ids in catalog order (K1).
	IDs []string
	// ReadOnly says every catalogued tool declares itself read-only (MCP tools never count as
	// read-only): a cell of this run cannot change anything.
	ReadOnly bool
}

// Catalog describes the run's hidden catalog; the zero value when code mode is not active.
func (s *Surface) Catalog() CatalogInfo {
	if s.cached == nil {
		return CatalogInfo{}
	}
	cat := s.cached.cat
	info := CatalogInfo{Size: len(cat.Entries), Sources: cat.Counts(), IDs: make([]string, len(cat.Entries)), ReadOnly: true}
	for i, e := range cat.Entries {
		info.IDs[i] = e.ID
		if !e.Tool.ReadOnly || e.Tool.Source == api.SourceMCP {
			info.ReadOnly = false
		}
	}
	return info
}

// APIFile returns a virtual declaration file exactly as a cell reads it with API.read (M3), e.g.
// "mcp/index.d.ts" or "mcp/<server>.d.ts": the MCP tools of the run as TypeScript declarations.
func (s *Surface) APIFile(path string) (string, error) {
	if s.cached == nil {
		return "", fmt.Errorf("code mode is not active in this run")
	}
	if path == swarm.FilePath && s.swarmOn() {
		return s.rt.swarm.DTS(s.depth()), nil
	}
	return s.cached.cat.APIRead(path)
}

// ForRun returns the same surface (tools, catalog) for another run: activation depends on the
// tool set, the run context only scopes calls, waits, hooks and telemetry. Gateways that serve
// many sessions with one tool set activate once and call ForRun per request.
func (s *Surface) ForRun(rc api.RunContext) *Surface {
	c := *s
	c.run = rc
	return &c
}

// WithApprovals returns the same surface with another approval policy for the calls of its
// runs — nested, namespace and direct calls — in place of Options.Approvals; the hooks and the
// Approver stay the runtime's. A gateway that serves several clients from one Runtime gives
// each its own rules this way. Waits must use a surface with the same rules as the exec that
// suspended the run. It fails on a rule whose pattern or fallback is invalid.
func (s *Surface) WithApprovals(a api.Approvals) (*Surface, error) {
	if err := checkApprovals(a); err != nil {
		return nil, err
	}
	g := *s.rt.gate
	g.Approvals = a
	c := *s
	c.gate = &g
	return &c, nil
}

// gateOf is the gate of the surface's calls.
func (s *Surface) gateOf() *dispatch.Gate {
	if s.gate != nil {
		return s.gate
	}
	return s.rt.gate
}

func (rt *Runtime) policy(rc api.RunContext) catalog.Policy {
	p := rt.opts.Policy
	return catalog.Policy{Allow: p.Allow, Deny: p.Deny, DisableTools: p.DisableTools || rc.DisableTools || rc.Raw}
}

// Activate builds the model surface for one run (A1–A8). tools are the run's effective tools:
// core, plugin, MCP and client tools (the catalog orders them by source, K1). The policy of
// Options.Policy applies first (A3); tools named in Policy.DirectOnly, or declaring DirectOnly,
// stay model-visible; every other tool is catalogued behind exec (A5–A6).
func (rt *Runtime) Activate(rc api.RunContext, tools []*api.Tool) *Surface {
	return rt.activate(rc, append(slices.Clip(tools), rt.pluginTools()...), nil)
}

// activate is Activate over the given tools (plugin tools included); child is set for a child
// agent's surface.
func (rt *Runtime) activate(rc api.RunContext, tools []*api.Tool, child *childInfo) *Surface {
	pol := rt.policy(rc)
	s := &Surface{rt: rt, run: rc, byID: map[string]*api.Tool{}, byName: map[string]*api.Tool{},
		direct: map[string]bool{}, child: child}
	directOnly := map[string]bool{}
	for _, n := range rt.opts.Policy.DirectOnly {
		directOnly[n] = false // true once it matched a tool
	}
	// C4: a sandboxed agent reaches MCP servers only with the bundled MCP plugin allowed.
	dropMCP := rc.Sandboxed && !rt.opts.Policy.SandboxAllowsMCP
	eff := make([]*api.Tool, 0, len(tools))
	for _, t := range tools {
		if t == nil || !pol.Permits(t) || (dropMCP && t.Source == api.SourceMCP) {
			continue
		}
		id := t.ID()
		_, byName := directOnly[t.Name]
		_, byID := directOnly[id]
		if byName {
			directOnly[t.Name] = true
		}
		if byID {
			directOnly[id] = true
		}
		if (byName || byID) && !t.DirectOnly {
			c := *t
			c.DirectOnly = true
			t = &c
		}
		if _, dup := s.byID[id]; dup {
			s.warn(fmt.Sprintf("duplicate tool id %s: the later definition is ignored", id))
			continue
		}
		if t.Execute == nil {
			s.warn(fmt.Sprintf("tool %s has no Execute function: calls to it fail", id))
		}
		eff = append(eff, t)
		s.byID[id] = t
	}
	s.eff = eff
	for _, n := range rt.opts.Policy.DirectOnly {
		if !directOnly[n] {
			s.warn(fmt.Sprintf("directOnly entry %q matches no tool of this run (give a tool name or a catalog id such as native:core:read or mcp:server:tool)", n))
		}
	}
	if !rt.cm.PrefersModel(rc.Model) || pol.NoTools() {
		// A4, A7: exposure unchanged (and no tools at all for a no-tool run); with activation
		// "auto", also for a model that does not prefer code mode (issue 22 item 9).
		list := eff
		if child != nil && child.submit != nil && !pol.NoTools() {
			list = append([]*api.Tool{child.submit.tool()}, eff...) // see below
		}
		for _, t := range list {
			if _, dup := s.byName[t.Name]; dup {
				s.warn(fmt.Sprintf("two tools are named %q; the model sees only %s", t.Name, s.byName[t.Name].ID()))
				continue
			}
			s.byName[t.Name] = t
			s.direct[t.Name] = true
			s.tools = append(s.tools, modelTool(t))
		}
		return s
	}
	s.cached = rt.catalogs.get(fingerprint(eff), func() *catalog.Catalog {
		c := catalog.Build(eff)
		c.EnableDense(rt.embedder, rt.log) // nil embedder: lexical search only
		return c
	})
	s.active = true
	cat := s.cached.cat
	for _, w := range cat.Warnings() {
		s.warn(w)
	}
	s.namespaces = rt.namespaces.Visible(func(id string) bool { return cat.Lookup(id) != nil })
	s.tools = []ModelTool{rt.execTool(cat, s.namespaces, s.swarmOn()), waitTool()}
	direct := s.cached.cat.DirectOnly
	if child != nil && child.submit != nil {
		// A child asked for a structured result submits it with this tool: model-visible,
		// outside the policy and the catalog (it is the runtime's, not a tool of the run).
		direct = append([]*api.Tool{child.submit.tool()}, direct...)
	}
	for _, t := range direct {
		if _, dup := s.byName[t.Name]; dup || t.Name == "exec" || t.Name == "wait" {
			s.warn(fmt.Sprintf("direct-only tool %s is not shown: its name %q is taken", t.ID(), t.Name))
			continue
		}
		s.byName[t.Name] = t
		s.direct[t.Name] = true
		s.tools = append(s.tools, modelTool(t))
	}
	return s
}

// warn records a tool-set warning on the surface and logs it once per process.
func (s *Surface) warn(msg string) {
	if slices.Contains(s.warnings, msg) {
		return
	}
	s.warnings = append(s.warnings, msg)
	s.rt.warnOnce(msg)
}

// CheckPayload is the fail-closed check on the final tool list an embedder sends to a model
// provider (A10): with code mode active it must hold exactly one exec, one wait, and otherwise
// only this surface's direct-only tools. A runtime that assembles its payload from several
// sources calls it last, on the names in the serialized request, and fails the run on error
// rather than leak the catalog into the prompt. With code mode inactive every name must be one
// of the run's tools.
func (s *Surface) CheckPayload(names []string) error {
	count := map[string]int{}
	for _, n := range names {
		count[n]++
		if s.active && (n == "exec" || n == "wait") {
			continue
		}
		if !s.direct[n] {
			if s.active {
				return fmt.Errorf("code mode payload check: tool %q is neither exec, wait nor an approved direct-only tool", n)
			}
			return fmt.Errorf("payload check: tool %q is not a tool of this run", n)
		}
	}
	if s.active {
		for _, n := range []string{"exec", "wait"} {
			if count[n] != 1 {
				return fmt.Errorf("code mode payload check: %d %q tools in the payload, want exactly one", count[n], n)
			}
		}
	}
	for n, c := range count {
		if c > 1 {
			return fmt.Errorf("payload check: tool %q appears %d times", n, c)
		}
	}
	return nil
}

func modelTool(t *api.Tool) ModelTool {
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Label
	}
	ann := t.Annotations
	if len(ann) == 0 && t.ReadOnly && t.Source != api.SourceMCP {
		ann = json.RawMessage(`{"readOnlyHint":true}`) // a native tool's own declaration
	}
	return ModelTool{Name: t.Name, Title: t.Label, Description: desc, InputSchema: slices.Clone(schema),
		OutputSchema: slices.Clone(t.OutputSchema), Annotations: slices.Clone(ann), Wire: slices.Clone(t.Wire), ID: t.ID()}
}

// fingerprint identifies a tool set by its definitions (not its implementations).
func fingerprint(tools []*api.Tool) string {
	h := sha256.New()
	var n [8]byte
	field := func(s string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	for _, t := range tools {
		field(t.ID())
		field(t.Label)
		field(t.Description)
		field(string(t.InputSchema))
		field(string(t.OutputSchema))
		flags := []byte("----")
		for i, on := range []bool{t.DirectOnly, t.ReadOnly, t.Untrusted, t.Sequential} {
			if on {
				flags[i] = "drus"[i]
			}
		}
		field(string(flags))
		if si := t.Server; si != nil { // server search evidence (issue 23)
			field(si.Name + "\x00" + si.Title + "\x00" + si.Description + "\x00" + si.Instructions)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// execSchemaTemplate is the exec tool's input schema: `language` is a flat string enum, never a
// oneOf/anyOf (X2: some providers reject those).
// It lists every field exec accepts, flat (issue 21 item 5): `command` (X1's alias of code) and
// an optional `title`, so schema-checking clients accept them; code-or-command is checked by
// exec itself, since a flat schema cannot say "one of".
const execSchemaTemplate = `{"type":"object","properties":{"code":{"type":"string","description":"The body of an async JavaScript function: use await, return the result."},"language":{"type":"string","enum":LANGS,"default":"javascript"},"title":{"type":"string","description":"Optional short label for this cell (at most 120 characters), shown in progress and logs."},"restartSafe":{"type":"boolean","description":"Read-only work: refuse tools that are not replay-safe."},"command":{"type":"string","description":"Alias of code, for hook policies: give code (or command, not different values)."}},"additionalProperties":false}`

func (rt *Runtime) execTool(cat *catalog.Catalog, ns []*namespace.Entry, swarmOn bool) ModelTool {
	langs, _ := json.Marshal(rt.cm.Languages)
	schema := strings.Replace(execSchemaTemplate, "LANGS", string(langs), 1)
	swarmPrompt := ""
	if swarmOn {
		swarmPrompt = rt.swarm.Prompt()
	}
	return ModelTool{Name: "exec", Description: execDescription(cat, rt.cm.Languages, ns, swarmPrompt), InputSchema: json.RawMessage(schema)}
}

func waitTool() ModelTool {
	return ModelTool{
		Name: "wait",
		Description: "Continue a code-mode run that exec (or an earlier wait) returned as " +
			"`waiting`. Blocks until a pending tool call settles or the time limit passes, then " +
			"returns the same result shape as exec. Use it only with a runId from a waiting result.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"runId":{"type":"string","description":"The runId of a waiting result."}},"required":["runId"],"additionalProperties":false}`),
	}
}
