package config

import (
	pathpkg "path"
	"strings"
)

// Results bounds the values cells keep for later cells of their run with results.save, and the
// final values too large for their result that are kept the same way (runtime.results). With a
// shared run store (runStore.redis) they live there and survive restarts.
type Results struct {
	// MaxEntriesPerRun: 1–4096, default 64.
	MaxEntriesPerRun int
	// MaxBytesPerRun bounds one run's saved JSON: 1 KiB–1 GiB, default 10 MiB.
	MaxBytesPerRun int64
	// MaxBytesPerSession bounds one session's saved JSON over all its runs — one principal's,
	// when clients authenticate: 1 KiB–64 GiB, default 64 MiB.
	MaxBytesPerSession int64
	// MaxBytes bounds everything this process (or the shared store) keeps: 1 MiB–64 GiB,
	// default 512 MiB.
	MaxBytes int64
	// TTLSeconds: an entry is dropped this long after it was last saved or loaded: 1–604800,
	// default 3600.
	TTLSeconds int
}

// Defaults of runtime.results.
const (
	defaultResultsEntriesPerRun = 64
	defaultResultsBytesPerRun   = 10 << 20
	defaultResultsBytesSession  = 64 << 20
	defaultResultsBytes         = 512 << 20
	defaultResultsTTLSeconds    = 3600
)

func defaultResults() Results {
	return Results{MaxEntriesPerRun: defaultResultsEntriesPerRun, MaxBytesPerRun: defaultResultsBytesPerRun,
		MaxBytesPerSession: defaultResultsBytesSession, MaxBytes: defaultResultsBytes, TTLSeconds: defaultResultsTTLSeconds}
}

func (d *decoder) results(p path, v any, r *Results) {
	m, ok := d.object(p, v, "maxEntriesPerRun", "maxBytesPerRun", "maxBytesPerSession", "maxBytes", "ttlSeconds")
	if !ok {
		return
	}
	setInt(d, p, m, "maxEntriesPerRun", 1, 4096, &r.MaxEntriesPerRun)
	setInt(d, p, m, "maxBytesPerRun", 1<<10, 1<<30, &r.MaxBytesPerRun)
	setInt(d, p, m, "maxBytesPerSession", 1<<10, 64<<30, &r.MaxBytesPerSession)
	setInt(d, p, m, "maxBytes", 1<<20, 64<<30, &r.MaxBytes)
	setInt(d, p, m, "ttlSeconds", 1, 604800, &r.TTLSeconds)
	if r.MaxBytesPerRun > r.MaxBytesPerSession {
		d.errorf(p.key("maxBytesPerRun"), "%d is larger than maxBytesPerSession (%d)", r.MaxBytesPerRun, r.MaxBytesPerSession)
	}
	if r.MaxBytesPerSession > r.MaxBytes {
		d.errorf(p.key("maxBytesPerSession"), "%d is larger than maxBytes (%d)", r.MaxBytesPerSession, r.MaxBytes)
	}
}

// DefaultPreferredModels are the models that `enabled: "auto"` gives code mode when
// tools.codeMode.preferredModels is absent: families that reliably write short orchestration
// programs. Globs match the model name case-insensitively, with or without a "provider/" prefix.
var DefaultPreferredModels = []string{
	"gpt-5*", "gpt-4.1*", "o3*", "o4*",
	"claude-opus-*", "claude-sonnet-*", "claude-*-opus-*", "claude-*-sonnet-*",
	"gemini-2.5-pro*", "gemini-3*",
	"deepseek-v3*", "deepseek-v4*", "kimi-k2*", "glm-4.5*", "glm-5*", "qwen3-coder*",
}

// PrefersModel reports whether code mode engages for a run with this model: always when it is
// enabled without Auto; with Auto, when the model matches PreferredModels (or
// DefaultPreferredModels when that is nil).
func (c CodeMode) PrefersModel(model string) bool {
	if !c.Enabled {
		return false
	}
	if !c.Auto {
		return true
	}
	pats := c.PreferredModels
	if pats == nil {
		pats = DefaultPreferredModels
	}
	m := strings.ToLower(strings.TrimSpace(model))
	base := m
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		base = m[i+1:]
	}
	for _, p := range pats {
		p = strings.ToLower(p)
		if ok, _ := pathpkg.Match(p, m); ok {
			return true
		}
		if ok, _ := pathpkg.Match(p, base); ok {
			return true
		}
	}
	return false
}

// codeModeEnabled decodes tools.codeMode.enabled: true, false or "auto".
func (d *decoder) codeModeEnabled(p path, m map[string]any, c *CodeMode) {
	v, ok := m["enabled"]
	if !ok {
		return
	}
	if s, isString := v.(string); isString {
		if s != "auto" {
			d.errorf(p.key("enabled"), `expected a boolean or "auto", got %s`, describe(v))
			return
		}
		c.Enabled, c.Auto = true, true
		return
	}
	d.setBool(p, m, "enabled", &c.Enabled)
}

// preferredModels decodes tools.codeMode.preferredModels: model-name globs.
func (d *decoder) preferredModels(p path, m map[string]any, c *CodeMode) {
	if _, ok := m["preferredModels"]; !ok {
		return
	}
	var pats []string
	d.setStrings(p, m, "preferredModels", &pats)
	for i, pat := range pats {
		if _, err := pathpkg.Match(pat, ""); err != nil || strings.TrimSpace(pat) == "" {
			d.errorf(p.key("preferredModels").index(i), "%q is not a valid model pattern", pat)
		}
	}
	if pats == nil {
		pats = []string{}
	}
	c.PreferredModels = pats
}

// sequentialTools decodes mcp.servers.<name>.sequential: true (every tool of the server) or a
// list of tool-name globs.
func (d *decoder) sequentialTools(p path, m map[string]any, s *MCPServer) {
	v, ok := m["sequential"]
	if !ok {
		return
	}
	if b, isBool := v.(bool); isBool {
		if b {
			s.Sequential = []string{"*"}
		}
		return
	}
	if _, isList := v.([]any); !isList {
		d.errorf(p.key("sequential"), "expected true, false or a list of tool names, got %s", describe(v))
		return
	}
	d.setStrings(p, m, "sequential", &s.Sequential)
	for i, pat := range s.Sequential {
		if _, err := pathpkg.Match(pat, ""); err != nil || pat == "" {
			d.errorf(p.key("sequential").index(i), "%q is not a valid tool name pattern", pat)
		}
	}
}

// SequentialTool reports whether the server's tool must run alone (mcp.servers.<name>.sequential).
func (s MCPServer) SequentialTool(name string) bool {
	for _, p := range s.Sequential {
		if ok, _ := pathpkg.Match(p, name); ok {
			return true
		}
	}
	return false
}
