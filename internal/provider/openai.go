package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
)

// openaiClient speaks Chat Completions, the dialect OpenAI, Ollama, vLLM and llama.cpp share.
type openaiClient struct {
	s   settings
	svc openai.ChatCompletionService
}

func newOpenAI(s settings) *openaiClient {
	// The service is built without openai.NewClient on purpose: NewClient reads OPENAI_API_KEY,
	// OPENAI_BASE_URL, OPENAI_CUSTOM_HEADERS… from the environment, and a key meant for
	// api.openai.com must never be sent to a local server configured without one.
	opts := []option.RequestOption{
		option.WithBaseURL(s.BaseURL),
		option.WithHTTPClient(s.HTTPClient),
		option.WithMaxRetries(s.MaxRetries),
		option.WithMaxRetryDelay(s.MaxRetryDelay),
		option.WithRequestTimeout(s.Timeout),
	}
	if s.APIKey != "" {
		opts = append(opts, option.WithAPIKey(s.APIKey))
	}
	return &openaiClient{s: s, svc: openai.NewChatCompletionService(opts...)}
}

func (c *openaiClient) Provider() string { return OpenAI }

func (c *openaiClient) Complete(parent context.Context, req Request) (*Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := c.complete(parent, req)
		// openai-go stops retrying when an attempt runs out of its own timeout (its retry loop
		// sees the request context's deadline); the Anthropic SDK retries those. Retry them here,
		// within the same MaxRetries.
		var pe *Error
		timeout := errors.As(err, &pe) && pe.Kind == KindTimeout
		if !timeout || attempt >= c.s.MaxRetries || parent.Err() != nil {
			if pe != nil && attempt > 0 {
				pe.Attempts += attempt
			}
			return resp, err
		}
	}
}

// complete takes extra SDK options for tests that alter the body after rendering.
func (c *openaiClient) complete(parent context.Context, req Request, extra ...option.RequestOption) (*Response, error) {
	params, err := openaiParams(req, c.s.Stream)
	if err != nil {
		return nil, err
	}
	k := newCall(&c.s, OpenAI, req.Model)
	ctx, done := k.start(parent)
	defer done()
	opts := append([]option.RequestOption{option.WithMiddleware(k.middleware)}, extra...)

	var comp *openai.ChatCompletion
	if c.s.Stream {
		st := c.svc.NewStreaming(ctx, params, opts...)
		var acc openai.ChatCompletionAccumulator
		chunks := 0
		for st.Next() {
			chunks++
			if !acc.AddChunk(st.Current()) {
				_ = st.Close()
				return nil, k.protocol(fmt.Sprintf("stream chunk %d cannot be accumulated (bad choice or tool-call index)", chunks))
			}
		}
		err := st.Err()
		_ = st.Close()
		if err != nil {
			return nil, k.fail(parent, err, openaiAPIError)
		}
		if chunks == 0 {
			return nil, k.protocol("the stream carried no chunks")
		}
		comp = &acc.ChatCompletion
		if len(comp.Choices) > 0 && comp.Choices[0].FinishReason == "" {
			return nil, k.protocol("the stream ended before the model finished (no finish_reason)")
		}
	} else {
		comp, err = c.svc.New(ctx, params, opts...)
		if err != nil {
			return nil, k.fail(parent, err, openaiAPIError)
		}
	}
	if comp == nil || len(comp.Choices) == 0 {
		return nil, k.protocol("the response has no choices")
	}
	res := openaiResponse(comp)
	k.mu.Lock()
	if k.header != nil {
		res.RequestID = clean(requestID(k.header), 100)
	}
	k.mu.Unlock()
	return res, nil
}

func openaiAPIError(err error) (apiError, bool) {
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		// An error event inside a 200 stream: the server failed part-way through.
		var ev struct {
			Error struct {
				Type string `json:"type"`
			} `json:"error"`
		}
		_ = json.Unmarshal(se.Event.Data, &ev)
		typ := ev.Error.Type
		if typ == "" {
			typ = "server_error"
		}
		return apiError{message: errorMessage(se.Event.Data), typ: typ}, true
	}
	var e *openai.Error
	if !errors.As(err, &e) {
		return apiError{}, false
	}
	typ := e.Code
	if typ == "" {
		typ = e.Type
	}
	return apiError{status: e.StatusCode, message: e.Message, typ: typ}, true
}

// openaiParams renders a Request with the SDK's own request types.
func openaiParams(req Request, stream bool) (openai.ChatCompletionNewParams, error) {
	var p openai.ChatCompletionNewParams
	if err := checkRequest(req); err != nil {
		return p, err
	}
	p.Model = req.Model
	if req.MaxTokens > 0 {
		p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	}
	if stream {
		p.StreamOptions.IncludeUsage = openai.Bool(true)
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Text))
		case RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Text != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      tc.Name,
							Arguments: argumentText(tc),
						},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case RoleTool:
			for _, r := range m.Results {
				p.Messages = append(p.Messages, openai.ToolMessage(r.Content, r.CallID))
			}
			if m.Text != "" {
				p.Messages = append(p.Messages, openai.UserMessage(m.Text))
			}
		}
	}
	for _, t := range req.Tools {
		fd := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		if len(t.InputSchema) > 0 {
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(t.InputSchema, &fields); err != nil || fields == nil {
				return p, fmt.Errorf("provider: tool %q: input schema is not a JSON object", t.Name)
			}
			// Raw values keep the schema's numbers and nested key order exactly as given.
			fd.Parameters = make(shared.FunctionParameters, len(fields))
			for k, v := range fields {
				fd.Parameters[k] = v
			}
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	return p, nil
}

// argumentText is what the model sent, replayed verbatim (even when malformed: the history must
// show the model its own call, and the tool result says what was wrong with it).
func argumentText(tc ToolCall) string {
	switch {
	case tc.RawArguments != "":
		return tc.RawArguments
	case len(tc.Arguments) > 0:
		return string(tc.Arguments)
	}
	return "{}"
}

func openaiResponse(comp *openai.ChatCompletion) *Response {
	ch := comp.Choices[0]
	res := &Response{
		ID:    comp.ID,
		Model: comp.Model,
		Text:  ch.Message.Content,
		Usage: Usage{InputTokens: comp.Usage.PromptTokens, OutputTokens: comp.Usage.CompletionTokens},
	}
	for i, tc := range ch.Message.ToolCalls {
		call := ToolCall{ID: tc.ID, Name: tc.Function.Name, RawArguments: tc.Function.Arguments}
		if tc.Type == "custom" {
			call.Name, call.RawArguments = tc.Custom.Name, tc.Custom.Input
		}
		if call.ID == "" {
			// Some OpenAI-compatible servers omit ids; the result must still pair with the call.
			call.ID = "call_" + strconv.Itoa(i)
		}
		parseArguments(&call)
		res.ToolCalls = append(res.ToolCalls, call)
	}
	switch ch.FinishReason {
	case "stop":
		res.StopReason = StopEnd
	case "tool_calls", "function_call":
		res.StopReason = StopToolCalls
	case "length":
		res.StopReason = StopMaxTokens
	case "content_filter":
		res.StopReason = StopRefusal
	default:
		res.StopReason = clean(ch.FinishReason, 40)
	}
	if res.Text == "" && ch.Message.Refusal != "" {
		res.Text, res.StopReason = ch.Message.Refusal, StopRefusal
	}
	// Some servers (older Ollama) say "stop" when the turn ends in tool calls.
	if len(res.ToolCalls) > 0 && res.StopReason == StopEnd {
		res.StopReason = StopToolCalls
	}
	return res
}
