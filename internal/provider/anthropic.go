package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// anthropicVersion is the anthropic-version header sent with every request: the API version
// whose request and event shapes this package speaks (the one the API reference documents;
// every field we use exists in it).
const anthropicVersion = "2023-06-01"

// anthropicClient speaks the Anthropic Messages API (POST <base>/v1/messages).
type anthropicClient struct {
	s      settings
	url    string
	header http.Header
}

func newAnthropic(s settings) *anthropicClient {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", userAgent)
	h.Set("Accept", "application/json")
	if s.Stream {
		h.Set("Accept", "text/event-stream")
	}
	h.Set("Anthropic-Version", anthropicVersion)
	// Only the key the caller passed (never ANTHROPIC_API_KEY from the environment), as the
	// x-api-key header the API reference documents.
	if s.APIKey != "" {
		h.Set("X-Api-Key", s.APIKey)
	}
	return &anthropicClient{s: s, url: s.base.JoinPath("v1", "messages").String(), header: h}
}

func (c *anthropicClient) Provider() string { return Anthropic }

func (c *anthropicClient) Complete(ctx context.Context, req Request) (*Response, error) {
	return c.complete(ctx, req)
}

var anthropicWire = wire{decodeJSON: anthropicDecodeJSON, decodeStream: anthropicDecodeStream, errorBody: anthropicErrorBody}

// complete takes edits for tests that alter the body after rendering.
func (c *anthropicClient) complete(ctx context.Context, req Request, edits ...func([]byte) []byte) (*Response, error) {
	body, err := anthropicBody(req, c.s.Stream)
	if err != nil {
		return nil, err
	}
	return newCall(&c.s, Anthropic, req.Model).post(ctx, c.url, c.header, body, c.s.Stream, anthropicWire, edits...)
}

// The request, exactly the fields we send. Field order is the order on the wire.
type (
	antRequest struct {
		MaxTokens int          `json:"max_tokens"`
		Messages  []antMessage `json:"messages"`
		Model     string       `json:"model"`
		System    []antText    `json:"system,omitempty"`
		Tools     []antTool    `json:"tools,omitempty"`
		Stream    bool         `json:"stream,omitempty"`
	}
	antMessage struct {
		Content []any  `json:"content"`
		Role    string `json:"role"`
	}
	antText struct {
		Text string `json:"text"`
		Type string `json:"type"`
	}
	antToolUse struct {
		ID    string          `json:"id"`
		Input json.RawMessage `json:"input"`
		Name  string          `json:"name"`
		Type  string          `json:"type"`
	}
	antToolResult struct {
		ToolUseID string    `json:"tool_use_id"`
		IsError   bool      `json:"is_error,omitempty"`
		Content   []antText `json:"content,omitempty"`
		Type      string    `json:"type"`
	}
	antTool struct {
		InputSchema json.RawMessage `json:"input_schema"`
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
	}
)

// anthropicBody renders a Request as a Messages body. Anthropic wants tool results as
// tool_result blocks in a user message; consecutive messages of one role are merged into one
// message, so tool results followed by user text stay a single well-formed user turn.
func anthropicBody(req Request, stream bool) ([]byte, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	p := antRequest{Model: req.Model, MaxTokens: req.MaxTokens, Stream: stream}
	if p.MaxTokens == 0 {
		p.MaxTokens = DefaultAnthropicMaxTokens
	}
	if req.System != "" {
		p.System = []antText{{Text: req.System, Type: "text"}}
	}
	// add appends blocks to the last message when it has the same role, else starts a message.
	add := func(role string, blocks []any) {
		if len(blocks) == 0 {
			return
		}
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == role {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, blocks...)
			return
		}
		p.Messages = append(p.Messages, antMessage{Content: blocks, Role: role})
	}
	for _, m := range req.Messages {
		var blocks []any
		switch m.Role {
		case RoleUser:
			add("user", appendText(blocks, m.Text))
		case RoleAssistant:
			blocks = appendText(blocks, m.Text)
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, antToolUse{ID: tc.ID, Input: argumentObject(tc), Name: tc.Name, Type: "tool_use"})
			}
			add("assistant", blocks)
		case RoleTool:
			for _, r := range m.Results {
				tr := antToolResult{ToolUseID: r.CallID, IsError: r.IsError, Type: "tool_result"}
				if r.Content != "" {
					tr.Content = []antText{{Text: r.Content, Type: "text"}}
				}
				blocks = append(blocks, tr)
			}
			add("user", appendText(blocks, m.Text))
		}
	}
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		schema, err := objectSchema(t.Name, schema)
		if err != nil {
			return nil, err
		}
		// Sent as given (A10 and the debug snapshot see exactly this schema).
		p.Tools = append(p.Tools, antTool{InputSchema: schema, Name: t.Name, Description: t.Description})
	}
	return encodeBody(p)
}

// appendText adds a text block unless text is empty (Anthropic rejects empty text blocks).
func appendText(blocks []any, text string) []any {
	if text == "" {
		return blocks
	}
	return append(blocks, antText{Text: text, Type: "text"})
}

