package provider

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// openaiClient speaks Chat Completions (POST <base>/chat/completions), the dialect OpenAI,
// Ollama, vLLM and llama.cpp share.
type openaiClient struct {
	s      settings
	url    string
	header http.Header
}

func newOpenAI(s settings) *openaiClient {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", userAgent)
	h.Set("Accept", "application/json")
	if s.Stream {
		h.Set("Accept", "text/event-stream")
	}
	// Only the key the caller passed is sent: OPENAI_API_KEY in the environment is never read
	// here, so a key meant for api.openai.com cannot reach a local server configured without one.
	if s.APIKey != "" {
		h.Set("Authorization", "Bearer "+s.APIKey)
	}
	return &openaiClient{s: s, url: s.base.JoinPath("chat", "completions").String(), header: h}
}

func (c *openaiClient) Provider() string { return OpenAI }

func (c *openaiClient) Complete(ctx context.Context, req Request) (*Response, error) {
	return c.complete(ctx, req)
}

var openaiWire = wire{decodeJSON: openaiDecodeJSON, decodeStream: openaiDecodeStream, errorBody: openaiErrorBody}

// complete takes edits for tests that alter the body after rendering.
func (c *openaiClient) complete(ctx context.Context, req Request, edits ...func([]byte) []byte) (*Response, error) {
	body, err := openaiBody(req, c.s.Stream)
	if err != nil {
		return nil, err
	}
	return newCall(&c.s, OpenAI, req.Model).post(ctx, c.url, c.header, body, c.s.Stream, openaiWire, edits...)
}

// The request, exactly the fields we send. Field order is the order on the wire.
type (
	oaiRequest struct {
		Messages            []oaiMessage   `json:"messages"`
		Model               string         `json:"model"`
		MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
		StreamOptions       *oaiStreamOpts `json:"stream_options,omitempty"`
		Tools               []oaiTool      `json:"tools,omitempty"`
		Stream              bool           `json:"stream,omitempty"`
	}
	oaiStreamOpts struct {
		IncludeUsage bool `json:"include_usage"`
	}
	oaiMessage struct {
		Content    *string       `json:"content,omitempty"`
		ToolCalls  []oaiCallSent `json:"tool_calls,omitempty"`
		ToolCallID string        `json:"tool_call_id,omitempty"`
		Role       string        `json:"role"`
	}
	oaiCallSent struct {
		ID       string `json:"id"`
		Function struct {
			Arguments string `json:"arguments"`
			Name      string `json:"name"`
		} `json:"function"`
		Type string `json:"type"`
	}
	oaiTool struct {
		Function oaiFunction `json:"function"`
		Type     string      `json:"type"`
	}
	oaiFunction struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
)

// openaiBody renders a Request as a chat completions body.
func openaiBody(req Request, stream bool) ([]byte, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	p := oaiRequest{Model: req.Model, MaxCompletionTokens: req.MaxTokens, Stream: stream}
	if stream {
		p.StreamOptions = &oaiStreamOpts{IncludeUsage: true}
	}
	str := func(s string) *string { return &s }
	if req.System != "" {
		p.Messages = append(p.Messages, oaiMessage{Role: "system", Content: str(req.System)})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			p.Messages = append(p.Messages, oaiMessage{Role: "user", Content: str(m.Text)})
		case RoleAssistant:
			a := oaiMessage{Role: "assistant"}
			if m.Text != "" || len(m.ToolCalls) == 0 {
				a.Content = str(m.Text)
			}
			for _, tc := range m.ToolCalls {
				var call oaiCallSent
				call.ID, call.Type = tc.ID, "function"
				call.Function.Name, call.Function.Arguments = tc.Name, argumentText(tc)
				a.ToolCalls = append(a.ToolCalls, call)
			}
			p.Messages = append(p.Messages, a)
		case RoleTool:
			for _, r := range m.Results {
				p.Messages = append(p.Messages, oaiMessage{Role: "tool", Content: str(r.Content), ToolCallID: r.CallID})
			}
			if m.Text != "" {
				p.Messages = append(p.Messages, oaiMessage{Role: "user", Content: str(m.Text)})
			}
		}
	}
	for _, t := range req.Tools {
		fn := oaiFunction{Name: t.Name, Description: t.Description}
		if len(t.InputSchema) > 0 {
			schema, err := objectSchema(t.Name, t.InputSchema)
			if err != nil {
				return nil, err
			}
			fn.Parameters = schema
		}
		p.Tools = append(p.Tools, oaiTool{Function: fn, Type: "function"})
	}
	return encodeBody(p)
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

