// Package relay carries, through a call's context, the downstream MCP client the call acts for,
// so that what an upstream MCP server addresses to "the client" while it serves the call — log
// messages, elicitation (a question for the person) and sampling (a request for a completion) —
// reaches the client whose call caused it, and the answer goes back upstream (issue 21 item 2).
//
// The MCP server (internal/server) puts a Client into the context of every direct tool call,
// prompts/get and resources/read, and of exec and wait; internal/upstream looks it up when a
// server sends something. A cell's nested calls outlive the request that started them (exec may
// return waiting while they run), so the runtime gives them a Source that follows whichever exec
// or wait drives the run when the upstream speaks (see dispatch.Dispatcher.SetDriver).
package relay

import "context"

// Client is a downstream MCP client, as an opaque handle: the MCP server's implementations also
// forward log messages, elicitation and sampling (internal/upstream's downstream interface names
// those methods, with the MCP SDK's types: this package stays free of the SDK, so that a program
// using only the root package does not link it). Implementations must be safe for concurrent
// use, and fail rather than block when the client cannot answer at all (a session that ended, a
// client that did not declare the capability); a sessionless client's question waits for the
// client's retry.
type Client interface {
	// ID identifies the client: one MCP session, or one scope (principal, conversation key) of
	// sessionless requests. Two calls with the same ID may share traffic an upstream did not tie
	// to either of them.
	ID() string
}

// Source returns the client driving a call now, or nil when none does.
type Source func() Client

type key struct{}

// With returns ctx carrying c (a nil c leaves ctx unchanged).
func With(ctx context.Context, c Client) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, Source(func() Client { return c }))
}

// WithSource returns ctx carrying src, asked each time the client is needed (nil: unchanged).
func WithSource(ctx context.Context, src Source) context.Context {
	if src == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, src)
}

// From returns the client ctx carries now, or nil.
func From(ctx context.Context) Client {
	if src := SourceFrom(ctx); src != nil {
		return src()
	}
	return nil
}

// SourceFrom returns the source ctx carries, or nil.
func SourceFrom(ctx context.Context) Source {
	s, _ := ctx.Value(key{}).(Source)
	return s
}

type unattributedKey struct{}

// Unattributed marks the context of a server's request that the protocol did not tie to one call
// (stdio, an HTTP server's standalone stream): the client got it because its calls were the only
// ones in flight on that server. A client serving several calls at once may show it on any of
// them.
func Unattributed(ctx context.Context) context.Context {
	return context.WithValue(ctx, unattributedKey{}, true)
}

// IsUnattributed reports whether ctx was marked by Unattributed.
func IsUnattributed(ctx context.Context) bool {
	v, _ := ctx.Value(unattributedKey{}).(bool)
	return v
}
