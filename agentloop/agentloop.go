// Package agentloop is the built-in codemode.AgentRunner: the agent loop of `codemode agent`, over
// an OpenAI-compatible API (OpenAI, Ollama, vLLM, llama.cpp…) or Anthropic's, running the child
// agents that cells start with agents.run (codemode.Options.Swarm). Each child gets the child
// surface's tools, its calls go through Surface.Handle, it checkpoints its conversation when a
// shared run store is configured, and its final answer goes back to the cell.
//
// Linking it makes it the default: a runtime whose Options.Swarm names a model (Swarm.Model,
// tools.swarm.model in a file) and whose Options.Agents is nil runs its children with it. It is
// a package of its own, linked by an import like the Redis run store, so that programs that never
// start children do not carry the model client (the gateway package links it):
//
//	import _ "github.com/codemode-go/codemode/agentloop"
//	…
//	swarm := config.DefaultSwarm()
//	swarm.Enabled = true
//	swarm.Model = &config.SwarmModel{Provider: "openai", BaseURL: "http://localhost:11434/v1", Model: "qwen3"}
//	rt, err := codemode.New(ctx, codemode.Options{Swarm: &swarm})
//
// New builds one explicitly, for Options.Agents.
package agentloop

import (
	"log/slog"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/agent"
	"github.com/codemode-go/codemode/internal/swarm"
)

func init() {
	swarm.BuiltinRunner = func(model config.SwarmModel, logger *slog.Logger) (any, error) { return New(model, logger) }
}

// New returns the built-in runner of child agents against model (tools.swarm.model in a
// configuration file): its API key is resolved now, and an invalid provider or URL is an error.
// Zero fields take their defaults (TimeoutMs: five minutes). logger receives retry notices (nil:
// none).
func New(model config.SwarmModel, logger *slog.Logger) (codemode.AgentRunner, error) {
	if model.TimeoutMs == 0 {
		model.TimeoutMs = 300000
	}
	return agent.ModelRunner(model, logger)
}
