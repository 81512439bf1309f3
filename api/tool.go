// Package api holds the types shared by the codemode runtime, its internal packages and the
// programs that embed it: the tool model, the exec/wait result union and the hook interfaces.
// It has no behaviour and no dependencies beyond the standard library, so every layer can import
// it without cycles (the same reason wazero keeps its api package tiny).
package api

import (
	"context"
	"encoding/json"
)

// Source says where a tool comes from. It decides trust: native tools are code compiled into or
// loaded by the embedding process (trusted metadata, output contracts honoured); MCP and client
// tools describe themselves over a wire (untrusted metadata).
type Source string

const (
	// SourceNative covers the built-in tools, the embedding program's own tools and plugin
	// tools: code the process runs itself (trusted metadata).
	SourceNative Source = "native"
	// SourceMCP is a tool of an MCP server the gateway connects (untrusted metadata).
	SourceMCP Source = "mcp"
	// SourceClient is a tool the run's client brings along (untrusted metadata).
	SourceClient Source = "client"
)

// Owners of native tools that no plugin owns. A catalog id is <source>:<owner>:<name> (K2):
//
//   - native:core:<name> — the built-in tools the gateway ships (read, edit, web_fetch, …);
//   - native:app:<name> — the embedding program's own tools (a native Tool with no Owner);
//   - native:<plugin id>:<name> — a plugin's tools (Runtime.AddPlugin sets Owner);
//   - mcp:<server>:<name> — an MCP server's tools;
//   - client:<owner>:<name> — tools a run's client brings along.
const (
	CoreOwner = "core"
	AppOwner  = "app"
)

// Tool is one tool, whatever its source. Native Go tools, plugin tools, MCP tools (registered by
// the MCP layer) and per-run client tools all use this type.
type Tool struct {
	// Name is the tool's name as a model would see it in direct exposure (e.g. "read").
	Name string
	// Label is an optional human title.
	Label string
	// Description is prose for the model. For untrusted sources it never reaches the prompt.
	Description string
	// InputSchema is the JSON Schema of the input object (raw, key order preserved).
	InputSchema json.RawMessage
	// OutputSchema optionally declares the JSON `details` value the tool returns (O1–O2). Only
	// native tools' schemas become hints; an invalid schema makes the tool unusable (O4).
	OutputSchema json.RawMessage

	// Source says where the tool comes from ("" means SourceNative).
	Source Source
	// Owner is the middle part of the catalog id <source>:<owner>:<name>: for native tools ""
	// (the embedding program's own: AppOwner), CoreOwner for the built-in tools, or the plugin
	// id; for MCP tools the server name; for client tools the client's id.
	Owner string

	// DirectOnly tools stay visible to the model in code mode because their results cannot
	// cross a JSON bridge (images, screens). They are never catalogued.
	DirectOnly bool
	// ReadOnly declares the tool free of side effects and safe to replay after a restart (W6).
	ReadOnly bool
	// Untrusted says the tool's results carry content from outside the operator's control (a
	// web page, an MCP server not configured as trusted, a client): what a cell prints or
	// returns after receiving one reaches the model inside an untrusted-content marking
	// (docs/semantics.md §11). The MCP layer sets it for every server without `trusted: true`;
	// set it on your own tools that relay outside content.
	Untrusted bool
	// Sequential says the tool must not run concurrently with itself or with the other
	// sequential tools of the same owner (a browser, a session): a run's calls to them start
	// one at a time, in call order, even under Promise.all. Other calls stay parallel.
	Sequential bool

	// Annotations are MCP tool annotations (behaviour hints such as readOnlyHint) as JSON. For
	// MCP tools they are the server's own bytes: untrusted, shown to clients in direct exposure,
	// never used for a decision (ReadOnly stays false).
	Annotations json.RawMessage
	// Wire is the tool's definition exactly as an upstream MCP server listed it (MCP tools
	// only, bounded in size), so that direct exposure can pass it through unchanged: title,
	// annotations, outputSchema, icons and _meta included.
	Wire json.RawMessage

	// Server is what the MCP server an MCP tool comes from said about itself when it connected
	// (nil for other tools; one value shared by the server's tools). Tool search indexes it, so a
	// query naming what a server is for finds its tools; it is untrusted and never reaches the
	// model's prompt.
	Server *ServerInfo

	// Execute runs the tool. Input is the JSON input object.
	Execute func(ctx context.Context, call *Call) (*Result, error)
}

