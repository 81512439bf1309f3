package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// checkRequest rejects requests no provider would accept, before anything is sent, with a
// message that names the culprit. These are the caller's mistakes, so the error is a plain one.
func checkRequest(req Request) error {
	if strings.TrimSpace(req.Model) == "" {
		return fmt.Errorf("provider: no model given")
	}
	if len(req.Messages) == 0 {
		return fmt.Errorf("provider: the request has no messages")
	}
	if req.MaxTokens < 0 {
		return fmt.Errorf("provider: MaxTokens %d is negative", req.MaxTokens)
	}
	seen := make(map[string]bool, len(req.Tools))
	for i, t := range req.Tools {
		if t.Name == "" {
			return fmt.Errorf("provider: tool %d has no name", i)
		}
		if seen[t.Name] {
			return fmt.Errorf("provider: tool %q is listed twice", t.Name)
		}
		seen[t.Name] = true
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleUser:
		case RoleAssistant:
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return fmt.Errorf("provider: message %d: a tool call needs an id and a name", i)
				}
			}
		case RoleTool:
			if len(m.Results) == 0 {
				return fmt.Errorf("provider: message %d: a tool message needs results", i)
			}
			for _, r := range m.Results {
				if r.CallID == "" {
					return fmt.Errorf("provider: message %d: a tool result needs the id of its call", i)
				}
			}
		default:
			return fmt.Errorf("provider: message %d: unknown role %q (want user, assistant or tool)", i, m.Role)
		}
	}
	return nil
}

// parseArguments fills Arguments from RawArguments, or Malformed with why it cannot. An empty
// argument text is taken as `{}`: servers send it for tools without parameters.
func parseArguments(tc *ToolCall) {
	tc.Arguments, tc.Malformed = nil, ""
	if tc.Name == "" {
		tc.Malformed = "the tool call has no tool name"
		return
	}
	raw := strings.TrimSpace(tc.RawArguments)
	if raw == "" {
		tc.Arguments = json.RawMessage(`{}`)
		return
	}
	// Validated without building the object: a huge argument object from a hostile server
	// must not become a huge map.
	b := []byte(raw)
	var err error
	if !json.Valid(b) {
		var v json.RawMessage
		err = json.Unmarshal(b, &v)
	}
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		tc.Malformed = fmt.Sprintf("the arguments are not valid JSON (%s at byte %d)", syn.Error(), syn.Offset)
	case err != nil:
		tc.Malformed = "the arguments are not valid JSON"
	case raw == "null":
		tc.Malformed = "the arguments are null, not a JSON object"
	case raw[0] != '{':
		tc.Malformed = "the arguments are not a JSON object"
	default:
		tc.Arguments = b
	}
}
