// Package progress carries a progress sink through a request's context, from the layer that
// can report progress to a client (the MCP server, when the client sent a progressToken) to
// the layers that learn about progress (an upstream MCP server's notifications/progress).
//
// The MCP server puts a Sink into the context of exec, wait and direct tool calls whose request
// carries a progressToken; internal/upstream forwards an upstream tool's progress notifications to the Sink
// found in its call's context. A runtime that runs nested calls under another context (a cell's
// calls outlive the exec request) connects them by passing the exec's Sink along.
package progress

import "context"

// Sink receives progress: a value that increases with every report, an optional total (0 when
// unknown) and an optional message. It must be quick and safe for concurrent use.
type Sink func(progress, total float64, message string)

type key struct{}

// With returns ctx carrying sink (a nil sink leaves ctx unchanged).
func With(ctx context.Context, sink Sink) context.Context {
	if sink == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, sink)
}

// From returns the sink carried by ctx, or nil.
func From(ctx context.Context) Sink {
	s, _ := ctx.Value(key{}).(Sink)
	return s
}
