package config

import (
	"slices"
	"strings"
	"testing"
)

// The keys issue 22 adds: activation "auto" and preferredModels, mcp.servers.<name>.trusted and
// .sequential, runtime.results.
func TestCellsKeys(t *testing.T) {
	cfg, err := Parse([]byte(`{
		tools: {codeMode: {enabled: "auto", preferredModels: ["mine-*"]}},
		mcp: {servers: {
			b: {command: "x", sequential: true, trusted: true},
			c: {command: "x", sequential: ["nav*", "click"]},
			d: {command: "x", sequential: false},
		}},
		runtime: {results: {maxEntriesPerRun: 8, maxBytesPerRun: 2048, maxBytesPerSession: 4096, maxBytes: 1048576, ttlSeconds: 60}},
	}`), "t.json5")
	if err != nil {
		t.Fatal(err)
	}
	cm := cfg.Tools.CodeMode
	if !cm.Enabled || !cm.Auto || !slices.Equal(cm.PreferredModels, []string{"mine-*"}) || !cm.PrefersModel("mine-2") || cm.PrefersModel("gpt-5") {
		t.Fatalf("%+v", cm)
	}
	b, c, d := cfg.MCP.Servers["b"], cfg.MCP.Servers["c"], cfg.MCP.Servers["d"]
	if !b.Trusted || !b.SequentialTool("anything") || c.Trusted || !c.SequentialTool("navigate") || !c.SequentialTool("click") || c.SequentialTool("type") || d.SequentialTool("x") {
		t.Fatalf("%+v %+v %+v", b, c, d)
	}
	if r := cfg.Runtime.Results; r != (Results{8, 2048, 4096, 1048576, 60}) {
		t.Fatalf("%+v", r)
	}
	// Defaults.
	def := Default()
	if def.Runtime.Results != defaultResults() || def.Tools.CodeMode.Auto || def.MCP.Servers == nil {
		t.Fatalf("%+v", def.Runtime.Results)
	}
	for _, m := range []string{"gpt-5.1", "claude-sonnet-4.5", "anthropic/claude-opus-4-1", "o3-mini", "GEMINI-2.5-PRO"} {
		if !(CodeMode{Enabled: true, Auto: true}).PrefersModel(m) {
			t.Errorf("%s is not preferred by default", m)
		}
	}
	for _, m := range []string{"llama3.1:8b", "claude-haiku-4", "", "gpt-3.5-turbo"} {
		if (CodeMode{Enabled: true, Auto: true}).PrefersModel(m) {
			t.Errorf("%s is preferred by default", m)
		}
	}
	if (CodeMode{Enabled: true}).PrefersModel("") != true || (CodeMode{}).PrefersModel("gpt-5") {
		t.Fatal("without auto: enabled means every model")
	}
}

func TestCellsKeyErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{tools: {codeMode: {enabled: "sometimes"}}}`, `tools.codeMode.enabled: expected a boolean or "auto", got string "sometimes"`},
		{`{tools: {codeMode: {preferredModels: ["["]}}}`, `tools.codeMode.preferredModels[0]: "[" is not a valid model pattern`},
		{`{tools: {codeMode: {preferredModels: "gpt"}}}`, `tools.codeMode.preferredModels: expected an array of strings`},
		{`{mcp: {servers: {a: {command: "x", trusted: "yes"}}}}`, `mcp.servers.a.trusted: expected a boolean`},
		{`{mcp: {servers: {a: {command: "x", sequential: "all"}}}}`, `mcp.servers.a.sequential: expected true, false or a list of tool names, got string "all"`},
		{`{mcp: {servers: {a: {command: "x", sequential: ["["]}}}}`, `mcp.servers.a.sequential[0]: "[" is not a valid tool name pattern`},
		{`{runtime: {results: {maxEntriesPerRun: 0}}}`, `runtime.results.maxEntriesPerRun: 0 is out of range`},
		{`{runtime: {results: {maxBytesPerRun: 4096, maxBytesPerSession: 2048}}}`, `runtime.results.maxBytesPerRun: 4096 is larger than maxBytesPerSession (2048)`},
		{`{runtime: {results: {ttl: 5}}}`, `runtime.results.ttl: unknown key (expected one of: maxEntriesPerRun, maxBytesPerRun, maxBytesPerSession, maxBytes, ttlSeconds)`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.in), "t.json5")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s", c.in, err, c.want)
		}
	}
	if err := (CodeMode{Auto: true}).Validate(); err == nil || !strings.Contains(err.Error(), "Auto") {
		t.Fatalf("%v", err)
	}
}
