package config

import (
	"errors"
	"fmt"
	pathpkg "path"
	"strings"
	"time"
)

// Swarm is tools.swarm: with code mode on, cells get agents.run(prompt, options), phase(title)
// and log(message) to start child agents — one-shot agents with their own model conversation
// and a subset of the run's tools — and coordinate them with ordinary JavaScript. It is a gate of
// its own: code mode alone never exposes agents.*. In a file only `enabled: true` (or
// `swarm: true`) turns it on; the children need a model (Model, or the agent command's own).
type Swarm struct {
	// Enabled turns the swarm globals on (with code mode on, and a model for the children).
	Enabled bool
	// MaxConcurrent bounds the children of one run running at once; more wait in call order:
	// 1–1000, default 8.
	MaxConcurrent int
	// MaxChildrenPerGroup bounds the children of one run running or waiting at once: 1–10000,
	// default 50.
	MaxChildrenPerGroup int
	// MaxTotalPerGroup bounds the children one run starts over its life (a runaway backstop):
	// 1–100000, default 200.
	MaxTotalPerGroup int
	// MaxDepth is how deep children may spawn: 1 (the default) lets cells start children that
	// cannot start their own; 1–8.
	MaxDepth int
	// MaxRunning bounds the children running at once in the whole process: 1–10000, default 64.
	MaxRunning int
	// ChildTimeoutSeconds bounds one child's wall time: 1–86400, default 600.
	ChildTimeoutSeconds int
	// MaxTurns bounds one child's model calls: 1–200, default 20.
	MaxTurns int
	// Tools is the children's tool policy, applied to the parent run's tools: a child never has
	// a tool its parent does not.
	Tools SwarmTools
	// Model is the model children talk to. nil: `codemode agent` uses its own (--provider,
	// --base-url, --model); `codemode serve` has none, and agents.* stays off.
	Model *SwarmModel
}

// SwarmTools filters the tools children get: names or catalog ids with '*' and '?' globs, like
// tools.allow and tools.deny. Allow nil means all of the parent's tools.
type SwarmTools struct {
	// Allow, when non-nil, is the only set of the parent's tools a child gets (names or catalog
	// ids, with globs).
	Allow []string
	// Deny removes tools after Allow.
	Deny []string
}

// SwarmModel is the model provider of the children (the gateway then calls a model itself).
type SwarmModel struct {
	// Provider is the wire protocol: "openai" (chat completions: OpenAI, Ollama, vLLM,
	// llama.cpp…) or "anthropic" (messages).
	Provider string
	// BaseURL is the API base, e.g. "http://localhost:11434/v1"; "" means the provider's
	// public API.
	BaseURL string
	// Model is the default model name (required).
	Model string
	// APIKey is the key ({env} or {file}); absent sends none.
	APIKey Secret
	// Models are the names (with '*' and '?' globs) a cell may ask for with agents.run's model
	// option; nil means only Model.
	Models []string
	// TimeoutMs bounds each model request: 1000–3600000, default 300000.
	TimeoutMs int
}

// Timeout is TimeoutMs as a duration.
func (m SwarmModel) Timeout() time.Duration { return time.Duration(m.TimeoutMs) * time.Millisecond }

// AllowedModels are the per-call model globs: Models, or only Model.
func (m SwarmModel) AllowedModels() []string {
	if m.Models == nil {
		return []string{m.Model}
	}
	return m.Models
}

// ChildTimeout is ChildTimeoutSeconds as a duration.
func (s Swarm) ChildTimeout() time.Duration {
	return time.Duration(s.ChildTimeoutSeconds) * time.Second
}

// The ranges of the tools.swarm settings, shared by the parser and Validate.
var (
	rangeSwarmMaxConcurrent  = intRange{1, 1000}
	rangeSwarmMaxChildren    = intRange{1, 10000}
	rangeSwarmMaxTotal       = intRange{1, 100000}
	rangeSwarmMaxDepth       = intRange{1, 8}
	rangeSwarmMaxRunning     = intRange{1, 10000}
	rangeSwarmChildTimeout   = intRange{1, 86400}
	rangeSwarmMaxTurns       = intRange{1, 200}
	rangeSwarmModelTimeoutMs = intRange{1000, 3600000}
)

// DefaultSwarm returns tools.swarm with its defaults, off.
func DefaultSwarm() Swarm {
	return Swarm{MaxConcurrent: 8, MaxChildrenPerGroup: 50, MaxTotalPerGroup: 200, MaxDepth: 1,
		MaxRunning: 64, ChildTimeoutSeconds: 600, MaxTurns: 20}
}

