// Package agentloop is the built-in codemode.AgentRunner: the agent loop of `codemode agent`, over
// an OpenAI-compatible API (OpenAI, Ollama, vLLM, llama.cpp…) or Anthropic's, running the child
// agents that cells start with agents.run (codemode.Options.Swarm). Each child gets the child
// surface's tools, its calls go through Surface.Handle, it checkpoints its conversation when a
// shared run store is configured, and its final answer goes back to the cell.
//
// It is a package of its own so that programs that never start children do not link the model
// SDKs (about 30 MB):
//
//	runner, err := agentloop.New(config.SwarmModel{Provider: "openai", BaseURL: "http://localhost:11434/v1", Model: "qwen3"}, nil)
//	if err != nil { … }
//	rt, err := codemode.New(ctx, codemode.Options{Swarm: &swarm, Agents: runner})
package agentloop

import (
	"log/slog"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/agent"
)

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
