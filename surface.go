package codemode

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/catalog"
)

// ModelTool is a tool definition as the model receives it.
type ModelTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
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

// Surface is one run's model-facing tool surface and, when code mode is active, its catalog.
type Surface struct {
	rt *Runtime
	// Active is true when code mode replaced the tool list (A5–A6).
	Active bool
	// Tools is what the model sees: exec, wait and the direct-only tools when Active; otherwise
	// the policy-filtered tools unchanged (A4).
	Tools []ModelTool

	run    api.RunContext
	cached *cachedCatalog
	// byID and byName resolve this run's own tool implementations: the cached catalog is shared
	// between runs with identical definitions, but execution always uses the run's tools (A9).
	byID   map[string]*api.Tool
	byName map[string]*api.Tool
}

// Catalog returns the run catalog (nil when code mode is not active).
func (s *Surface) Catalog() *catalog.Catalog {
	if s.cached == nil {
		return nil
	}
	return s.cached.cat
}

// RunContext returns the run the surface belongs to.
func (s *Surface) RunContext() api.RunContext { return s.run }

func (rt *Runtime) policy(rc api.RunContext) catalog.Policy {
	t := rt.cfg.Tools
	return catalog.Policy{Allow: t.Allow, Deny: t.Deny, DisableTools: t.DisableTools || rc.DisableTools || rc.Raw}
}

// Activate builds the model surface for one run (A1–A8). tools are the run's effective tools in
// source order: core, bundled plugins, external plugins, MCP, client. Tools whose names are in
// tools.directOnly are treated as direct-only.
func (rt *Runtime) Activate(rc api.RunContext, tools []*api.Tool) *Surface {
	pol := rt.policy(rc)
	s := &Surface{rt: rt, run: rc, byID: map[string]*api.Tool{}, byName: map[string]*api.Tool{}}
	direct := map[string]bool{}
	for _, n := range rt.cfg.Tools.DirectOnly {
		direct[n] = true
	}
	// C4: a sandboxed agent reaches MCP servers only with the bundled MCP plugin allowed.
	dropMCP := rc.Sandboxed && !rt.cfg.Tools.Sandbox.AllowsBundleMCP()
	eff := make([]*api.Tool, 0, len(tools))
	for _, t := range tools {
		if t == nil || !pol.Permits(t) || (dropMCP && t.Source == api.SourceMCP) {
			continue
		}
		if direct[t.Name] && !t.DirectOnly {
			c := *t
			c.DirectOnly = true
			t = &c
		}
		eff = append(eff, t)
		if _, dup := s.byID[t.ID()]; !dup {
			s.byID[t.ID()] = t
		}
	}
	if !rt.cm.Enabled || pol.NoTools() {
		// A4, A7: exposure unchanged (and no tools at all for a no-tool run).
		for _, t := range eff {
			if _, dup := s.byName[t.Name]; dup {
				continue
			}
			s.byName[t.Name] = t
			s.Tools = append(s.Tools, modelTool(t))
		}
		return s
	}
	key := fingerprint(eff)
	s.cached = rt.catalogs.get(key, func() *catalog.Catalog { return catalog.Build(eff, catalog.Policy{}) })
	s.Active = true
	s.Tools = []ModelTool{rt.execTool(s.cached.cat), waitTool()}
	for _, t := range s.cached.cat.DirectOnly {
		if _, dup := s.byName[t.Name]; dup || t.Name == "exec" || t.Name == "wait" {
			continue
		}
		own := s.byID[t.ID()]
		s.byName[t.Name] = own
		s.Tools = append(s.Tools, modelTool(own))
	}
	return s
}

// VisibleToolNames lists the model-visible tool names (Y1).
func (s *Surface) VisibleToolNames() []string {
	out := make([]string, len(s.Tools))
	for i, t := range s.Tools {
		out[i] = t.Name
	}
	return out
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
	return ModelTool{Name: t.Name, Title: t.Label, Description: desc, InputSchema: schema,
		OutputSchema: t.OutputSchema, Annotations: ann, Wire: t.Wire, ID: t.ID()}
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
		flags := "--"
		if t.DirectOnly {
			flags = "d" + flags[1:]
		}
		if t.ReadOnly {
			flags = flags[:1] + "r"
		}
		field(flags)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// execSchema is the exec tool's input schema: `language` is a flat string enum, never a
// oneOf/anyOf (X2: some providers reject those).
const execSchemaTemplate = `{"type":"object","properties":{"code":{"type":"string","description":"The body of an async JavaScript function: use await, return the result."},"language":{"type":"string","enum":LANGS,"default":"javascript"},"restartSafe":{"type":"boolean","description":"Read-only work: refuse tools that are not replay-safe."}},"required":["code"],"additionalProperties":false}`

func (rt *Runtime) execTool(cat *catalog.Catalog) ModelTool {
	langs, _ := json.Marshal(rt.cm.Languages)
	schema := strings.Replace(execSchemaTemplate, "LANGS", string(langs), 1)
	return ModelTool{Name: "exec", Description: execDescription(cat, rt.cm.Languages), InputSchema: json.RawMessage(schema)}
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
