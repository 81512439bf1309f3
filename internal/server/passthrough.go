package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Faithful passthrough. The SDK decodes and re-encodes everything through its own types, which
// is lossy for a proxy: image and audio data were base64-encoded a second time, resource blocks
// became empty text, a structuredContent was invented from our details, and tools/list lost
// title, annotations and outputSchema. So the wire form of what an upstream MCP server sent is
// kept (api.Result.Raw, api.Tool.Wire) and a receiving middleware serves it in place of the
// SDK's value; results of native tools are rendered to MCP here, once, by type.

type rawKey struct{}

// rawHolder lets a tool handler hand the middleware the exact result to send.
type rawHolder struct{ raw json.RawMessage }

// middleware registers each session on its first request (session.go), swaps in raw results
// and tool definitions, and gives every error a JSON-RPC code (a plain Go error would reach the
// client as code 0).
func (s *Server) middleware(p *profile) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		inner := s.passthrough(p, next)
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := inner(ctx, method, req)
			return res, withRPCCode(err)
		}
	}
}

func (s *Server) passthrough(p *profile, next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		// Sessions with an id are registered on their first request (initialize); the
		// ephemeral session of a stateless request has none and outlives nothing.
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil && ss.ID() != "" {
			id := identity{prof: p}
			if post := s.posts.of(req); post != nil {
				id = post.id
			}
			if s.session(ss, id) == nil {
				return nil, &jsonrpc.Error{Code: codeSessionEnded, Message: "the server is shutting down"}
			}
		}
		switch method {
		case "tools/call":
			h := &rawHolder{}
			res, err := next(context.WithValue(ctx, rawKey{}, h), method, req)
			if err != nil || h.raw == nil {
				return res, err
			}
			ctr, _ := res.(*mcp.CallToolResult)
			if ctr == nil {
				ctr = &mcp.CallToolResult{}
			}
			return &rawResult{CallToolResult: ctr, raw: h.raw}, nil
		case "tools/list":
			res, err := next(ctx, method, req)
			lr, ok := res.(*mcp.ListToolsResult)
			if err != nil || !ok || lr == nil {
				return res, err
			}
			p.mu.Lock()
			wire := p.wire
			p.mu.Unlock()
			if len(wire) == 0 {
				return res, nil
			}
			return &rawList{ListToolsResult: lr, wire: wire}, nil
		}
		return next(ctx, method, req)
	}
}

