package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/contract"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawTool holds one tool exactly as the server sent it: its schemas and its whole definition.
type rawTool struct {
	Input       json.RawMessage `json:"inputSchema"`
	Output      json.RawMessage `json:"outputSchema"`
	Annotations json.RawMessage `json:"annotations"`
	Wire        json.RawMessage `json:"-"`
}

// maxWireBytes bounds a tool definition kept for passthrough: two full schemas, a description
// and room for title, annotations, icons and _meta. Larger ones are served from the bounded
// fields instead.
const maxWireBytes = 2*maxSchemaBytes + maxDescBytes + 64<<10

// parseRawTools reads the schemas out of a raw tools/list result into into (first one of a name
// wins, as in the tool list itself).
func parseRawTools(raw json.RawMessage, into map[string]rawTool) {
	var page struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(raw, &page) != nil {
		return
	}
	for _, w := range page.Tools {
		var t struct {
			Name string `json:"name"`
			rawTool
		}
		if json.Unmarshal(w, &t) != nil {
			continue
		}
		if _, dup := into[t.Name]; !dup {
			if len(w) <= maxWireBytes {
				var c bytes.Buffer
				if json.Compact(&c, w) == nil {
					t.Wire = c.Bytes()
				}
			}
			into[t.Name] = t.rawTool
		}
	}
}

// listTools fetches every page of tools/list and builds the api.Tools, applying the bounds on
// untrusted metadata. Pagination is ours rather than ClientSession.Tools (the SDK's iterator) so
// that every page carries a capture for its raw bytes and a hostile cursor loop is cut short.
func (s *server) listTools(ctx context.Context, sess *session) ([]*api.Tool, error) {
	var out []*api.Tool
	raws := map[string]rawTool{}
	names := map[string]bool{}
	seen := map[string]bool{}
	cursor := ""
	truncated := false
pages:
	for page := 0; ; page++ {
		if page == maxListPages {
			s.log.Warn("MCP server tools/list: too many pages; ignoring the rest", "pages", page)
			break
		}
		cp := &capture{}
		res, err := sess.cs.ListTools(withCapture(ctx, cp), &mcp.ListToolsParams{Cursor: cursor})
		sess.tr.release(cp)
		if err != nil {
			return nil, err
		}
		if raw, _ := cp.get(); raw != nil {
			parseRawTools(raw, raws)
		}
		for _, t := range res.Tools {
			if len(out) == maxToolsPerServer {
				truncated = true
				break pages
			}
			if t == nil {
				continue
			}
			if !validToolName(t.Name) {
				s.log.Warn("MCP server tool skipped: the name must be 1–128 bytes of printable characters",
					"name", clip(t.Name, 160))
				continue
			}
			if names[t.Name] {
				s.log.Warn("MCP server tool skipped: duplicate name", "name", t.Name)
				continue
			}
			names[t.Name] = true
			rt, ok := raws[t.Name]
			if !ok {
				rt = s.rawSchemas[t.Name] // this page came from the SDK's cache
			}
			at, why := s.makeTool(t, rt)
			if why != "" {
				// One bad definition costs its own tool, never the server's others (issue 18 item 7).
				s.log.Warn("MCP server tool skipped: "+why, "name", t.Name)
				continue
			}
			out = append(out, at)
		}
		if res.NextCursor == "" || seen[res.NextCursor] {
			break
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
	if truncated {
		s.log.Warn("MCP server offers too many tools; keeping the first ones", "kept", maxToolsPerServer)
	}
	if info := serverInfo(sess.cs.InitializeResult()); info != nil {
		for _, t := range out {
			t.Server = info // issue 23: server-level search evidence
		}
	}
	kept := make(map[string]rawTool, len(out))
	for _, t := range out {
		if rt, ok := raws[t.Name]; ok {
			kept[t.Name] = rt
		} else if rt, ok := s.rawSchemas[t.Name]; ok {
			kept[t.Name] = rt
		}
	}
	s.rawSchemas = kept
	return out, nil
}

// maxToolSchemaDepth bounds the nesting of a tool's schemas: a deeper one is not a definition
// anyone meant, and the tool is skipped. Hints and input checks stop at 64 levels on their own
// (they degrade, the tool stays).
const maxToolSchemaDepth = 256

// makeTool converts one listed tool. raw holds the server's own schema bytes when we saw them.
// It says why instead when the definition is refused: a schema nested deeper than
// maxToolSchemaDepth, or an output schema whose contract cannot be checked (contract.Compile).
func (s *server) makeTool(t *mcp.Tool, raw rawTool) (*api.Tool, string) {
	label := t.Title
	if label == "" && t.Annotations != nil {
		label = t.Annotations.Title
	}
	at := &api.Tool{
		Name:        t.Name,
		Label:       clip(label, maxLabelBytes),
		Description: clip(t.Description, maxDescBytes),
		Source:      api.SourceMCP,
		Owner:       s.name,
		ReadOnly:    false, // annotations.readOnlyHint is the server's claim, not a fact
		// issue 22: a server's results are someone else's prose unless the operator says
		// `trusted: true`; `sequential` names the tools that must not overlap.
		Untrusted:  !s.cfg.Trusted,
		Sequential: s.cfg.SequentialTool(t.Name),
	}
	at.InputSchema = s.schema(t.Name, "inputSchema", raw.Input, t.InputSchema)
	at.OutputSchema = s.schema(t.Name, "outputSchema", raw.Output, t.OutputSchema)
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"inputSchema", at.InputSchema}, {"outputSchema", at.OutputSchema}} {
		if depth(f.raw) > maxToolSchemaDepth {
			return nil, fmt.Sprintf("its %s is nested deeper than %d levels", f.name, maxToolSchemaDepth)
		}
	}
	ct := &callTool{s: s, name: t.Name, outputSchema: at.OutputSchema}
	if len(at.OutputSchema) > 0 {
		// Compiled now, not on the first structured result: a contract we cannot check is a
		// definition we refuse, said once here rather than by every call failing.
		c, err := contract.Compile("mcp:"+s.name+":"+t.Name, at.OutputSchema)
		if err != nil {
			return nil, err.Error()
		}
		ct.contract = c
	}
	if a := bytes.TrimSpace(raw.Annotations); len(a) > 0 && a[0] == '{' && len(a) <= 64<<10 {
		at.Annotations = a
	} else if raw.Wire == nil && t.Annotations != nil {
		at.Annotations, _ = json.Marshal(t.Annotations)
	}
	at.Wire = raw.Wire
	at.Execute = ct.execute
	return at, ""
}