// ServerInfo is an MCP server's self-description from its initialize result: serverInfo's name,
// title and description, and the instructions it gives clients. Every field is the server's own
// text, bounded in size by the MCP layer.
type ServerInfo struct {
	// Name is serverInfo.name.
	Name string
	// Title is serverInfo.title.
	Title string
	// Description is serverInfo.description.
	Description string
	// Instructions are what the server tells its clients about using it.
	Instructions string
}

// ID returns the catalog id <source>:<owner>:<name> (K2).
func (t *Tool) ID() string {
	src := t.Source
	if src == "" {
		src = SourceNative
	}
	owner := t.Owner
	if owner == "" {
		owner = AppOwner
	}
	return string(src) + ":" + owner + ":" + t.Name
}

// Call is one invocation of a tool.
type Call struct {
	// ToolID is the called tool's catalog id.
	ToolID string
	// Input is the call's JSON input object (after hooks' rewrites).
	Input json.RawMessage
	// Run is the run the call belongs to.
	Run RunContext
	// ParentCallID is the code-mode exec call that made this nested call, if any.
	ParentCallID string
	// Update streams partial progress when the caller supports it (may be nil).
	Update func(ContentBlock)
}

// Result is what a tool returns: content blocks for a human or model, and a JSON `details` value
// for programs (tools.callValue returns it).
type Result struct {
	// Content is what a person or a model reads: text, images, resources.
	Content []ContentBlock `json:"content"`
	// Details is the tool's JSON value: what tools.callValue returns to a cell, checked
	// against the tool's OutputSchema.
	Details json.RawMessage `json:"details,omitempty"`
	// IsError is the tool's own verdict that the call failed (the cell still gets the result).
	IsError bool `json:"isError,omitempty"`
	// Raw is the upstream's CallToolResult exactly as received (MCP tools only). A gateway that
	// exposes the tool directly sends it unchanged: content blocks byte for byte, with their
	// annotations and _meta, and structuredContent only if the upstream sent one.
	Raw json.RawMessage `json:"-"`
}