// The reply, exactly the fields we read (chat.completion and chat.completion.chunk).
type (
	oaiCompletion struct {
		ID      text               `json:"id"`
		Model   text               `json:"model"`
		Choices bounded[oaiChoice] `json:"choices"`
		Usage   *oaiUsage          `json:"usage"`
	}
	oaiChoice struct {
		Index        *int64   `json:"index"`
		Reply        oaiReply `json:"message"`
		Delta        oaiReply `json:"delta"`
		FinishReason text     `json:"finish_reason"`
	}
	// oaiReply is a choice's message, or (in a chunk) its delta.
	oaiReply struct {
		Content   oaiContent       `json:"content"`
		Refusal   text             `json:"refusal"`
		ToolCalls bounded[oaiCall] `json:"tool_calls"`
	}
	oaiCall struct {
		// Index orders the calls of a stream; absent in a complete message.
		Index    *int64 `json:"index"`
		ID       text   `json:"id"`
		Type     text   `json:"type"`
		Function struct {
			Name      text    `json:"name"`
			Arguments argText `json:"arguments"`
		} `json:"function"`
		Custom struct {
			Name  text    `json:"name"`
			Input argText `json:"input"`
		} `json:"custom"`
	}
	oaiUsage struct {
		PromptTokens     tokens `json:"prompt_tokens"`
		CompletionTokens tokens `json:"completion_tokens"`
	}
	// oaiChunk is one event of a stream: a chat.completion.chunk, or an error object.
	oaiChunk struct {
		oaiCompletion
		Error  json.RawMessage `json:"error"`
		Object text            `json:"object"`
	}
)

// oaiContent is a message's content: a string, null, or (from some compatible servers) an
// array of text parts, whose texts are joined. Other part types are not text and are dropped.
type oaiContent string

func (c *oaiContent) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*c = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = oaiContent(s)
	default:
		var parts bounded[struct {
			Type text `json:"type"`
			Text text `json:"text"`
		}]
		if err := json.Unmarshal(b, &parts); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return errors.New("content is neither a string nor an array of parts")
			}
			return err
		}
		var sb strings.Builder
		for _, p := range parts {
			if p.Type == "text" || p.Type == "output_text" {
				sb.WriteString(string(p.Text))
			}
		}
		*c = oaiContent(sb.String())
	}
	return nil
}

func openaiDecodeJSON(body []byte) (*Response, error) {
	var comp oaiCompletion
	if err := decodeReply("the response", body, &comp); err != nil {
		return nil, err
	}
	if len(comp.Choices) == 0 {
		return nil, protocolf("the response has no choices")
	}
	ch := comp.Choices[0]
	res := &Response{ID: string(comp.ID), Model: string(comp.Model), Text: string(ch.Reply.Content)}
	if comp.Usage != nil {
		res.Usage = Usage{InputTokens: int64(comp.Usage.PromptTokens), OutputTokens: int64(comp.Usage.CompletionTokens)}
	}
	for i, tc := range ch.Reply.ToolCalls {
		res.ToolCalls = append(res.ToolCalls, openaiCall(i, string(tc.ID), string(tc.Type), string(tc.Function.Name),
			string(tc.Function.Arguments), string(tc.Custom.Name), string(tc.Custom.Input)))
	}
	openaiFinish(res, string(ch.FinishReason), string(ch.Reply.Refusal))
	return res, nil
}

// openaiCall builds a ToolCall from what the server sent (a custom tool's input is its text).
func openaiCall(i int, id, typ, name, args, customName, customInput string) ToolCall {
	call := ToolCall{ID: id, Name: name, RawArguments: args}
	if typ == "custom" {
		call.Name, call.RawArguments = customName, customInput
	}
	if call.ID == "" {
		// Some OpenAI-compatible servers omit ids; the result must still pair with the call.
		call.ID = "call_" + strconv.Itoa(i)
	}
	parseArguments(&call)
	return call
}

// openaiFinish maps the finish reason and a refusal.
func openaiFinish(res *Response, finish, refusal string) {
	switch finish {
	case "stop":
		res.StopReason = StopEnd
	case "tool_calls", "function_call":
		res.StopReason = StopToolCalls
	case "length":
		res.StopReason = StopMaxTokens
	case "content_filter":
		res.StopReason = StopRefusal
	default:
		res.StopReason = clean(finish, 40)
	}
	if res.Text == "" && refusal != "" {
		res.Text, res.StopReason = refusal, StopRefusal
	}
	// Some servers (older Ollama) say "stop" when the turn ends in tool calls.
	if len(res.ToolCalls) > 0 && res.StopReason == StopEnd {
		res.StopReason = StopToolCalls
	}
}

// oaiStreamCall accumulates one tool call of a stream.
type oaiStreamCall struct {
	index       int64
	id, typ     string
	name        string
	args        strings.Builder
	customName  string
	customInput strings.Builder
}

