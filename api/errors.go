package api

import "encoding/json"

// ToolError is an error a cell can catch (G4–G5, Z3): it reaches the guest as a plain Error whose
// name, message, code and details are these fields, never as a host object. Tools may return it
// to give a cell a code to branch on (`e.code === "not_found"`); any other error becomes an
// Error with code "tool_error".
type ToolError struct {
	// Name is the guest error's constructor name: "Error", "TypeError", "RangeError"…
	Name string `json:"name"`
	// Message is the error's message, as the cell reads e.message.
	Message string `json:"message"`
	// Code is a stable, machine-readable reason the cell can branch on (e.code), such as
	// "not_found" or "not_approved".
	Code string `json:"code,omitempty"`
	// Details is optional JSON the cell reads as e.details.
	Details json.RawMessage `json:"details,omitempty"`
}

// Error returns the message.
func (e *ToolError) Error() string { return e.Message }
