package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

type oaiMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID *string         `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string  `json:"name"`
			Arguments *string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type oaiBody struct {
	Model               *string         `json:"model"`
	Messages            []oaiMessage    `json:"messages"`
	Stream              bool            `json:"stream"`
	StreamOptions       json.RawMessage `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Tools               []struct {
		Type     string `json:"type"`
		Function *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

// parseOpenAI parses and validates a chat completions body as api.openai.com would.
func parseOpenAI(body []byte, req *Request) error {
	var b oaiBody
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&b); err != nil {
		return reject("We could not parse the JSON body of your request: %v", err)
	}
	if b.Model == nil || *b.Model == "" {
		return reject("you must provide a model parameter")
	}
	req.Model, req.Stream = *b.Model, b.Stream
	if len(b.StreamOptions) > 0 && string(b.StreamOptions) != "null" {
		if !b.Stream {
			return reject("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
		}
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if err := json.Unmarshal(b.StreamOptions, &so); err != nil {
			return reject("Invalid 'stream_options': %v", err)
		}
		req.includeUsage = so.IncludeUsage
	}
	if b.MaxTokens != nil && b.MaxCompletionTokens != nil {
		return reject("max_tokens and max_completion_tokens cannot both be set")
	}
	for _, v := range []*int{b.MaxTokens, b.MaxCompletionTokens} {
		if v != nil {
			if *v < 1 {
				return reject("max_completion_tokens must be at least 1")
			}
			req.MaxTokens = *v
		}
	}
	for i, t := range b.Tools {
		if t.Type != "function" || t.Function == nil {
			return reject("tools[%d]: only function tools are scripted (type %q)", i, t.Type)
		}
		if !toolNameRE.MatchString(t.Function.Name) {
			return reject("Invalid 'tools[%d].function.name': string does not match pattern '^[a-zA-Z0-9_-]{1,64}$'", i)
		}
		if len(t.Function.Parameters) > 0 && !isObject(t.Function.Parameters) {
			return reject("Invalid 'tools[%d].function.parameters': expected an object", i)
		}
		req.Tools = append(req.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Schema: t.Function.Parameters})
	}
	if len(b.Messages) == 0 {
		return reject("'messages' must contain at least one message")
	}
	pending := map[string]bool{} // calls of the last assistant message not answered yet
	var order []string
	for i, m := range b.Messages {
		if m.Role != "tool" && len(pending) > 0 {
			return reject("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(unanswered(order, pending), ", "))
		}
		text, err := oaiText(m.Content)
		if err != nil {
			return reject("messages[%d].content: %v", i, err)
		}
		switch m.Role {
		case "system", "developer":
			if req.System != "" {
				req.System += "\n"
			}
			req.System += text
		case "user":
			req.Messages = append(req.Messages, Message{Role: "user", Text: text})
		case "assistant":
			if m.Content == nil && len(m.ToolCalls) == 0 {
				return reject("messages[%d]: an assistant message needs content or tool_calls", i)
			}
			msg := Message{Role: "assistant", Text: text}
			order = order[:0]
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Type != "function" || tc.Function.Name == "" || tc.Function.Arguments == nil {
					return reject("messages[%d].tool_calls[%d]: id, type \"function\", function.name and function.arguments are required", i, j)
				}
				pending[tc.ID] = true
				order = append(order, tc.ID)
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: *tc.Function.Arguments})
			}
			req.Messages = append(req.Messages, msg)
		case "tool":
			if m.ToolCallID == nil || !pending[*m.ToolCallID] {
				id := ""
				if m.ToolCallID != nil {
					id = *m.ToolCallID
				}
				return reject("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages[%d], tool_call_id %q).", i, id)
			}
			delete(pending, *m.ToolCallID)
			res := ToolResult{CallID: *m.ToolCallID, Content: text}
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "tool" {
				req.Messages[n-1].Results = append(req.Messages[n-1].Results, res)
			} else {
				req.Messages = append(req.Messages, Message{Role: "tool", Results: []ToolResult{res}})
			}
		default:
			return reject("Invalid value for 'messages[%d].role': %q", i, m.Role)
		}
	}
	if len(pending) > 0 {
		return reject("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(unanswered(order, pending), ", "))
	}
	return nil
}

func unanswered(order []string, pending map[string]bool) []string {
	var out []string
	for _, id := range order {
		if pending[id] {
			out = append(out, id)
		}
	}
	return out
}

// oaiText reads a content field: a string, null, or an array of text parts.
func oaiText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", reject("expected a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", reject("only text parts are scripted (got %q)", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

func finishReason(rep Reply, provider string) string {
	if rep.StopReason != "" {
		return rep.StopReason
	}
	if provider == Anthropic {
		if len(rep.ToolCalls) > 0 {
			return "tool_use"
		}
		return "end_turn"
	}
	if len(rep.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func openaiCompletion(req *Request, rep Reply) map[string]any {
	in, out := usage(req, rep)
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "annotations": []any{}}
	if rep.Text != "" || len(rep.ToolCalls) == 0 {
		msg["content"] = rep.Text
	}
	if len(rep.ToolCalls) > 0 {
		var calls []any
		for _, c := range rep.ToolCalls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id": fmt.Sprintf("chatcmpl-scripted-%d", req.N), "object": "chat.completion", "created": time.Now().Unix(),
		"model": req.Model, "system_fingerprint": "fp_scripted", "service_tier": "default",
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finishReason(rep, OpenAI)}},
		"usage":   map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	}
}

func openaiStream(st *streamer, req *Request, rep Reply) {
	in, out := usage(req, rep)
	includeUsage := req.includeUsage
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) map[string]any {
		c := map[string]any{"id": fmt.Sprintf("chatcmpl-scripted-%d", req.N), "object": "chat.completion.chunk", "created": created,
			"model": req.Model, "system_fingerprint": "fp_scripted",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
		if includeUsage {
			c["usage"] = nil
		}
		return c
	}
	st.event("", chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil))
	for _, p := range pieces(rep.Text, piece) {
		st.event("", chunk(map[string]any{"content": p}, nil))
	}
	for i, c := range rep.ToolCalls {
		st.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil))
		for _, p := range pieces(c.Arguments, piece) {
			st.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil))
		}
	}
	switch {
	case rep.StreamError != "":
		typ := rep.ErrorType
		if typ == "" {
			typ = "server_error"
		}
		st.event("", map[string]any{"error": map[string]any{"message": rep.StreamError, "type": typ, "param": nil, "code": nil}})
		return
	case rep.Truncate:
		st.start()
		return
	}
	st.event("", chunk(map[string]any{}, finishReason(rep, OpenAI)))
	if includeUsage {
		st.event("", map[string]any{"id": fmt.Sprintf("chatcmpl-scripted-%d", req.N), "object": "chat.completion.chunk", "created": created,
			"model": req.Model, "system_fingerprint": "fp_scripted", "choices": []any{},
			"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}})
	}
	st.event("", "[DONE]")
}
