package swarm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/contract"
	"github.com/codemode-go/codemode/internal/textcut"
)

// options are the agents.run options this runtime understands.
var options = []string{"label", "model", "schema", "phase"}

// ParseRequest decodes and checks an agents.run request: {prompt, options}. Everything in it is
// the cell's (hostile): types, sizes and the model are checked here, the schema's size and
// nesting too (it is compiled off the VM's goroutine, when the child starts).
func ParseRequest(payload []byte, lim Limits) (Request, error) {
	bad := func(format string, args ...any) (Request, error) {
		return Request{}, &api.ToolError{Name: "TypeError", Code: string(api.CodeInvalidInput), Message: "agents.run: " + fmt.Sprintf(format, args...)}
	}
	var p struct {
		Prompt  json.RawMessage `json:"prompt"`
		Options json.RawMessage `json:"options"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return bad("malformed request")
	}
	var opts map[string]json.RawMessage
	switch o := bytes.TrimSpace(p.Options); {
	case len(o) == 0 || string(o) == "null":
	case o[0] != '{' || json.Unmarshal(o, &opts) != nil:
		return bad("options (second argument) must be an object such as {label: \"review\"}")
	}
	var req Request
	if err := json.Unmarshal(p.Prompt, &req.Prompt); err != nil || strings.TrimSpace(req.Prompt) == "" {
		return bad("the prompt (first argument) must be a non-empty string")
	}
	if len(req.Prompt) > MaxPromptBytes {
		return bad("the prompt is %d bytes (limit %d)", len(req.Prompt), MaxPromptBytes)
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := opts[k]
		if string(v) == "null" {
			continue
		}
		switch k {
		case "label", "model", "phase":
			var s string
			if json.Unmarshal(v, &s) != nil {
				return bad("options.%s must be a string", k)
			}
			limit := map[string]int{"label": MaxLabelBytes, "model": MaxModelBytes, "phase": MaxNoteBytes}[k]
			if len(s) > limit {
				return bad("options.%s is %d bytes (limit %d)", k, len(s), limit)
			}
			s = textcut.Line(s, limit)
			if s == "" {
				return bad("options.%s must not be empty", k)
			}
			switch k {
			case "label":
				req.Label = s
			case "model":
				if !modelAllowed(s, lim.Models) {
					return bad("model %q is not allowed here (tools.swarm.model.models: %s)", s, strings.Join(lim.Models, ", "))
				}
				req.Model = s
			case "phase":
				req.Phase = s
			}
		case "schema":
			if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '{' {
				return bad("options.schema must be a JSON Schema object, such as {type: \"object\", properties: {…}, required: […]}")
			}
			if len(v) > contract.MaxInputSchemaBytes {
				return bad("options.schema is %d bytes of JSON (limit %d)", len(v), contract.MaxInputSchemaBytes)
			}
			req.Schema = append(json.RawMessage(nil), v...)
		case "thinking", "fastMode", "agentId":
			return bad("options.%s is not supported here (options: %s)", k, strings.Join(options, ", "))
		default:
			return bad("unknown option %q (options: %s)", k, strings.Join(options, ", "))
		}
	}
	return req, nil
}

func modelAllowed(model string, globs []string) bool {
	if globs == nil {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, model); ok || g == model {
			return true
		}
	}
	return false
}