// WithDefaults fills the zero limits of a Swarm made in Go (Enabled stays as given).
func (s Swarm) WithDefaults() Swarm {
	d := DefaultSwarm()
	for _, f := range []struct{ v, def *int }{{&s.MaxConcurrent, &d.MaxConcurrent}, {&s.MaxChildrenPerGroup, &d.MaxChildrenPerGroup},
		{&s.MaxTotalPerGroup, &d.MaxTotalPerGroup}, {&s.MaxDepth, &d.MaxDepth}, {&s.MaxRunning, &d.MaxRunning},
		{&s.ChildTimeoutSeconds, &d.ChildTimeoutSeconds}, {&s.MaxTurns, &d.MaxTurns}} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	if s.Model != nil && s.Model.TimeoutMs == 0 {
		m := *s.Model
		m.TimeoutMs = defaultSwarmModelTimeoutMs
		s.Model = &m
	}
	return s
}

const defaultSwarmModelTimeoutMs = 300000

// Validate checks a Swarm built in Go against the file's rules, naming each field as the file
// spells it.
func (s Swarm) Validate() error {
	var errs []error
	check := func(name string, v int, r intRange) {
		if int64(v) < r.lo || int64(v) > r.hi {
			errs = append(errs, fmt.Errorf("tools.swarm.%s: %d is out of range (%d–%d)", name, v, r.lo, r.hi))
		}
	}
	check("maxConcurrent", s.MaxConcurrent, rangeSwarmMaxConcurrent)
	check("maxChildrenPerGroup", s.MaxChildrenPerGroup, rangeSwarmMaxChildren)
	check("maxTotalPerGroup", s.MaxTotalPerGroup, rangeSwarmMaxTotal)
	check("maxDepth", s.MaxDepth, rangeSwarmMaxDepth)
	check("maxRunning", s.MaxRunning, rangeSwarmMaxRunning)
	check("childTimeoutSeconds", s.ChildTimeoutSeconds, rangeSwarmChildTimeout)
	check("maxTurns", s.MaxTurns, rangeSwarmMaxTurns)
	if s.MaxConcurrent > s.MaxChildrenPerGroup {
		errs = append(errs, fmt.Errorf("tools.swarm.maxConcurrent: %d is more than maxChildrenPerGroup (%d)", s.MaxConcurrent, s.MaxChildrenPerGroup))
	}
	if s.MaxChildrenPerGroup > s.MaxTotalPerGroup {
		errs = append(errs, fmt.Errorf("tools.swarm.maxChildrenPerGroup: %d is more than maxTotalPerGroup (%d)", s.MaxChildrenPerGroup, s.MaxTotalPerGroup))
	}
	for i, p := range append(append([]string(nil), s.Tools.Allow...), s.Tools.Deny...) {
		if _, err := pathpkg.Match(p, ""); err != nil || p == "" {
			errs = append(errs, fmt.Errorf("tools.swarm.tools: pattern %d (%q) is not a valid glob", i, p))
		}
	}
	if m := s.Model; m != nil {
		if err := m.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m SwarmModel) validate() error {
	var errs []error
	if m.Provider != "openai" && m.Provider != "anthropic" {
		errs = append(errs, fmt.Errorf("tools.swarm.model.provider: %q is not a provider (openai or anthropic)", m.Provider))
	}
	if strings.TrimSpace(m.Model) == "" {
		errs = append(errs, errors.New("tools.swarm.model.model: a model name is required"))
	}
	if m.BaseURL != "" && !strings.HasPrefix(m.BaseURL, "http://") && !strings.HasPrefix(m.BaseURL, "https://") {
		errs = append(errs, fmt.Errorf("tools.swarm.model.baseUrl: %q is not an http(s) URL", m.BaseURL))
	}
	if int64(m.TimeoutMs) < rangeSwarmModelTimeoutMs.lo || int64(m.TimeoutMs) > rangeSwarmModelTimeoutMs.hi {
		errs = append(errs, fmt.Errorf("tools.swarm.model.timeoutMs: %d is out of range (%d–%d)", m.TimeoutMs, rangeSwarmModelTimeoutMs.lo, rangeSwarmModelTimeoutMs.hi))
	}
	for i, p := range m.Models {
		if _, err := pathpkg.Match(p, ""); err != nil || p == "" {
			errs = append(errs, fmt.Errorf("tools.swarm.model.models[%d]: %q is not a valid name or glob", i, p))
		}
	}
	return errors.Join(errs...)
}

// swarmKeys in the order "expected one of" lists them.
var swarmKeys = []string{"enabled", "maxConcurrent", "maxChildrenPerGroup", "maxTotalPerGroup", "maxDepth",
	"maxRunning", "childTimeoutSeconds", "maxTurns", "tools", "model"}

func (d *decoder) swarm(p path, v any, s *Swarm) {
	if b, ok := v.(bool); ok {
		s.Enabled = b // like codeMode: true is {enabled: true}
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.errorf(p, "expected a boolean or an object, got %s", describe(v))
		return
	}
	d.unknownKeys(p, m, swarmKeys)
	d.setBool(p, m, "enabled", &s.Enabled)
	setInt(d, p, m, "maxConcurrent", rangeSwarmMaxConcurrent.lo, rangeSwarmMaxConcurrent.hi, &s.MaxConcurrent)
	setInt(d, p, m, "maxChildrenPerGroup", rangeSwarmMaxChildren.lo, rangeSwarmMaxChildren.hi, &s.MaxChildrenPerGroup)
	setInt(d, p, m, "maxTotalPerGroup", rangeSwarmMaxTotal.lo, rangeSwarmMaxTotal.hi, &s.MaxTotalPerGroup)
	setInt(d, p, m, "maxDepth", rangeSwarmMaxDepth.lo, rangeSwarmMaxDepth.hi, &s.MaxDepth)
	setInt(d, p, m, "maxRunning", rangeSwarmMaxRunning.lo, rangeSwarmMaxRunning.hi, &s.MaxRunning)
	setInt(d, p, m, "childTimeoutSeconds", rangeSwarmChildTimeout.lo, rangeSwarmChildTimeout.hi, &s.ChildTimeoutSeconds)
	setInt(d, p, m, "maxTurns", rangeSwarmMaxTurns.lo, rangeSwarmMaxTurns.hi, &s.MaxTurns)
	if s.MaxConcurrent > s.MaxChildrenPerGroup {
		d.errorf(p.key("maxConcurrent"), "%d is more than maxChildrenPerGroup (%d)", s.MaxConcurrent, s.MaxChildrenPerGroup)
	}
	if s.MaxChildrenPerGroup > s.MaxTotalPerGroup {
		d.errorf(p.key("maxChildrenPerGroup"), "%d is more than maxTotalPerGroup (%d)", s.MaxChildrenPerGroup, s.MaxTotalPerGroup)
	}
	if v, ok := m["tools"]; ok {
		tp := p.key("tools")
		if m, ok := d.object(tp, v, "allow", "deny"); ok {
			d.setStrings(tp, m, "allow", &s.Tools.Allow)
			d.setStrings(tp, m, "deny", &s.Tools.Deny)
		}
	}
	if v, ok := m["model"]; ok && v != nil {
		s.Model = d.swarmModel(p.key("model"), v)
	}
}

func (d *decoder) swarmModel(p path, v any) *SwarmModel {
	m, ok := d.object(p, v, "provider", "baseUrl", "model", "apiKey", "models", "timeoutMs")
	if !ok {
		return nil
	}
	sm := &SwarmModel{Provider: "openai", TimeoutMs: defaultSwarmModelTimeoutMs}
	d.setString(p, m, "provider", &sm.Provider)
	d.setString(p, m, "baseUrl", &sm.BaseURL)
	d.setString(p, m, "model", &sm.Model)
	if v, ok := m["apiKey"]; ok {
		d.secret(p.key("apiKey"), v, &sm.APIKey)
	}
	d.setStrings(p, m, "models", &sm.Models)
	setInt(d, p, m, "timeoutMs", rangeSwarmModelTimeoutMs.lo, rangeSwarmModelTimeoutMs.hi, &sm.TimeoutMs)
	if sm.Provider != "openai" && sm.Provider != "anthropic" {
		d.errorf(p.key("provider"), "%q is not a provider (openai or anthropic)", sm.Provider)
	}
	if _, ok := m["model"]; !ok || strings.TrimSpace(sm.Model) == "" {
		d.errorf(p.key("model"), `a model name is required, such as "qwen3" or "claude-sonnet-4-5"`)
	}
	if sm.BaseURL != "" && !strings.HasPrefix(sm.BaseURL, "http://") && !strings.HasPrefix(sm.BaseURL, "https://") {
		d.errorf(p.key("baseUrl"), "expected the http(s) base URL of the API, such as \"http://localhost:11434/v1\"")
	}
	for i, g := range sm.Models {
		if _, err := pathpkg.Match(g, ""); err != nil {
			d.errorf(p.key("models").index(i), "%q is not a valid name or glob", g)
		}
	}
	return sm
}
