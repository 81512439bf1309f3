package catalog

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/schemahint"
)

// JSON is the compact ALL_TOOLS / tools.search entry (G1): no schemas, bounded description,
// `output` only from a trusted complete contract.
func (e *Entry) JSON() map[string]any {
	m := map[string]any{
		"id":          e.ID,
		"name":        e.Tool.Name,
		"description": clip(e.Tool.Description, entryDescLen),
		"source":      string(source(e.Tool)),
		"input":       e.Input,
	}
	if e.Tool.Label != "" {
		m["label"] = clip(e.Tool.Label, 120)
	}
	if e.Tool.Owner != "" && e.Tool.Owner != api.CoreOwner && e.Tool.Owner != api.AppOwner {
		m["sourceName"] = e.Tool.Owner
	}
	if e.Output != "" {
		m["output"] = e.Output
	}
	if e.SafeName != "" {
		m["call"] = "tools." + e.SafeName
	}
	return m
}

// DescribeJSON is tools.describe's answer: the entry plus the full schemas (G1).
func (e *Entry) DescribeJSON() map[string]any {
	m := e.JSON()
	m["description"] = clip(e.Tool.Description, describeDescLn)
	m["parameters"] = rawOr(e.Tool.InputSchema, map[string]any{"type": "object"})
	if len(e.Tool.OutputSchema) > 0 && len(e.Tool.OutputSchema) <= maxSchemaBytes && json.Valid(e.Tool.OutputSchema) {
		m["outputSchema"] = json.RawMessage(e.Tool.OutputSchema)
	}
	return m
}

func rawOr(raw []byte, def any) any {
	if len(raw) == 0 || len(raw) > maxSchemaBytes || !json.Valid(raw) {
		return def
	}
	return json.RawMessage(raw)
}

// MCPSearchJSON is one MCP.$search result: enough to make the call in the same cell. The input
// signature is rendered from the server's (untrusted) schema on demand: it is guest data, bounded,
// and never reaches the prompt.
func (e *Entry) MCPSearchJSON() map[string]any {
	e.mcpHintOnce.Do(func() {
		e.mcpHint = "unknown"
		if len(e.Tool.InputSchema) <= maxSchemaBytes {
			if s, err := schemahint.Parse(e.Tool.InputSchema); err == nil {
				e.mcpHint = schemahint.InputHint(s, 400)
			}
		}
	})
	hint := e.mcpHint
	m := map[string]any{
		"server":      e.Tool.Owner,
		"tool":        e.Tool.Name,
		"call":        "MCP." + e.JSServer + "." + e.JSName,
		"description": clip(e.Tool.Description, entryDescLen),
		"input":       hint,
	}
	if e.Tool.Label != "" {
		m["title"] = clip(e.Tool.Label, 120)
	}
	return m
}

func source(t *api.Tool) api.Source {
	if t.Source == "" {
		return api.SourceNative
	}
	return t.Source
}

// clip bounds s to n bytes at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
