package scripted

import (
	"net/http"
	"time"
)

// Reply is what a turn answers.
//
// A zero Status (or 200) with no Body is a model reply rendered in the provider's format, as
// JSON or as an SSE stream depending on what the request asked for. Status >= 400 is an error
// in the provider's error format (ErrorType and ErrorMessage, defaults by status). Body, when
// set, is sent verbatim with ContentType and Status instead: a server that does not speak the
// protocol.
type Reply struct {
	Text      string
	ToolCalls []ToolCall // an empty ID gets a generated one
	// StopReason overrides the provider's stop/finish reason (default: tool calls → tool_calls /
	// tool_use, else stop / end_turn).
	StopReason string
	// InputTokens and OutputTokens override the usage reported (default: rough counts).
	InputTokens, OutputTokens int

	// Delay holds the response back (before any header is sent).
	Delay time.Duration
	// EventDelay spaces the events of a stream.
	EventDelay time.Duration

	Status       int
	Header       http.Header
	ErrorType    string
	ErrorMessage string
	Body         string
	ContentType  string

	// StreamError ends a stream with the provider's in-stream error event (Anthropic `event:
	// error`, OpenAI `data: {"error":…}`) after the content, instead of finishing normally.
	StreamError string
	// Truncate ends a stream after the content without the closing events, as a dropped
	// connection would.
	Truncate bool
}

// Fixed is a turn that always gives r.
func Fixed(r Reply) Turn { return func(*Request) Reply { return r } }

// Say is a turn that answers with text and ends the model's turn.
func Say(text string) Turn { return Fixed(Reply{Text: text}) }

// Call is a turn that calls one tool with raw argument text (need not be valid JSON).
func Call(name, arguments string) Turn {
	return Fixed(Reply{ToolCalls: []ToolCall{{Name: name, Arguments: arguments}}})
}

// Fail is a turn that answers with an HTTP error in the provider's format.
func Fail(status int, message string) Turn {
	return Fixed(Reply{Status: status, ErrorMessage: message})
}

// RateLimited is a 429 with a retry-after header (seconds, as the header says; "" for none).
func RateLimited(retryAfter string) Turn {
	r := Reply{Status: http.StatusTooManyRequests, ErrorMessage: "Rate limit reached; slow down."}
	if retryAfter != "" {
		r.Header = http.Header{"Retry-After": {retryAfter}}
	}
	return Fixed(r)
}
