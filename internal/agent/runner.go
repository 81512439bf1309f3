package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/provider"
)

// Runner runs the child agents cells start with agents.run (codemode.AgentRunner) through this
// same loop: the child's model gets the child surface's tools, its calls go through
// Surface.Handle, and its final answer goes back to the cell. Each child gets a client of its own
// (the payload check is its surface's) over one shared HTTP client, so children reuse
// connections. It is safe for concurrent use.
type Runner struct {
	// Provider is the template of each child's client: protocol, base URL, key, timeouts,
	// retries, logging. CheckPayload and HTTPClient are set per child.
	Provider provider.Options
	// Model is the children's model when agents.run names none.
	Model string
	// MaxTokens bounds each reply (0: the provider's default).
	MaxTokens int

	once sync.Once
	http *http.Client
}

var _ codemode.AgentRunner = (*Runner)(nil)

// checkpoint is a child's conversation as Runner records it (AgentTask.Checkpoint).
type checkpoint struct {
	V        int                `json:"v"`
	Messages []provider.Message `json:"messages"`
	Turns    int                `json:"turns"`
	Calls    int                `json:"calls,omitempty"`
}

// lostCall is the result a call gets when the process running it stopped before it returned.
const lostCall = "This call was interrupted: the gateway process running it stopped before it returned, so it may or may not have run. Check its effect before calling it again."

// RunAgent implements codemode.AgentRunner.
func (r *Runner) RunAgent(ctx context.Context, task *codemode.AgentTask) (string, error) {
	r.once.Do(func() {
		r.http = r.Provider.HTTPClient
		if r.http == nil {
			r.http = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		}
	})
	o := r.Provider
	o.HTTPClient, o.CheckPayload = r.http, task.Surface.CheckPayload
	client, err := provider.New(o)
	if err != nil {
		return "", err
	}
	model := task.Model
	if model == "" {
		model = r.Model
	}
	res := &Result{Messages: []provider.Message{{Role: provider.RoleUser, Text: task.Prompt}}}
	if task.Resume != nil {
		var cp checkpoint
		if json.Unmarshal(task.Resume, &cp) != nil || cp.V != 1 || len(cp.Messages) == 0 {
			return "", errors.New("the child's checkpoint cannot be continued by this runner")
		}
		res.Messages, res.Turns, res.ToolCalls = cp.Messages, cp.Turns, cp.Calls
		resumeCalls(res)
	}
	var h loopHooks
	h.review = task.Review
	if task.Checkpoint != nil {
		h.checkpoint = func(res *Result) {
			b, err := json.Marshal(checkpoint{V: 1, Messages: res.Messages, Turns: res.Turns, Calls: res.ToolCalls})
			if err == nil {
				task.Checkpoint(b)
			}
		}
	}
	maxTurns := task.MaxTurns
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	out, err := run(ctx, task.Surface, Options{Client: client, Model: model, System: task.System,
		MaxTurns: maxTurns, MaxTokens: r.MaxTokens}, res, h)
	if err != nil {
		answer := ""
		if out != nil {
			answer = out.Answer
		}
		return answer, fmt.Errorf("child agent: %w", err)
	}
	return out.Answer, nil
}

// resumeCalls answers the calls of a last model response that had no results when its process
// stopped: they may or may not have run, and the model is told so instead of running them again.
func resumeCalls(res *Result) {
	last := res.Messages[len(res.Messages)-1]
	if last.Role != provider.RoleAssistant || len(last.ToolCalls) == 0 {
		return
	}
	results := make([]provider.ToolResult, len(last.ToolCalls))
	for i, c := range last.ToolCalls {
		results[i] = provider.ToolResult{CallID: c.ID, Name: c.Name, Content: lostCall, IsError: true}
	}
	res.Messages = append(res.Messages, provider.Message{Role: provider.RoleTool, Results: results})
}

// ModelRunner is the built-in runner of children against a configured model
// (tools.swarm.model): the gateway then calls that model itself.
func ModelRunner(m config.SwarmModel, log *slog.Logger) (*Runner, error) {
	key := ""
	if !m.APIKey.IsZero() {
		k, err := m.APIKey.Resolve()
		if err != nil {
			return nil, fmt.Errorf("apiKey: %w", err)
		}
		key = k
	}
	o := provider.Options{Provider: m.Provider, BaseURL: m.BaseURL, APIKey: key, Timeout: m.Timeout(), Logger: log}
	if !m.APIKey.IsZero() {
		o.APIKeyVar = m.APIKey.String()
	}
	if _, err := provider.New(o); err != nil { // check it now, not at the first child
		return nil, err
	}
	return &Runner{Provider: o, Model: m.Model}, nil
}