// argumentObject is the input of a replayed tool_use block. Anthropic requires an object, so a
// malformed call is replayed as `{}`; its tool result is what tells the model what went wrong.
func argumentObject(tc ToolCall) json.RawMessage {
	if tc.Malformed == "" && len(tc.Arguments) > 0 {
		return tc.Arguments
	}
	if tc.Malformed == "" && tc.RawArguments != "" && json.Valid([]byte(tc.RawArguments)) {
		return json.RawMessage(tc.RawArguments)
	}
	return json.RawMessage(`{}`)
}

// The reply, exactly the fields we read (a message object, and the events of a stream).
type (
	antReply struct {
		ID         text              `json:"id"`
		Type       text              `json:"type"`
		Model      text              `json:"model"`
		Content    bounded[antBlock] `json:"content"`
		StopReason text              `json:"stop_reason"`
		Usage      *antUsage         `json:"usage"`
	}
	antBlock struct {
		Type text `json:"type"`
		// Text is required for a text block; a missing one reads as "".
		Text *string `json:"text"`
		ID   text    `json:"id"`
		Name text    `json:"name"`
		// Input is a tool_use block's input, byte for byte (null and non-objects included:
		// they become a Malformed call, not `{}`).
		Input json.RawMessage `json:"input"`
	}
	antUsage struct {
		InputTokens  *tokens `json:"input_tokens"`
		OutputTokens *tokens `json:"output_tokens"`
	}
	antEvent struct {
		Type         text      `json:"type"`
		Message      *antReply `json:"message"`
		Index        *int64    `json:"index"`
		ContentBlock *antBlock `json:"content_block"`
		Delta        struct {
			Type        text    `json:"type"`
			Text        *string `json:"text"`
			PartialJSON *string `json:"partial_json"`
			StopReason  text    `json:"stop_reason"`
		} `json:"delta"`
		Usage *antUsage `json:"usage"`
		Error struct {
			Type    text `json:"type"`
			Message text `json:"message"`
		} `json:"error"`
	}
)

func (u *antUsage) usage() Usage {
	var out Usage
	if u != nil && u.InputTokens != nil {
		out.InputTokens = int64(*u.InputTokens)
	}
	if u != nil && u.OutputTokens != nil {
		out.OutputTokens = int64(*u.OutputTokens)
	}
	return out
}

func anthropicDecodeJSON(body []byte) (*Response, error) {
	var msg antReply
	if err := decodeReply("the response", body, &msg); err != nil {
		return nil, err
	}
	if msg.Type != "message" {
		return nil, protocolf("the response is not a message object")
	}
	return anthropicResponse(&msg), nil
}

func anthropicResponse(msg *antReply) *Response {
	res := &Response{ID: string(msg.ID), Model: string(msg.Model), Usage: msg.Usage.usage()}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			if b.Text != nil {
				res.Text += *b.Text
			}
		case "tool_use":
			call := ToolCall{ID: string(b.ID), Name: string(b.Name), RawArguments: string(b.Input)}
			if call.ID == "" {
				// The API always sends one; the result must still pair with the call.
				call.ID = "toolu_" + strconv.Itoa(len(res.ToolCalls))
			}
			parseArguments(&call)
			if call.Malformed == "" && strings.TrimSpace(call.RawArguments) == "" {
				// Unlike OpenAI's argument text, a tool_use input is required.
				call.Arguments, call.Malformed = nil, "the tool_use block has no input"
			}
			res.ToolCalls = append(res.ToolCalls, call)
		}
		// Other blocks (thinking, redacted_thinking, server tools) are not supported: dropped.
	}
	switch msg.StopReason {
	case "end_turn", "stop_sequence":
		res.StopReason = StopEnd
	case "tool_use":
		res.StopReason = StopToolCalls
	case "max_tokens", "model_context_window_exceeded":
		res.StopReason = StopMaxTokens
	case "refusal":
		res.StopReason = StopRefusal
	default:
		res.StopReason = clean(string(msg.StopReason), 40)
	}
	return res
}

// antStreamBlock accumulates one content block of a stream.
type antStreamBlock struct {
	block   antBlock
	text    strings.Builder
	partial []byte
	stopped bool
}

