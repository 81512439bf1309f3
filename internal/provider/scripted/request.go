package scripted

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Request is one request the server received, parsed into provider-neutral form.
type Request struct {
	// N numbers the server's HTTP requests from 1 (rejected ones included).
	N        int
	Provider string // OpenAI or Anthropic
	Path     string
	Header   http.Header
	// Body is the raw JSON body, exactly as received.
	Body      []byte
	Model     string
	Stream    bool
	MaxTokens int
	System    string
	Tools     []Tool
	Messages  []Message

	includeUsage bool // OpenAI stream_options.include_usage
}

// Tool is one tool definition of a request.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

// Message is one conversation turn. OpenAI's consecutive `tool` messages become one Message
// with Role "tool"; so does an Anthropic user message made of tool_result blocks (any text
// blocks beside them land in Text).
type Message struct {
	Role      string // "user", "assistant" or "tool" (system prompts go to Request.System)
	Text      string
	ToolCalls []ToolCall
	Results   []ToolResult
}

// ToolCall is a tool call, in a reply or in a request's history. Arguments is the raw argument
// text: it need not be valid JSON (that is how a reply makes a malformed call).
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ToolResult is a tool result in a request's history.
type ToolResult struct {
	CallID  string
	Content string
	IsError bool
}

// ToolNames are the names of the request's tools, in order.
func (r *Request) ToolNames() []string {
	names := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		names[i] = t.Name
	}
	return names
}

// Last is the request's last message (zero if there is none).
func (r *Request) Last() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// LastResults are the tool results of the request's last message.
func (r *Request) LastResults() []ToolResult { return r.Last().Results }

// Result finds the result for the call with id anywhere in the history.
func (r *Request) Result(id string) (ToolResult, bool) {
	for _, m := range r.Messages {
		for _, res := range m.Results {
			if res.CallID == id {
				return res, true
			}
		}
	}
	return ToolResult{}, false
}

// rejection is a request the real API would refuse, worded as the API words it (capitals and
// full stops included: it is the provider's message, not a Go error string).
type rejection string

func (r rejection) Error() string { return string(r) }

func reject(format string, args ...any) error { return rejection(fmt.Sprintf(format, args...)) }