// schema picks the raw bytes, or re-encodes the SDK's value (key order lost) when there are none.
func (s *server) schema(tool, field string, raw json.RawMessage, v any) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		if v == nil {
			return nil
		}
		b, err := json.Marshal(v)
		if err != nil || string(b) == "null" {
			return nil
		}
		raw = b
	}
	out, why := schemaBytes(raw)
	if why != "" {
		s.log.Warn("MCP server tool schema dropped", "tool", tool, "field", field, "reason", why)
	}
	return out
}

// callTool is the Execute of one MCP tool.
type callTool struct {
	s            *server
	name         string
	outputSchema json.RawMessage
	contract     *contract.Schema // compiled when listed; nil without an outputSchema
}

func (c *callTool) execute(ctx context.Context, call *api.Call) (*api.Result, error) {
	s := c.s
	what := "tool " + c.name
	args := bytes.TrimSpace(call.Input)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	} else if args[0] != '{' || !json.Valid(args) {
		return nil, fmt.Errorf("MCP server %s: %s: the input must be a JSON object", s.name, what)
	}
	sess, err := s.live()
	if err != nil {
		return nil, err
	}
	cctx, cp, done := s.callCtx(ctx, sess)
	defer done()
	defer s.track(ctx)()
	params := &mcp.CallToolParams{Name: c.name, Arguments: json.RawMessage(args)}
	s.stampLogLevel(ctx, sess, &params.Meta)
	if token, stop := s.progressFor(ctx, call); token != "" {
		params.SetProgressToken(token)
		defer stop()
	}
	res, err := sess.cs.CallTool(cctx, params)
	if err != nil {
		return nil, s.callError(ctx, cctx, sess, what, err)
	}
	raw, tooBig := cp.get()
	if tooBig {
		return nil, fmt.Errorf("MCP server %s: %s: %w", s.name, what, errTooBig)
	}
	if raw == nil {
		if raw, err = json.Marshal(res); err != nil {
			return nil, fmt.Errorf("MCP server %s: %s: %w", s.name, what, err)
		}
		if len(raw) > maxResultBytes {
			return nil, fmt.Errorf("MCP server %s: %s: %w", s.name, what, errTooBig)
		}
	}
	return c.result(withoutHopMembers(raw))
}

