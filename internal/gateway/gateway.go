// Package gateway assembles a running codemode process from a configuration: the code-mode
// Runtime, the built-in tools and the upstream MCP servers. The serve, exec and tools commands
// all start here, so they see the same tools.
package gateway

import (
	"context"
	"log/slog"
	"sync"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/builtin"
)

// Gateway is a configured runtime with its tool sources.
type Gateway struct {
	RT  *codemode.Runtime
	Cfg *config.Config
	log *slog.Logger

	mu      sync.Mutex
	natives []*api.Tool
	changed chan struct{}
}

// Options for Open.
type Options struct {
	Logger *slog.Logger
	// Extra native tools (tests, embedders).
	Tools []*api.Tool
	Wasm  []byte
}

// Open starts the runtime and the tool sources described by cfg.
func Open(ctx context.Context, cfg *config.Config, opts Options) (*Gateway, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{Cfg: cfg, log: log, changed: make(chan struct{}, 1)}
	natives, err := builtinTools(cfg)
	if err != nil {
		return nil, err
	}
	g.natives = append(natives, opts.Tools...)
	rt, err := codemode.New(ctx, codemode.Options{Config: cfg, Logger: log, Wasm: opts.Wasm})
	if err != nil {
		return nil, err
	}
	g.RT = rt
	return g, nil
}

// Tools returns the effective tools in source order: core and plugin tools, then MCP tools.
func (g *Gateway) Tools() []*api.Tool {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*api.Tool, 0, len(g.natives))
	out = append(out, g.natives...)
	return out
}

// Surface activates code mode for one run.
func (g *Gateway) Surface(rc api.RunContext, client []*api.Tool) *codemode.Surface {
	tools := g.Tools()
	tools = append(tools, client...)
	return g.RT.Activate(rc, tools)
}

// Changed is signalled (coalesced) when the set of tools changes, e.g. an MCP server connected
// or announced tools/list_changed.
func (g *Gateway) Changed() <-chan struct{} { return g.changed }

func (g *Gateway) notify() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// Close stops everything.
func (g *Gateway) Close() error {
	return g.RT.Close()
}

// builtinTools returns the built-in native tools enabled by cfg.
func builtinTools(cfg *config.Config) ([]*api.Tool, error) {
	return builtin.Tools(cfg)
}
