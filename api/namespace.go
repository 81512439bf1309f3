package api

import (
	"context"
	"encoding/json"
)

// Namespace is a domain API a plugin offers to cells as a global (`Git.log({limit: 10})`) and as
// `namespaces.<GlobalName>`, without adding model-visible tools (docs/semantics.md, §10). Every callable member
// is a catalog tool call underneath: the same policy, hooks, approvals, cancellation, trajectory
// and suspension as tools.callValue.
type Namespace struct {
	// ID identifies the namespace in the registry (unique per runtime).
	ID string
	// GlobalName is the guest global: a JavaScript identifier that is not a built-in global of
	// code mode (tools, namespaces, text, json, yield_control, MCP, API, ALL_TOOLS…).
	GlobalName string
	// Description is appended to the exec description when the namespace is visible in a run:
	// what the namespace is for, in a sentence. Keep it to the namespace's contract.
	Description string
	// Prompt follows it: how to call the namespace's members ("Git.log({limit}) returns
	// {commits: […]}").
	Prompt string
	// RequiredToolNames are the plugin's tools behind the namespace. It is visible in a run only
	// when every one of them is in the run's catalog and owned by the registering plugin (N2), and
	// a callable may only target one of them.
	RequiredToolNames []string
	// CreateScope builds the namespace's guest value for one run: plain data (JSON values, maps,
	// slices, nested objects) and callables made with NamespaceTool. Raw functions, cycles and
	// unsafe keys are refused (N3–N4). It runs for every exec of a run where the namespace is
	// visible, so keep it cheap.
	CreateScope func(ctx context.Context, sc NamespaceContext) (any, error)
}

// NamespaceContext is what CreateScope knows about the run (N3).
type NamespaceContext struct {
	// Run is the run the scope is built for (agent, session, run ids, sender, channel, model).
	Run RunContext
	// Config is the plugin's configuration, as the loader passed it (may be nil).
	Config json.RawMessage
}

// NamespaceCallable marks a scope member as a function of the guest that calls one catalog tool.
// Make it with NamespaceTool.
type NamespaceCallable struct {
	// Tool is the backing tool's name (one of the namespace's RequiredToolNames).
	Tool string
	// Input maps the guest's arguments (JSON values) to the tool's input. nil means the first
	// argument, or {} when there is none.
	Input func(args []json.RawMessage) (json.RawMessage, error)
}

// NamespaceTool makes a callable scope member backed by the plugin tool toolName (the contract's
// createCodeModeNamespaceTool). input may be nil (see NamespaceCallable.Input).
func NamespaceTool(toolName string, input func(args []json.RawMessage) (json.RawMessage, error)) *NamespaceCallable {
	return &NamespaceCallable{Tool: toolName, Input: input}
}