// anthropicDecodeStream accumulates a Messages stream: message_start (the message, content
// empty), then per content block a content_block_start, its deltas (text_delta appends text,
// input_json_delta appends the tool input's JSON text) and content_block_stop, then
// message_delta (stop reason, cumulative usage) and message_stop. ping is ignored, an error
// event is the server failing mid-stream, and unknown events and delta types (thinking,
// citations, new ones: the API may add events) are skipped. Events that contradict the
// sequence — a block used before it starts or after it stops, a delta of the wrong kind for
// its block, content before message_start — make the reply a protocol error.
//
// A tool_use block's input is the concatenated partial JSON exactly as streamed (never parsed
// and re-encoded, never replaced by `{}` when it does not parse), or the start block's input
// when no piece came (a tool without parameters).
func anthropicDecodeStream(events *sseReader) (*Response, error) {
	var (
		msg     *antReply
		blocks  []*antStreamBlock
		n       int
		stopped bool
		usage   Usage
	)
	block := func(ev *antEvent, what string) (*antStreamBlock, error) {
		if ev.Index == nil || *ev.Index < 0 || *ev.Index >= int64(len(blocks)) {
			idx := "no index"
			if ev.Index != nil {
				idx = "index " + strconv.FormatInt(*ev.Index, 10)
			}
			return nil, protocolf("stream event %d (%s) is for a content block that has not started (%s)", n, what, idx)
		}
		b := blocks[*ev.Index]
		if b.stopped {
			return nil, protocolf("stream event %d (%s) is for content block %d, which has stopped", n, what, *ev.Index)
		}
		return b, nil
	}
	for !stopped {
		raw, err := events.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		n++
		var ev antEvent
		if err := decodeReply("stream event "+strconv.Itoa(n), bytes.TrimSpace(raw.data), &ev); err != nil {
			return nil, err
		}
		typ := string(ev.Type)
		if typ == "" {
			typ = clean(raw.name, maxEventName)
		}
		if msg == nil && typ != "message_start" && typ != "ping" && typ != "error" {
			if known(typ) {
				return nil, protocolf("stream event %d (%s) came before message_start", n, typ)
			}
			continue
		}
		switch typ {
		case "message_start":
			if msg != nil {
				return nil, protocolf("stream event %d is a second message_start", n)
			}
			if ev.Message == nil || ev.Message.Type != "message" {
				return nil, protocolf("stream event %d (message_start) does not carry a message object", n)
			}
			msg = ev.Message
			usage = msg.Usage.usage()
		case "content_block_start":
			if ev.ContentBlock == nil || ev.Index == nil || *ev.Index != int64(len(blocks)) {
				return nil, protocolf("stream event %d (content_block_start) is not the start of block %d", n, len(blocks))
			}
			if len(blocks) >= maxItems {
				return nil, protocolf("the stream opens more than %d content blocks", maxItems)
			}
			blocks = append(blocks, &antStreamBlock{block: *ev.ContentBlock})
		case "content_block_delta":
			b, err := block(&ev, typ)
			if err != nil {
				return nil, err
			}
			switch ev.Delta.Type {
			case "text_delta":
				if b.block.Type != "text" || ev.Delta.Text == nil {
					return nil, protocolf("stream event %d: a text_delta for a %s block", n, clean(string(b.block.Type), 40))
				}
				b.text.WriteString(*ev.Delta.Text)
			case "input_json_delta":
				if b.block.Type != "tool_use" || ev.Delta.PartialJSON == nil {
					return nil, protocolf("stream event %d: an input_json_delta for a %s block", n, clean(string(b.block.Type), 40))
				}
				b.partial = append(b.partial, *ev.Delta.PartialJSON...)
			}
		case "content_block_stop":
			b, err := block(&ev, typ)
			if err != nil {
				return nil, err
			}
			b.stopped = true
		case "message_delta":
			if ev.Delta.StopReason != "" {
				msg.StopReason = ev.Delta.StopReason
			}
			// Usage here is cumulative: output tokens so far, and (newer API versions) input.
			if ev.Usage != nil && ev.Usage.OutputTokens != nil {
				usage.OutputTokens = int64(*ev.Usage.OutputTokens)
			}
			if ev.Usage != nil && ev.Usage.InputTokens != nil && *ev.Usage.InputTokens > 0 {
				usage.InputTokens = int64(*ev.Usage.InputTokens)
			}
		case "message_stop":
			stopped = true
		case "error":
			return nil, &eventError{api: apiError{message: string(ev.Error.Message), typ: string(ev.Error.Type)}}
		}
	}
	if !stopped {
		return nil, protocolf("the stream ended before message_stop")
	}
	msg.Content = msg.Content[:0]
	for _, b := range blocks {
		bl := b.block
		switch bl.Type {
		case "text":
			s := bl.deref() + b.text.String()
			bl.Text = &s
		case "tool_use":
			if len(bytes.TrimSpace(b.partial)) > 0 {
				bl.Input = b.partial
			}
		}
		msg.Content = append(msg.Content, bl)
	}
	res := anthropicResponse(msg)
	res.Usage = usage
	return res, nil
}

func (b antBlock) deref() string {
	if b.Text == nil {
		return ""
	}
	return *b.Text
}

// known lists the stream events of the Messages API.
func known(typ string) bool {
	switch typ {
	case "message_start", "content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop", "ping", "error":
		return true
	}
	return false
}

// anthropicErrorBody reads an error response: `{"type":"error","error":{"type","message"}}`.
func anthropicErrorBody(body []byte) apiError {
	var b struct {
		Error struct {
			Type    text `json:"type"`
			Message text `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil {
		return apiError{}
	}
	return apiError{message: string(b.Error.Message), typ: string(b.Error.Type)}
}
