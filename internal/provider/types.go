package provider

import (
	"context"
	"encoding/json"
)

// Role says who wrote a Message.
type Role string

const (
	// RoleUser is the person (or the harness speaking for them).
	RoleUser Role = "user"
	// RoleAssistant is the model: text and tool calls.
	RoleAssistant Role = "assistant"
	// RoleTool carries the results of the previous assistant message's tool calls.
	RoleTool Role = "tool"
)

// ToolDef is one model-visible tool. InputSchema is sent exactly as given: the surface already
// produced a provider-safe schema (a flat enum for exec's language, never oneOf/anyOf), and
// rewriting it here would make A10's check and the debug snapshot describe something else.
type ToolDef struct {
	Name        string
	Description string
	// InputSchema is a JSON Schema object. Empty means "no parameters" (`{"type":"object"}`
	// for providers that require a schema).
	InputSchema json.RawMessage
}

// ToolCall is a tool call the model made. A call whose arguments are not a JSON object is not
// dropped and not replaced by `{}`: Malformed says why, and RawArguments keeps what the model
// sent so the harness can answer the call with an error the model can learn from.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the JSON object the model passed; nil when Malformed is set.
	Arguments json.RawMessage
	// RawArguments is the argument text exactly as the provider returned it.
	RawArguments string
	// Malformed is why Arguments could not be used ("" when they are fine).
	Malformed string
}

// ToolResult answers one ToolCall (CallID = ToolCall.ID).
type ToolResult struct {
	CallID  string
	Name    string
	Content string
	// IsError marks a failed call. Anthropic carries it as `is_error`; OpenAI's chat format has
	// no such field, so there the content itself must say it failed.
	IsError bool
}

// Message is one turn of the conversation, in provider-neutral form.
type Message struct {
	Role Role
	// Text is the user's or the model's text (unused for RoleTool).
	Text string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// Results answer the previous assistant message's calls (RoleTool only).
	Results []ToolResult
}

// Request is one model call: the whole history so far plus the tools the model may call.
type Request struct {
	Model    string
	System   string
	Messages []Message
	Tools    []ToolDef
	// MaxTokens bounds the reply. 0 lets the server decide for OpenAI-compatible APIs (the field
	// is omitted) and means DefaultAnthropicMaxTokens for Anthropic, where it is required.
	MaxTokens int
}

// Usage is the token accounting the provider reported (zero when it reported none).
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// Normalised stop reasons. A reason a provider invents that is not one of these is passed
// through unchanged.
const (
	StopEnd       = "end"        // the model finished its answer
	StopToolCalls = "tool_calls" // the model wants tool results
	StopMaxTokens = "max_tokens" // cut by MaxTokens
	StopRefusal   = "refusal"    // the model (or a filter) refused
)

// Response is the model's reply to a Request, the same whether it arrived as one JSON body or
// as an SSE stream.
type Response struct {
	ID        string
	Model     string
	Text      string
	ToolCalls []ToolCall
	// StopReason is one of the Stop* constants, or the provider's own word for anything else.
	StopReason string
	Usage      Usage
	// RequestID is the provider's request id header, for support tickets.
	RequestID string
}

// Client sends Requests to one model provider. It is safe for concurrent use.
type Client interface {
	Complete(ctx context.Context, req Request) (*Response, error)
	// Provider is "openai" or "anthropic".
	Provider() string
}
