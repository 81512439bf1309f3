package api

import "encoding/json"

// ToolError is an error a cell can catch (G4–G5, Z3): it reaches the guest as a plain Error whose
// name, message, code and details are these fields, never as a host object. Tools may return it
// to give a cell a code to branch on (`e.code === "not_found"`); any other error becomes an
// Error with code "tool_error".
type ToolError struct {
	Name    string          `json:"name"` // "Error", "TypeError", "RangeError"…
	Message string          `json:"message"`
	Code    string          `json:"code,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
}

func (e *ToolError) Error() string { return e.Message }