// result builds the api.Result from the raw CallToolResult: Content from its content blocks,
// Details = {content, structuredContent?, isError?, _meta?} with the server's own bytes.
func (c *callTool) result(raw json.RawMessage) (*api.Result, error) {
	s := c.s
	var r struct {
		Content           json.RawMessage `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
		Meta              json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("MCP server %s: tool %s: malformed result: %v", s.name, c.name, err)
	}
	out := &api.Result{IsError: r.IsError, Content: []api.ContentBlock{}}
	if len(r.Content) > 0 && string(r.Content) != "null" {
		if err := json.Unmarshal(r.Content, &out.Content); err != nil {
			return nil, fmt.Errorf("MCP server %s: tool %s: malformed content: %v", s.name, c.name, err)
		}
	} else {
		r.Content = json.RawMessage("[]")
	}
	hasSC := len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null"
	if hasSC && !r.IsError && len(c.outputSchema) > 0 {
		if err := c.validate(r.StructuredContent); err != nil {
			return nil, fmt.Errorf("MCP server %s: tool %s: %w", s.name, c.name, err)
		}
	}
	var d bytes.Buffer
	d.Grow(len(raw) + 64)
	d.WriteString(`{"content":`)
	d.Write(r.Content)
	if hasSC {
		d.WriteString(`,"structuredContent":`)
		d.Write(r.StructuredContent)
	}
	if r.IsError {
		d.WriteString(`,"isError":true`)
	}
	if len(r.Meta) > 0 && string(r.Meta) != "null" {
		d.WriteString(`,"_meta":`)
		d.Write(r.Meta)
	}
	d.WriteByte('}')
	var compact bytes.Buffer
	compact.Grow(d.Len())
	if err := json.Compact(&compact, d.Bytes()); err != nil {
		return nil, fmt.Errorf("MCP server %s: tool %s: malformed result: %v", s.name, c.name, err)
	}
	out.Details = compact.Bytes()
	out.Raw = raw
	return out, nil
}

// validate checks structuredContent against the tool's outputSchema (compiled when listed).
func (c *callTool) validate(sc json.RawMessage) error {
	if c.contract == nil {
		return nil
	}
	err := c.contract.Check(sc)
	var m *contract.Mismatch
	switch {
	case err == nil:
		return nil
	case errors.As(err, &m):
		return fmt.Errorf("structuredContent does not match the tool's outputSchema at %s (keyword %s)", m.Path, m.Keyword)
	default:
		return fmt.Errorf("structuredContent: %w", err)
	}
}

// Bounds on a server's self-description kept for search (issue 23): the index reads less still.
const (
	maxServerInfoField   = 512
	maxServerDescription = 4 << 10
)

// serverInfo is the server's initialize self-description, bounded, or nil when it said nothing.
func serverInfo(res *mcp.InitializeResult) *api.ServerInfo {
	if res == nil {
		return nil
	}
	info := &api.ServerInfo{Instructions: clip(res.Instructions, maxServerDescription)}
	if si := res.ServerInfo; si != nil {
		info.Name = clip(si.Name, maxServerInfoField)
		info.Title = clip(si.Title, maxServerInfoField)
		info.Description = clip(si.Description, maxServerDescription)
	}
	if *info == (api.ServerInfo{}) {
		return nil
	}
	return info
}