// openaiDecodeStream accumulates chat.completion.chunk events until `data: [DONE]` (or the end
// of the body): the first choice's content and refusal deltas in order, tool calls by their
// index (a call is opened by its first delta, and its argument pieces are joined), the last
// finish reason and the last usage (servers that report usage on every chunk report running
// totals). An `error` object instead of a chunk is the server failing mid-stream.
func openaiDecodeStream(events *sseReader) (*Response, error) {
	var (
		res      Response
		content  strings.Builder
		refusal  strings.Builder
		finish   string
		chunks   int
		choices  bool
		calls    []*oaiStreamCall
		byIndex  = map[int64]*oaiStreamCall{}
		maxIndex = int64(-1)
	)
	for {
		ev, err := events.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		data := bytes.TrimSpace(ev.data)
		if string(data) == "[DONE]" {
			break
		}
		chunks++
		var ch oaiChunk
		if err := decodeReply("stream chunk "+strconv.Itoa(chunks), data, &ch); err != nil {
			return nil, err
		}
		if (len(ch.Error) > 0 && string(ch.Error) != "null") || ch.Object == "error" {
			return nil, &eventError{api: openaiStreamError(data)}
		}
		if res.ID == "" {
			res.ID = string(ch.ID)
		}
		if res.Model == "" {
			res.Model = string(ch.Model)
		}
		if ch.Usage != nil {
			res.Usage = Usage{InputTokens: int64(ch.Usage.PromptTokens), OutputTokens: int64(ch.Usage.CompletionTokens)}
		}
		for _, c := range ch.Choices {
			if c.Index != nil && *c.Index != 0 {
				continue // we ask for one choice; others are not ours to merge
			}
			choices = true
			content.WriteString(string(c.Delta.Content))
			refusal.WriteString(string(c.Delta.Refusal))
			if c.FinishReason != "" {
				finish = string(c.FinishReason)
			}
			for _, d := range c.Delta.ToolCalls {
				var sc *oaiStreamCall
				switch {
				case d.Index != nil && *d.Index < 0:
					return nil, protocolf("stream chunk %d has tool-call index %d", chunks, *d.Index)
				case d.Index != nil:
					sc = byIndex[*d.Index]
					if sc == nil {
						sc = &oaiStreamCall{index: *d.Index}
					}
				case len(calls) > 0 && (d.ID == "" || string(d.ID) == calls[len(calls)-1].id):
					// No index (some servers): a delta without a new id continues the last call.
					sc = calls[len(calls)-1]
				default:
					sc = &oaiStreamCall{index: maxIndex + 1}
				}
				if byIndex[sc.index] == nil {
					if len(calls) >= maxItems {
						return nil, protocolf("the stream opens more than %d tool calls", maxItems)
					}
					byIndex[sc.index] = sc
					calls = append(calls, sc)
					maxIndex = max(maxIndex, sc.index)
				}
				if sc.id == "" {
					sc.id = string(d.ID)
				}
				if sc.typ == "" {
					sc.typ = string(d.Type)
				}
				sc.name = joinName(sc.name, string(d.Function.Name))
				sc.args.WriteString(string(d.Function.Arguments))
				sc.customName = joinName(sc.customName, string(d.Custom.Name))
				sc.customInput.WriteString(string(d.Custom.Input))
			}
		}
	}
	switch {
	case chunks == 0:
		return nil, protocolf("the stream carried no chunks")
	case !choices:
		return nil, protocolf("the response has no choices")
	case finish == "":
		return nil, protocolf("the stream ended before the model finished (no finish_reason)")
	}
	res.Text = content.String()
	slices.SortStableFunc(calls, func(a, b *oaiStreamCall) int { return cmp.Compare(a.index, b.index) })
	for i, sc := range calls {
		res.ToolCalls = append(res.ToolCalls, openaiCall(i, sc.id, sc.typ, sc.name, sc.args.String(), sc.customName, sc.customInput.String()))
	}
	openaiFinish(&res, finish, refusal.String())
	return &res, nil
}

// joinName adds a streamed name piece. OpenAI sends a call's name once; some compatible
// servers repeat it on every delta, which must not double it.
func joinName(name, piece string) string {
	if piece == "" || piece == name {
		return name
	}
	return name + piece
}

// openaiStreamError reads an error event: OpenAI's `{"error":{…}}` or vLLM's `{"object":
// "error", "message": …, "type": …}`.
func openaiStreamError(data []byte) apiError {
	var ev struct {
		Error struct {
			Type text `json:"type"`
		} `json:"error"`
		Type text `json:"type"`
	}
	_ = json.Unmarshal(data, &ev)
	typ := string(ev.Error.Type)
	if typ == "" {
		typ = string(ev.Type)
	}
	if typ == "" {
		typ = "server_error"
	}
	return apiError{message: errorMessage(data), typ: typ}
}

// openaiErrorBody reads an error response: `{"error":{"message","type","code"}}`. The code
// (e.g. "invalid_api_key") says more than the type when there is one.
func openaiErrorBody(body []byte) apiError {
	var b struct {
		Error struct {
			Message text            `json:"message"`
			Type    text            `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil {
		return apiError{}
	}
	typ := string(b.Error.Type)
	var code string
	if json.Unmarshal(b.Error.Code, &code) == nil && code != "" {
		typ = code
	}
	return apiError{message: string(b.Error.Message), typ: typ}
}