// ContentBlock is one piece of a tool result (MCP-compatible shape).
type ContentBlock struct {
	// Type is "text", "image", "audio", "resource" or "resource_link".
	Type string `json:"type"`
	// Text is a text block's text.
	Text string `json:"text,omitempty"`
	// Data is an image or audio block's bytes, base64-encoded.
	Data string `json:"data,omitempty"`
	// MimeType is the media type of an image, audio or linked resource.
	MimeType string `json:"mimeType,omitempty"`
	// URI is a resource_link's target.
	URI string `json:"uri,omitempty"`
	// Resource is an embedded resource ({uri, mimeType, text or blob}), as JSON.
	Resource json.RawMessage `json:"resource,omitempty"`
	// Name is a resource_link's name.
	Name string `json:"name,omitempty"`
	// Title is a resource_link's human-readable title.
	Title string `json:"title,omitempty"`
	// Description is a resource_link's description.
	Description string `json:"description,omitempty"`
	// Size is a resource_link's size in bytes, when known.
	Size *int64 `json:"size,omitempty"`
	// Annotations (audience, priority, lastModified) as JSON.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Meta is the block's _meta, as JSON.
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// TextResult is a convenience for tools that return text and a JSON details value.
func TextResult(text string, details any) (*Result, error) {
	r := &Result{Content: []ContentBlock{{Type: "text", Text: text}}}
	if details != nil {
		b, err := json.Marshal(details)
		if err != nil {
			return nil, err
		}
		r.Details = b
	}
	return r, nil
}

// RunContext identifies the agent run a call belongs to and carries its context (A1, E1).
// Catalog isolation, suspended runs, telemetry and the trajectory are scoped by Principal,
// AgentID, SessionKey, SessionID and RunID; the other fields travel with every hook event, nested
// call and trajectory record so policies and audits can see who asked, through which channel,
// with which model.
type RunContext struct {
	// Principal is the authenticated identity the run acts for: the name of a gateway's token
	// or OAuth principal ("" when nobody authenticated, as in a library or CLI run). A suspended
	// run can be continued only under the same principal, and per-principal limits count by it.
	Principal string `json:"principal,omitempty"`
	// AgentID names the agent (a gateway uses "mcp").
	AgentID string `json:"agentId,omitempty"`
	// SessionKey is the conversation the run belongs to: the scope of its suspended runs, its
	// telemetry counters and the per-session limits. Ending the session (Runtime.EndSession)
	// drops them.
	SessionKey string `json:"sessionKey,omitempty"`
	// SessionID identifies one connection or process of that conversation, when the embedder
	// distinguishes them; it must match for a wait, like SessionKey.
	SessionID string `json:"sessionId,omitempty"`
	// RunID identifies one agent run (one user turn and its tool calls) within the session; a
	// wait from another run of the same session is refused when both ids are known.
	RunID string `json:"runId,omitempty"`
	// Model names the model the run talks to ("gpt-4.1"); activation "auto" decides by it.
	Model string `json:"model,omitempty"`
	// Provider names the model's provider ("openai", "anthropic").
	Provider string `json:"provider,omitempty"`
	// SenderID is who sent the turn (a user id).
	SenderID string `json:"senderId,omitempty"`
	// Channel is where the turn came from ("cli", "mcp", a chat channel).
	Channel string `json:"channel,omitempty"`
	// DisableTools marks a run that intentionally has no tools (A7).
	DisableTools bool `json:"disableTools,omitempty"`
	// Raw marks a raw model call without tools (A7).
	Raw bool `json:"raw,omitempty"`
	// Sandboxed marks an agent running under the sandbox tool policy: it reaches MCP servers
	// only when the policy allows the bundled MCP plugin (C4).
	Sandboxed bool `json:"sandboxed,omitempty"`
}

// Plugin is a set of native tools owned by one plugin id, with a lifecycle. Its tools are
// catalogued as native:<ID>:<tool> (Owner is set to ID), after the core tools (K1).
type Plugin struct {
	// ID names the plugin (1–64 of a–z, 0–9, _ and -; not "core" or "app"): its tools are
	// native:<ID>:<name>.
	ID string
	// Tools are the plugin's tools; their Owner is set to ID.
	Tools []*Tool
	// Namespaces are the plugin's domain APIs for cells (docs/semantics.md, §10), backed by its Tools. They are
	// registered when the plugin is added and cleared when it is removed.
	Namespaces []Namespace
	// Config is handed to each namespace's CreateScope (NamespaceContext.Config).
	Config json.RawMessage
	// Start runs before the plugin's tools are offered (connect clients, load state). Optional.
	Start func(ctx context.Context) error
	// Stop runs at shutdown, or when the plugin is removed. Optional.
	Stop func(ctx context.Context) error
}

// Resources reaches the resources and prompts of MCP servers for the guest's
// MCP.<server>.resources and MCP.<server>.prompts. The MCP layer implements it; results are the
// servers' JSON responses.
type Resources interface {
	// ListResources answers resources/list of server.
	ListResources(ctx context.Context, server string) (json.RawMessage, error)
	// ReadResource answers resources/read of uri on server.
	ReadResource(ctx context.Context, server, uri string) (json.RawMessage, error)
	// ListPrompts answers prompts/list of server.
	ListPrompts(ctx context.Context, server string) (json.RawMessage, error)
	// GetPrompt answers prompts/get of name with args (a JSON object) on server.
	GetPrompt(ctx context.Context, server, name string, args json.RawMessage) (json.RawMessage, error)
}