// passResult returns a direct tool's result: through the middleware as raw JSON, or (no
// middleware in the path) decoded by the SDK.
func passResult(ctx context.Context, r *api.Result) (*mcp.CallToolResult, error) {
	raw := renderResult(r)
	if h, ok := ctx.Value(rawKey{}).(*rawHolder); ok {
		h.raw = raw
		return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
	}
	var out mcp.CallToolResult
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// rawResult is a CallToolResult sent as raw bytes. It embeds the SDK's (empty) result so the
// SDK can still set protocol fields on it (resultType, _meta serverInfo in newer protocol
// versions); MarshalJSON adds those the raw result does not have.
type rawResult struct {
	*mcp.CallToolResult
	raw json.RawMessage
}

func (r *rawResult) MarshalJSON() ([]byte, error) {
	typed, err := json.Marshal(r.CallToolResult)
	if err != nil {
		return nil, err
	}
	return mergeExtra(r.raw, typed, "content", "structuredContent", "isError")
}

// mergeExtra adds to the JSON object raw the members of typed it lacks, skipping skip: the
// protocol members the SDK sets on a result for the client's protocol version (resultType, and
// _meta serverInfo for 2026-07-28). When both have a _meta object, typed's keys that raw's lacks
// join raw's. raw's own members keep their bytes (upstream/hop.go dropped an upstream's protocol
// members from it before).
func mergeExtra(raw, typed []byte, skip ...string) ([]byte, error) {
	tm, ok := rawjson.Members(typed)
	if !ok || len(tm) == 0 {
		return raw, nil
	}
	rm, ok := rawjson.Members(raw)
	if !ok {
		return nil, errors.New("the result is not a JSON object")
	}
	changed := false
	slices.SortFunc(tm, func(a, b rawjson.Member) int { return strings.Compare(a.Key, b.Key) })
	for _, m := range tm {
		if slices.Contains(skip, m.Key) {
			continue
		}
		i := slices.IndexFunc(rm, func(r rawjson.Member) bool { return r.Key == m.Key })
		if i < 0 {
			rm = append(rm, m)
			changed = true
			continue
		}
		if m.Key != "_meta" {
			continue
		}
		have, ok1 := rawjson.Members(rm[i].Value)
		add, ok2 := rawjson.Members(m.Value)
		if !ok1 || !ok2 {
			continue
		}
		n := len(have)
		for _, k := range add {
			if !rawjson.Has(have, k.Key) {
				have = append(have, k)
			}
		}
		if len(have) > n {
			rm[i].Value = rawjson.Object(have)
			changed = true
		}
	}
	if !changed {
		return raw, nil
	}
	return rawjson.Object(rm), nil
}

// rawList is a ListToolsResult whose tools are replaced by their upstream definitions.
type rawList struct {
	*mcp.ListToolsResult
	wire map[string]json.RawMessage
}

func (l *rawList) MarshalJSON() ([]byte, error) {
	typed, err := json.Marshal(l.ListToolsResult)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(typed, &m); err != nil {
		return nil, err
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(m["tools"], &tools); err != nil {
		return typed, nil
	}
	for i, t := range tools {
		var n struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &n) == nil {
			if w, ok := l.wire[n.Name]; ok {
				tools[i] = w
			}
		}
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return nil, err
	}
	m["tools"] = b
	return json.Marshal(m)
}

// renderResult is the MCP CallToolResult of a direct tool call: the upstream's own bytes for an
// MCP tool, otherwise rendered from the native result. Native details become structuredContent
// only when they are a JSON object (what every protocol version accepts).
func renderResult(r *api.Result) json.RawMessage {
	if len(r.Raw) > 0 {
		return r.Raw
	}
	var b bytes.Buffer
	b.WriteString(`{"content":[`)
	for i, c := range r.Content {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(renderBlock(c))
	}
	b.WriteByte(']')
	if d := bytes.TrimSpace(r.Details); len(d) > 0 && d[0] == '{' && json.Valid(d) {
		b.WriteString(`,"structuredContent":`)
		b.Write(d)
	}
	if r.IsError {
		b.WriteString(`,"isError":true`)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// renderBlock writes one native content block with exactly the fields its type has.
func renderBlock(c api.ContentBlock) []byte {
	meta := func(m map[string]any) map[string]any {
		if len(c.Annotations) > 0 && json.Valid(c.Annotations) {
			m["annotations"] = c.Annotations
		}
		if len(c.Meta) > 0 && json.Valid(c.Meta) {
			m["_meta"] = c.Meta
		}
		return m
	}
	var m map[string]any
	switch c.Type {
	case "image", "audio":
		m = map[string]any{"type": c.Type, "data": c.Data, "mimeType": c.MimeType}
	case "resource":
		if len(c.Resource) > 0 && json.Valid(c.Resource) {
			m = map[string]any{"type": "resource", "resource": c.Resource}
		}
	case "resource_link":
		m = map[string]any{"type": "resource_link", "uri": c.URI, "name": c.Name}
		for k, v := range map[string]string{"title": c.Title, "description": c.Description, "mimeType": c.MimeType} {
			if v != "" {
				m[k] = v
			}
		}
		if c.Size != nil {
			m["size"] = *c.Size
		}
	}
	if m == nil {
		m = map[string]any{"type": "text", "text": c.Text}
	}
	b, _ := json.Marshal(meta(m))
	return b
}

// objectSchema is what the SDK registers: the schema itself when it is an object schema, else a
// permissive one (the SDK refuses anything but `"type": "object"`).
func objectSchema(s json.RawMessage) json.RawMessage {
	if isObjectSchema(s) {
		return s
	}
	return json.RawMessage(`{"type":"object"}`)
}

func isObjectSchema(s json.RawMessage) bool {
	var m struct {
		Type any `json:"type"`
	}
	return len(s) > 0 && json.Unmarshal(s, &m) == nil && m.Type == "object"
}
