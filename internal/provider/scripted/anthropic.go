package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

type antBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   *bool           `json:"is_error"`
}

type antBody struct {
	Model     *string         `json:"model"`
	MaxTokens *int            `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
}

// parseAnthropic parses and validates a Messages body as api.anthropic.com would.
func parseAnthropic(body []byte, req *Request) error {
	var b antBody
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&b); err != nil {
		return reject("invalid JSON body: %v", err)
	}
	if b.Model == nil || *b.Model == "" {
		return reject("model: Field required")
	}
	if b.MaxTokens == nil {
		return reject("max_tokens: Field required")
	}
	if *b.MaxTokens < 1 {
		return reject("max_tokens: must be greater than or equal to 1")
	}
	req.Model, req.MaxTokens, req.Stream = *b.Model, *b.MaxTokens, b.Stream
	if len(b.System) > 0 && string(b.System) != "null" {
		blocks, err := antBlocks(b.System)
		if err != nil {
			return reject("system: %v", err)
		}
		for _, bl := range blocks {
			if bl.Type != "text" || bl.Text == nil {
				return reject("system: only text blocks are allowed")
			}
			req.System += *bl.Text
		}
	}
	for i, t := range b.Tools {
		if t.Type != "" && t.Type != "custom" {
			return reject("tools.%d: only custom tools are scripted (type %q)", i, t.Type)
		}
		if !toolNameRE.MatchString(t.Name) {
			return reject("tools.%d.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", i)
		}
		var schema struct {
			Type string `json:"type"`
		}
		if len(t.InputSchema) == 0 || json.Unmarshal(t.InputSchema, &schema) != nil || schema.Type != "object" {
			return reject("tools.%d.input_schema: an object schema with \"type\": \"object\" is required", i)
		}
		req.Tools = append(req.Tools, Tool{Name: t.Name, Description: t.Description, Schema: t.InputSchema})
	}
	if len(b.Messages) == 0 {
		return reject("messages: at least one message is required")
	}
	if b.Messages[0].Role != "user" {
		return reject("messages: first message must use the \"user\" role")
	}
	var pending []string // tool_use ids of the previous assistant message
	for i, m := range b.Messages {
		blocks, err := antBlocks(m.Content)
		if err != nil {
			return reject("messages.%d.content: %v", i, err)
		}
		if len(blocks) == 0 {
			return reject("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		switch m.Role {
		case "user":
			msg := Message{Role: "user"}
			answered := map[string]bool{}
			for j, bl := range blocks {
				switch bl.Type {
				case "text":
					if bl.Text == nil || *bl.Text == "" {
						return reject("messages.%d.content.%d: text content blocks must be non-empty", i, j)
					}
					msg.Text += *bl.Text
				case "tool_result":
					if !contains(pending, bl.ToolUseID) {
						return reject("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, bl.ToolUseID)
					}
					text, err := antResultText(bl.Content)
					if err != nil {
						return reject("messages.%d.content.%d.content: %v", i, j, err)
					}
					answered[bl.ToolUseID] = true
					msg.Role = "tool"
					msg.Results = append(msg.Results, ToolResult{CallID: bl.ToolUseID, Content: text, IsError: bl.IsError != nil && *bl.IsError})
				default:
					return reject("messages.%d.content.%d: only text and tool_result blocks are scripted in user messages (got %q)", i, j, bl.Type)
				}
			}
			if missing := missingResults(pending, answered); len(missing) > 0 {
				return reject("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", "))
			}
			pending = nil
			req.Messages = append(req.Messages, msg)
		case "assistant":
			if len(pending) > 0 {
				return reject("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s", i, strings.Join(pending, ", "))
			}
			msg := Message{Role: "assistant"}
			for j, bl := range blocks {
				switch bl.Type {
				case "text":
					if bl.Text == nil || *bl.Text == "" {
						return reject("messages.%d.content.%d: text content blocks must be non-empty", i, j)
					}
					msg.Text += *bl.Text
				case "tool_use":
					if bl.ID == "" || !toolNameRE.MatchString(bl.Name) || !isObject(bl.Input) {
						return reject("messages.%d.content.%d: tool_use needs an id, a name and an object input", i, j)
					}
					pending = append(pending, bl.ID)
					msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: bl.ID, Name: bl.Name, Arguments: string(bl.Input)})
				default:
					return reject("messages.%d.content.%d: only text and tool_use blocks are scripted in assistant messages (got %q)", i, j, bl.Type)
				}
			}
			req.Messages = append(req.Messages, msg)
		default:
			return reject("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
	}
	if len(pending) > 0 {
		return reject("the last assistant message has `tool_use` blocks without results: %s", strings.Join(pending, ", "))
	}
	return nil
}

// antBlocks reads a content field: a string (one text block) or an array of blocks.
func antBlocks(raw json.RawMessage) ([]antBlock, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []antBlock{{Type: "text", Text: &s}}, nil
	}
	var blocks []antBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, reject("expected a string or an array of content blocks")
	}
	return blocks, nil
}

func antResultText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	blocks, err := antBlocks(raw)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type != "text" || bl.Text == nil {
			return "", reject("only text blocks are scripted in tool results")
		}
		if *bl.Text == "" {
			return "", reject("text content blocks must be non-empty")
		}
		b.WriteString(*bl.Text)
	}
	return b.String(), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func missingResults(pending []string, answered map[string]bool) []string {
	var out []string
	for _, id := range pending {
		if !answered[id] {
			out = append(out, id)
		}
	}
	return out
}

// toolInput is a tool call's arguments as the `input` of a tool_use block: the JSON itself when
// it is JSON, else the text as a JSON string (the real API never sends that; a malformed call).
func toolInput(args string) json.RawMessage {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(args)
	return b
}

func anthropicContent(rep Reply) []any {
	content := []any{}
	if rep.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": rep.Text})
	}
	for _, c := range rep.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": toolInput(c.Arguments)})
	}
	return content
}

func anthropicMessage(req *Request, rep Reply) map[string]any {
	in, out := usage(req, rep)
	return map[string]any{
		"id": fmt.Sprintf("msg_scripted_%d", req.N), "type": "message", "role": "assistant", "model": req.Model,
		"content": anthropicContent(rep), "stop_reason": finishReason(rep, Anthropic), "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "output_tokens": out, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}
}

func anthropicStream(st *streamer, req *Request, rep Reply) {
	in, out := usage(req, rep)
	st.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_scripted_%d", req.N), "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})
	index := 0
	if rep.Text != "" {
		st.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		st.event("ping", map[string]any{"type": "ping"})
		for _, p := range pieces(rep.Text, piece) {
			st.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": p}})
		}
		st.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, c := range rep.ToolCalls {
		st.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		for _, p := range pieces(c.Arguments, piece) {
			st.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		st.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	switch {
	case rep.StreamError != "":
		typ := rep.ErrorType
		if typ == "" {
			typ = "overloaded_error"
		}
		st.event("error", map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": rep.StreamError}})
		return
	case rep.Truncate:
		st.start()
		return
	}
	st.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": finishReason(rep, Anthropic), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": out}})
	st.event("message_stop", map[string]any{"type": "message_stop"})
}
