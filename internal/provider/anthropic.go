package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
)

// anthropicClient speaks the Anthropic Messages API.
type anthropicClient struct {
	s   settings
	svc anthropic.MessageService
}

func newAnthropic(s settings) *anthropicClient {
	opts := []option.RequestOption{
		// No ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL or profile files: Options is the only source.
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(s.BaseURL),
		option.WithHTTPClient(s.HTTPClient),
		option.WithMaxRetries(s.MaxRetries),
		option.WithRequestTimeout(s.Timeout),
	}
	if s.APIKey != "" {
		opts = append(opts, option.WithAPIKey(s.APIKey))
	}
	cl := anthropic.NewClient(opts...)
	return &anthropicClient{s: s, svc: cl.Messages}
}

func (c *anthropicClient) Provider() string { return Anthropic }

func (c *anthropicClient) Complete(parent context.Context, req Request) (*Response, error) {
	return c.complete(parent, req)
}

// complete takes extra SDK options for tests that alter the body after rendering.
func (c *anthropicClient) complete(parent context.Context, req Request, extra ...option.RequestOption) (*Response, error) {
	params, err := anthropicParams(req)
	if err != nil {
		return nil, err
	}
	k := newCall(&c.s, Anthropic, req.Model)
	ctx, done := k.start(parent)
	defer done()
	opts := append([]option.RequestOption{option.WithMiddleware(k.middleware)}, extra...)

	var msg *anthropic.Message
	if c.s.Stream {
		st := c.svc.NewStreaming(ctx, params, opts...)
		var acc anthropic.Message
		// The SDK's accumulator replaces tool input that does not parse with `{}`; the raw
		// partial JSON is kept here so a malformed call is reported, not silently emptied.
		inputs := map[int64][]byte{}
		events, stopped := 0, false
		for st.Next() {
			ev := st.Current()
			events++
			if ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta" {
				inputs[ev.Index] = append(inputs[ev.Index], ev.Delta.PartialJSON...)
			}
			if err := acc.Accumulate(ev); err != nil {
				_ = st.Close()
				return nil, k.protocol(fmt.Sprintf("stream event %d (%s): %v", events, ev.Type, err))
			}
			stopped = stopped || ev.Type == "message_stop"
		}
		err := st.Err()
		_ = st.Close()
		if err != nil {
			return nil, k.fail(parent, err, anthropicAPIError)
		}
		if !stopped {
			return nil, k.protocol("the stream ended before message_stop")
		}
		for i, raw := range inputs {
			if i >= 0 && i < int64(len(acc.Content)) && acc.Content[i].Type == "tool_use" {
				acc.Content[i].Input = raw
			}
		}
		msg = &acc
	} else {
		msg, err = c.svc.New(ctx, params, opts...)
		if err != nil {
			return nil, k.fail(parent, err, anthropicAPIError)
		}
	}
	if msg == nil || msg.Type != "message" {
		return nil, k.protocol("the response is not a message object")
	}
	res := anthropicResponse(msg)
	k.mu.Lock()
	if k.header != nil {
		res.RequestID = clean(requestID(k.header), 100)
	}
	k.mu.Unlock()
	return res, nil
}

func anthropicAPIError(err error) (apiError, bool) {
	var e *anthropic.Error
	if !errors.As(err, &e) {
		return apiError{}, false
	}
	return apiError{status: e.StatusCode, message: e.Message, typ: string(e.Type())}, true
}

// anthropicParams renders a Request with the SDK's request types. Anthropic wants tool results
// as tool_result blocks in a user message; consecutive messages of one role are merged into one
// message, so tool results followed by user text stay a single well-formed user turn.
func anthropicParams(req Request) (anthropic.MessageNewParams, error) {
	var p anthropic.MessageNewParams
	if err := checkRequest(req); err != nil {
		return p, err
	}
	p.Model = anthropic.Model(req.Model)
	p.MaxTokens = int64(req.MaxTokens)
	if p.MaxTokens == 0 {
		p.MaxTokens = DefaultAnthropicMaxTokens
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	// add appends blocks to the last message when it has the same role, else starts a message.
	add := func(user bool, blocks ...anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(p.Messages); n > 0 {
			last := &p.Messages[n-1]
			if user && last.OfUser != nil {
				last.OfUser.Content = append(last.OfUser.Content, blocks...)
				return
			}
			if !user && last.OfAssistant != nil {
				last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
				return
			}
		}
		if user {
			p.Messages = append(p.Messages, anthropic.NewUserMessage(blocks...))
		} else {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
		}
	}
	for _, m := range req.Messages {
		var blocks []anthropic.ContentBlockParamUnion
		switch m.Role {
		case RoleUser:
			blocks = appendText(blocks, m.Text)
			add(true, blocks...)
		case RoleAssistant:
			blocks = appendText(blocks, m.Text)
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, json.RawMessage(argumentObject(tc)), tc.Name))
			}
			add(false, blocks...)
		case RoleTool:
			for _, r := range m.Results {
				tr := anthropic.ToolResultBlockParam{ToolUseID: r.CallID}
				if r.Content != "" {
					tr.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: r.Content}}}
				}
				if r.IsError {
					tr.IsError = anthropic.Bool(true)
				}
				blocks = append(blocks, anthropic.ContentBlockParamUnion{OfToolResult: &tr})
			}
			blocks = appendText(blocks, m.Text)
			add(true, blocks...)
		}
	}
	for _, t := range req.Tools {
		tp := anthropic.ToolParam{Name: t.Name}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(schema, &fields); err != nil || fields == nil {
			return p, fmt.Errorf("provider: tool %q: input schema is not a JSON object", t.Name)
		}
		// Sent byte for byte as given (A10 and the debug snapshot see exactly this schema).
		param.SetJSON(schema, &tp.InputSchema)
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	return p, nil
}

// appendText adds a text block unless text is empty (Anthropic rejects empty text blocks).
func appendText(blocks []anthropic.ContentBlockParamUnion, text string) []anthropic.ContentBlockParamUnion {
	if text == "" {
		return blocks
	}
	return append(blocks, anthropic.NewTextBlock(text))
}

// argumentObject is the input of a replayed tool_use block. Anthropic requires an object, so a
// malformed call is replayed as `{}`; its tool result is what tells the model what went wrong.
func argumentObject(tc ToolCall) []byte {
	if tc.Malformed == "" && len(tc.Arguments) > 0 {
		return tc.Arguments
	}
	if tc.Malformed == "" && tc.RawArguments != "" && json.Valid([]byte(tc.RawArguments)) {
		return []byte(tc.RawArguments)
	}
	return []byte(`{}`)
}

func anthropicResponse(msg *anthropic.Message) *Response {
	res := &Response{
		ID:    msg.ID,
		Model: string(msg.Model),
		Usage: Usage{InputTokens: msg.Usage.InputTokens, OutputTokens: msg.Usage.OutputTokens},
	}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			res.Text += b.Text
		case "tool_use":
			raw := string(b.Input)
			if raw == "" {
				raw = b.JSON.Input.Raw() // the SDK leaves Input empty for `"input": null`
			}
			call := ToolCall{ID: b.ID, Name: b.Name, RawArguments: raw}
			parseArguments(&call)
			if call.Malformed == "" && strings.TrimSpace(raw) == "" {
				// Unlike OpenAI's argument text, a tool_use input is required.
				call.Arguments, call.Malformed = nil, "the tool_use block has no input"
			}
			res.ToolCalls = append(res.ToolCalls, call)
		}
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
