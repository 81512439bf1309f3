package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// mustParse parses src or fails the test.
func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	cfg, err := Parse([]byte(src), "test.json5")
	if err != nil {
		t.Fatalf("Parse(%q): unexpected error:\n%v", src, err)
	}
	return cfg
}

// parseErr parses src, expecting failure, and returns the error text.
func parseErr(t *testing.T, src string) string {
	t.Helper()
	cfg, err := Parse([]byte(src), "test.json5")
	if err == nil {
		t.Fatalf("Parse(%q) = %+v, want an error", src, cfg)
	}
	if cfg != nil {
		t.Errorf("Parse(%q) returned a config together with an error", src)
	}
	var list ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		t.Fatalf("Parse(%q) error is %T, want a non-empty ErrorList", src, err)
	}
	return err.Error()
}

// codeModeSrc puts one codeMode field on its own line (line 5), its value at column
// len(field)+9.
func codeModeSrc(field, value string) string {
	return "{\n  tools: {\n    codeMode: {\n      enabled: true,\n      " + field + ": " + value +
		",\n    },\n  },\n}\n"
}

func TestDefaultCodeMode(t *testing.T) { // C2: the seed's defaults, enabled (issue 24: a library default that does what its name says)
	want := CodeMode{
		Enabled: true, Runtime: "quickjs-wasi", Mode: "only",
		Languages: []string{"javascript", "typescript"}, TimeoutMs: 10000,
		MemoryLimitBytes: 67108864, MaxOutputBytes: 65536, MaxSnapshotBytes: 10485760,
		MaxPendingToolCalls: 16, SnapshotTTLSeconds: 900, SearchDefaultLimit: 8, MaxSearchLimit: 50,
	}
	if got := DefaultCodeMode(); !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultCodeMode() = %+v, want %+v", got, want)
	}
	a := DefaultCodeMode()
	a.Languages[0] = "changed"
	if DefaultCodeMode().Languages[0] != "javascript" {
		t.Fatal("DefaultCodeMode shares its Languages slice between calls")
	}
}

func TestDefault(t *testing.T) {
	cfg := Default() // panics if the embedded file is invalid
	wantCM := DefaultCodeMode()
	if !reflect.DeepEqual(cfg.Tools.CodeMode, wantCM) {
		t.Errorf("default codeMode = %+v, want the defaults, enabled: %+v", cfg.Tools.CodeMode, wantCM)
	}
	if cfg.Workspace != "." {
		t.Errorf("default workspace = %q, want %q", cfg.Workspace, ".")
	}
	if len(cfg.MCP.Servers) != 0 {
		t.Errorf("default MCP servers = %v, want none", cfg.MCP.Servers)
	}
	if cfg.Tools.Exec.Enabled {
		t.Error("default enables the shell exec tool")
	}
	want := WebFetch{Enabled: true, TimeoutMs: 15000, MaxBytes: 2097152}
	if cfg.Tools.WebFetch != want {
		t.Errorf("default webFetch = %+v, want %+v", cfg.Tools.WebFetch, want)
	}
	if cfg.Tools.Allow != nil || cfg.Tools.NoTools() {
		t.Errorf("default allow = %#v, want nil (every tool allowed)", cfg.Tools.Allow)
	}
	if !cfg.Runtime.CompileCache || cfg.Runtime.CompileCacheDir != "" {
		t.Errorf("default runtime = %+v, want the cache on in the user cache dir", cfg.Runtime)
	}

	// Each call is independent.
	cfg.Tools.CodeMode.Languages[0] = "changed"
	cfg.MCP.Servers["x"] = MCPServer{}
	if again := Default(); again.Tools.CodeMode.Languages[0] != "javascript" || len(again.MCP.Servers) != 0 {
		t.Error("Default() returns shared state")
	}
	if !slices.Equal(DefaultFile(), defaultFile) {
		t.Error("DefaultFile() differs from the embedded file")
	}
}

func TestEmptyObject(t *testing.T) {
	cfg := mustParse(t, "{}")
	want := defaults()
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("Parse({}) = %+v, want %+v", cfg, want)
	}
	if cfg.Tools.CodeMode.Enabled { // C1: omitted → disabled
		t.Error("an empty file enables code mode")
	}
	if cfg.Workspace != "" {
		t.Errorf("workspace = %q, want \"\" (the current directory)", cfg.Workspace)
	}
}

func TestCodeModeActivation(t *testing.T) { // C1
	tests := []struct {
		name    string
		src     string
		enabled bool
		timeout int
	}{
		{"omitted", `{tools: {}}`, false, 10000},
		{"tools omitted", `{}`, false, 10000},
		{"shorthand true", `{tools: {codeMode: true}}`, true, 10000},
		{"shorthand false", `{tools: {codeMode: false}}`, false, 10000},
		{"empty object", `{tools: {codeMode: {}}}`, false, 10000},
		{"enabled true", `{tools: {codeMode: {enabled: true}}}`, true, 10000},
		{"enabled false", `{tools: {codeMode: {enabled: false}}}`, false, 10000},
		{"other fields only", `{tools: {codeMode: {timeoutMs: 500, maxSearchLimit: 10}}}`, false, 500},
		{"enabled false with fields", `{tools: {codeMode: {enabled: false, timeoutMs: 500}}}`, false, 500},
		{"enabled true with fields", `{tools: {codeMode: {enabled: true, timeoutMs: 500}}}`, true, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := mustParse(t, tt.src).Tools.CodeMode
			if cm.Enabled != tt.enabled || cm.TimeoutMs != tt.timeout {
				t.Fatalf("enabled, timeoutMs = %v, %d; want %v, %d", cm.Enabled, cm.TimeoutMs, tt.enabled, tt.timeout)
			}
			want := DefaultCodeMode()
			want.Enabled, want.TimeoutMs, want.MaxSearchLimit = cm.Enabled, cm.TimeoutMs, cm.MaxSearchLimit
			if !reflect.DeepEqual(cm, want) {
				t.Fatalf("codeMode = %+v, want defaults elsewhere: %+v", cm, want)
			}
		})
	}
}

func TestCodeModeWrongType(t *testing.T) { // C1, C2
	tests := []struct{ src, want string }{
		{`{tools: {codeMode: 1}}`, "test.json5:1:20: tools.codeMode: expected a boolean, \"auto\" or an object, got number 1"},
		{`{tools: {codeMode: "true"}}`, `test.json5:1:20: tools.codeMode: expected a boolean, "auto" or an object, got string "true"`},
		{`{tools: {codeMode: null}}`, `test.json5:1:20: tools.codeMode: expected a boolean, "auto" or an object, got null`},
		{`{tools: {codeMode: [true]}}`, `test.json5:1:20: tools.codeMode: expected a boolean, "auto" or an object, got an array`},
		{`{tools: {codeMode: {enabled: "yes"}}}`, `test.json5:1:30: tools.codeMode.enabled: expected a boolean or "auto", got string "yes"`},
		{`{tools: {codeMode: {enabled: 1}}}`, `test.json5:1:30: tools.codeMode.enabled: expected a boolean, got number 1`},
	}
	for _, tt := range tests {
		if got := parseErr(t, tt.src); got != tt.want {
			t.Errorf("Parse(%s):\n got %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

// intField describes one integer codeMode field and its C2 range. searchDefaultLimit is not
// here: it has no maximum, being clamped (TestSearchDefaultLimit).
type intField struct {
	name        string
	def, lo, hi int64
	get         func(CodeMode) int64
}

var codeModeIntFields = []intField{
	{name: "timeoutMs", def: 10000, lo: 100, hi: 60000, get: func(c CodeMode) int64 { return int64(c.TimeoutMs) }},
	{name: "memoryLimitBytes", def: 67108864, lo: 1048576, hi: 1073741824, get: func(c CodeMode) int64 { return c.MemoryLimitBytes }},
	{name: "maxOutputBytes", def: 65536, lo: 1024, hi: 10485760, get: func(c CodeMode) int64 { return int64(c.MaxOutputBytes) }},
	{name: "maxSnapshotBytes", def: 10485760, lo: 1024, hi: 268435456, get: func(c CodeMode) int64 { return c.MaxSnapshotBytes }},
	{name: "maxPendingToolCalls", def: 16, lo: 1, hi: 128, get: func(c CodeMode) int64 { return int64(c.MaxPendingToolCalls) }},
	{name: "snapshotTtlSeconds", def: 900, lo: 1, hi: 86400, get: func(c CodeMode) int64 { return int64(c.SnapshotTTLSeconds) }},
	{name: "maxSearchLimit", def: 50, lo: 1, hi: 50, get: func(c CodeMode) int64 { return int64(c.MaxSearchLimit) }},
}

func TestCodeModeIntegerFields(t *testing.T) { // C2: default, min, max, min-1, max+1, wrong type
	for _, f := range codeModeIntFields {
		col := len(f.name) + 9
		errAt := func(msg string) string {
			return fmt.Sprintf("test.json5:5:%d: tools.codeMode.%s: %s", col, f.name, msg)
		}
		rangeMsg := func(v int64) string {
			return errAt(fmt.Sprintf("%d is out of range (%d–%d)", v, f.lo, f.hi))
		}
		t.Run(f.name, func(t *testing.T) {
			// default
			if got := f.get(mustParse(t, `{tools: {codeMode: true}}`).Tools.CodeMode); got != f.def {
				t.Errorf("default = %d, want %d", got, f.def)
			}
			// accepted values
			for _, v := range []int64{f.lo, f.hi, (f.lo + f.hi) / 2} {
				cm := mustParse(t, codeModeSrc(f.name, fmt.Sprint(v))).Tools.CodeMode
				if got := f.get(cm); got != v {
					t.Errorf("%s: %d parsed as %d", f.name, v, got)
				}
			}
			// rejected values
			bad := []struct{ value, want string }{
				{fmt.Sprint(f.lo - 1), rangeMsg(f.lo - 1)},
				{fmt.Sprint(f.hi + 1), rangeMsg(f.hi + 1)},
				{"-1", rangeMsg(-1)},
				{fmt.Sprint(f.lo) + ".5", errAt(fmt.Sprint(f.lo) + ".5 is not an integer")},
				{`"` + fmt.Sprint(f.def) + `"`, errAt(fmt.Sprintf("expected an integer, got string %q", fmt.Sprint(f.def)))},
				{"true", errAt("expected an integer, got boolean true")},
				{"null", errAt("expected an integer, got null")},
				{"[1]", errAt("expected an integer, got an array")},
				{"{}", errAt("expected an integer, got an object")},
				{"NaN", errAt("NaN is not an integer")},
				{"Infinity", errAt("Infinity is not an integer")},
				{"1e300", errAt(fmt.Sprintf("1e300 is out of range (%d–%d)", f.lo, f.hi))},
			}
			for _, b := range bad {
				if got := parseErr(t, codeModeSrc(f.name, b.value)); got != b.want {
					t.Errorf("%s: %s:\n got %s\nwant %s", f.name, b.value, got, b.want)
				}
			}
		})
	}
}

func TestCodeModeNumberSyntax(t *testing.T) { // C3: JSON5 numbers are JavaScript numbers
	for _, v := range []string{"10000", "1e4", "1E4", "0x2710", "+10000", "10000.0", "1.0e4"} {
		if got := mustParse(t, codeModeSrc("timeoutMs", v)).Tools.CodeMode.TimeoutMs; got != 10000 {
			t.Errorf("timeoutMs: %s parsed as %d, want 10000", v, got)
		}
	}
	// Errors echo the number as written.
	want := "test.json5:5:18: tools.codeMode.timeoutMs: 0x11170 is out of range (100–60000)"
	if got := parseErr(t, codeModeSrc("timeoutMs", "0x11170")); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestSearchDefaultLimit(t *testing.T) { // C2: clamped to maxSearchLimit, never an error above it
	tests := []struct {
		fields      string
		def, maxLim int
	}{
		{``, 8, 50},
		{`searchDefaultLimit: 1`, 1, 50},
		{`searchDefaultLimit: 50`, 50, 50},
		{`searchDefaultLimit: 51`, 50, 50},
		{`searchDefaultLimit: 1e300`, 50, 50},
		{`searchDefaultLimit: 20, maxSearchLimit: 10`, 10, 10},
		{`maxSearchLimit: 10, searchDefaultLimit: 20`, 10, 10},
		{`maxSearchLimit: 5`, 5, 5}, // the default 8 is clamped too
		{`maxSearchLimit: 1, searchDefaultLimit: 1`, 1, 1},
	}
	for _, tt := range tests {
		cm := mustParse(t, `{tools: {codeMode: {enabled: true, `+tt.fields+`}}}`).Tools.CodeMode
		if cm.SearchDefaultLimit != tt.def || cm.MaxSearchLimit != tt.maxLim {
			t.Errorf("%s: searchDefaultLimit, maxSearchLimit = %d, %d; want %d, %d",
				tt.fields, cm.SearchDefaultLimit, cm.MaxSearchLimit, tt.def, tt.maxLim)
		}
	}
	bad := []struct{ value, want string }{
		{"0", "test.json5:5:27: tools.codeMode.searchDefaultLimit: 0 is out of range (minimum 1)"},
		{"-3", "test.json5:5:27: tools.codeMode.searchDefaultLimit: -3 is out of range (minimum 1)"},
		{"2.5", "test.json5:5:27: tools.codeMode.searchDefaultLimit: 2.5 is not an integer"},
		{`"8"`, `test.json5:5:27: tools.codeMode.searchDefaultLimit: expected an integer, got string "8"`},
		{"false", "test.json5:5:27: tools.codeMode.searchDefaultLimit: expected an integer, got boolean false"},
	}
	for _, b := range bad {
		if got := parseErr(t, codeModeSrc("searchDefaultLimit", b.value)); got != b.want {
			t.Errorf("%s:\n got %s\nwant %s", b.value, got, b.want)
		}
	}
}

func TestSearchLimit(t *testing.T) { // K5
	cm := DefaultCodeMode()
	cm.SearchDefaultLimit, cm.MaxSearchLimit = 8, 20
	for requested, want := range map[int]int{0: 8, -1: 8, 1: 1, 19: 19, 20: 20, 21: 20, 1 << 40: 20} {
		if got := cm.SearchLimit(requested); got != want {
			t.Errorf("SearchLimit(%d) = %d, want %d", requested, got, want)
		}
	}
}

func TestCodeModeEnums(t *testing.T) { // C2: runtime and mode each have one value
	cm := mustParse(t, `{tools: {codeMode: {runtime: "quickjs-wasi", mode: "only"}}}`).Tools.CodeMode
	if cm.Runtime != RuntimeQuickJSWASI || cm.Mode != ModeOnly {
		t.Errorf("runtime, mode = %q, %q", cm.Runtime, cm.Mode)
	}
	tests := []struct{ field, value, want string }{
		{"runtime", `"v8"`, `test.json5:5:16: tools.codeMode.runtime: "v8" is not supported (the only value is "quickjs-wasi")`},
		{"runtime", `""`, `test.json5:5:16: tools.codeMode.runtime: "" is not supported (the only value is "quickjs-wasi")`},
		{"runtime", `1`, `test.json5:5:16: tools.codeMode.runtime: expected a string, got number 1`},
		{"mode", `"all"`, `test.json5:5:13: tools.codeMode.mode: "all" is not supported (the only value is "only")`},
		{"mode", `"ONLY"`, `test.json5:5:13: tools.codeMode.mode: "ONLY" is not supported (the only value is "only")`},
		{"mode", `true`, `test.json5:5:13: tools.codeMode.mode: expected a string, got boolean true`},
	}
	for _, tt := range tests {
		if got := parseErr(t, codeModeSrc(tt.field, tt.value)); got != tt.want {
			t.Errorf("%s: %s:\n got %s\nwant %s", tt.field, tt.value, got, tt.want)
		}
	}
}

func TestLanguages(t *testing.T) { // C2: non-empty subset of javascript and typescript
	good := []struct {
		value string
		want  []string
	}{
		{`["javascript"]`, []string{"javascript"}},
		{`["typescript"]`, []string{"typescript"}},
		{`["javascript", "typescript"]`, []string{"javascript", "typescript"}},
		{`["typescript", "javascript",]`, []string{"typescript", "javascript"}},
	}
	for _, g := range good {
		cm := mustParse(t, codeModeSrc("languages", g.value)).Tools.CodeMode
		if !slices.Equal(cm.Languages, g.want) {
			t.Errorf("%s: languages = %q, want %q", g.value, cm.Languages, g.want)
		}
		for _, lang := range []string{"javascript", "typescript"} {
			if cm.AllowsLanguage(lang) != slices.Contains(g.want, lang) {
				t.Errorf("%s: AllowsLanguage(%q) = %v", g.value, lang, cm.AllowsLanguage(lang))
			}
		}
		if cm.AllowsLanguage("python") || cm.AllowsLanguage("") {
			t.Errorf("%s: allows an unknown language", g.value)
		}
	}
	const at = "test.json5:5:18: tools.codeMode.languages"
	bad := []struct{ value, want string }{
		{`[]`, at + `: must list at least one of "javascript", "typescript"`},
		{`["javascript", "javascript"]`, "test.json5:5:33: tools.codeMode.languages[1]: duplicate language \"javascript\""},
		{`["python"]`, "test.json5:5:19: tools.codeMode.languages[0]: \"python\" is not a supported language (\"javascript\" or \"typescript\")"},
		{`["JavaScript"]`, "test.json5:5:19: tools.codeMode.languages[0]: \"JavaScript\" is not a supported language (did you mean \"javascript\"?)"},
		{`["typescrpt"]`, "test.json5:5:19: tools.codeMode.languages[0]: \"typescrpt\" is not a supported language (did you mean \"typescript\"?)"},
		{`[1]`, "test.json5:5:19: tools.codeMode.languages[0]: expected a string, got number 1"},
		{`"javascript"`, at + `: expected an array of strings, got string "javascript"`},
		{`null`, at + `: expected an array of strings, got null`},
	}
	for _, b := range bad {
		if got := parseErr(t, codeModeSrc("languages", b.value)); got != b.want {
			t.Errorf("%s:\n got %s\nwant %s", b.value, got, b.want)
		}
	}
}

func TestDurations(t *testing.T) {
	cm := mustParse(t, `{tools: {codeMode: {timeoutMs: 1500, snapshotTtlSeconds: 60}}}`).Tools.CodeMode
	if cm.Timeout() != 1500*time.Millisecond || cm.SnapshotTTL() != time.Minute {
		t.Errorf("Timeout, SnapshotTTL = %v, %v", cm.Timeout(), cm.SnapshotTTL())
	}
	cfg := mustParse(t, `{tools: {webFetch: {timeoutMs: 2000}}, mcp: {servers: {a: {command: "x", timeoutMs: 3000}}}}`)
	if cfg.Tools.WebFetch.Timeout() != 2*time.Second || cfg.MCP.Servers["a"].Timeout() != 3*time.Second {
		t.Errorf("webFetch, MCP timeouts = %v, %v", cfg.Tools.WebFetch.Timeout(), cfg.MCP.Servers["a"].Timeout())
	}
}

func TestToolsPolicy(t *testing.T) { // A3, A7: absent allow differs from an empty one
	cfg := mustParse(t, `{tools: {}}`)
	if cfg.Tools.Allow != nil || cfg.Tools.NoTools() {
		t.Errorf("absent allow = %#v, NoTools = %v", cfg.Tools.Allow, cfg.Tools.NoTools())
	}
	cfg = mustParse(t, `{tools: {allow: []}}`)
	if cfg.Tools.Allow == nil || len(cfg.Tools.Allow) != 0 || !cfg.Tools.NoTools() {
		t.Errorf("empty allow = %#v, NoTools = %v", cfg.Tools.Allow, cfg.Tools.NoTools())
	}
	cfg = mustParse(t, `{tools: {disableTools: true, allow: ["read"]}}`)
	if !cfg.Tools.NoTools() {
		t.Error("disableTools: true does not mean no tools")
	}
	cfg = mustParse(t, `{
		tools: {
			allow: ["read", "native:core:*", "mcp:github:*"],
			deny: ["write", "mcp:*:delete_?"],
			directOnly: ["image"],
			exec: {enabled: true},
			webFetch: {enabled: false, timeoutMs: 100, maxBytes: 1024, allowPrivateNetworks: true},
			sandbox: {tools: {alsoAllow: ["bundle-mcp"]}},
		},
	}`)
	want := Tools{
		CodeMode:   fileCodeMode(),
		Swarm:      DefaultSwarm(),
		Allow:      []string{"read", "native:core:*", "mcp:github:*"},
		Deny:       []string{"write", "mcp:*:delete_?"},
		DirectOnly: []string{"image"},
		Exec:       Exec{Enabled: true},
		WebFetch:   WebFetch{Enabled: false, TimeoutMs: 100, MaxBytes: 1024, AllowPrivateNetworks: true},
		Sandbox:    Sandbox{Tools: SandboxTools{AlsoAllow: []string{"bundle-mcp"}}},
	}
	if !reflect.DeepEqual(cfg.Tools, want) {
		t.Errorf("tools = %+v\nwant %+v", cfg.Tools, want)
	}
	if !cfg.Tools.Sandbox.AllowsBundleMCP() { // C4
		t.Error("AllowsBundleMCP() = false with bundle-mcp in alsoAllow")
	}
	if mustParse(t, `{}`).Tools.Sandbox.AllowsBundleMCP() {
		t.Error("AllowsBundleMCP() = true by default")
	}

	bad := []struct{ src, want string }{
		{`{tools: {allow: "read"}}`, `test.json5:1:17: tools.allow: expected an array of strings, got string "read"`},
		{`{tools: {allow: [""]}}`, `test.json5:1:18: tools.allow[0]: must not be empty`},
		{`{tools: {deny: [null]}}`, `test.json5:1:17: tools.deny[0]: expected a string, got null`},
		{`{tools: {disableTools: "no"}}`, `test.json5:1:24: tools.disableTools: expected a boolean, got string "no"`},
		{`{tools: {directOnly: ["image", "exec"]}}`, `test.json5:1:32: tools.directOnly[1]: "exec" is a code mode control tool and cannot be direct-only`},
		{`{tools: {directOnly: ["wait"]}}`, `test.json5:1:23: tools.directOnly[0]: "wait" is a code mode control tool and cannot be direct-only`},
		{`{tools: {exec: true}}`, `test.json5:1:16: tools.exec: expected an object, got boolean true`},
		{`{tools: {exec: {enable: true}}}`, `test.json5:1:17: tools.exec.enable: unknown key (did you mean "enabled"?)`},
		{`{tools: {webFetch: {timeoutMs: 99}}}`, `test.json5:1:32: tools.webFetch.timeoutMs: 99 is out of range (100–120000)`},
		{`{tools: {webFetch: {maxBytes: 67108865}}}`, `test.json5:1:31: tools.webFetch.maxBytes: 67108865 is out of range (1024–67108864)`},
		{`{tools: {sandbox: {tools: {alsoAllow: "bundle-mcp"}}}}`, `test.json5:1:39: tools.sandbox.tools.alsoAllow: expected an array of strings, got string "bundle-mcp"`},
		{`{tools: {sandbox: {alsoAllow: []}}}`, `test.json5:1:20: tools.sandbox.alsoAllow: unknown key (expected one of: tools)`},
		{`{tools: {alsoAllow: []}}`, `test.json5:1:10: tools.alsoAllow: unknown key (did you mean tools.sandbox.tools.alsoAllow?)`},
		{`{tools: []}`, `test.json5:1:9: tools: expected an object, got an array`},
		{`{workspace: 1}`, `test.json5:1:13: workspace: expected a string, got number 1`},
	}
	for _, b := range bad {
		if got := parseErr(t, b.src); got != b.want {
			t.Errorf("%s:\n got %s\nwant %s", b.src, got, b.want)
		}
	}
}

func TestRuntime(t *testing.T) {
	cfg := mustParse(t, `{runtime: {compileCache: false, compileCacheDir: "/x"}}`)
	if dir, err := cfg.Runtime.CompileCachePath(); dir != "" || err != nil {
		t.Errorf("disabled cache: CompileCachePath() = %q, %v", dir, err)
	}
	cfg = mustParse(t, `{runtime: {compileCacheDir: "/var/cache/cm"}}`)
	if dir, err := cfg.Runtime.CompileCachePath(); dir != "/var/cache/cm" || err != nil {
		t.Errorf("explicit dir: CompileCachePath() = %q, %v", dir, err)
	}
	t.Setenv("XDG_CACHE_HOME", "/tmp/xdg")
	t.Setenv("HOME", "/tmp/home")
	dir, err := mustParse(t, `{}`).Runtime.CompileCachePath()
	if err != nil || !strings.HasSuffix(dir, filepath.Join("codemode", "wazero")) {
		t.Errorf("default: CompileCachePath() = %q, %v", dir, err)
	}
	want := `test.json5:1:26: runtime.compileCache: expected a boolean, got string "yes"`
	if got := parseErr(t, `{runtime: {compileCache: "yes"}}`); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestMCPServers(t *testing.T) { // M1: stdio and streamable HTTP servers
	cfg := mustParse(t, `{
		mcp: {
			servers: {
				github: {command: "node", args: ["server.js"], env: {TOKEN: "x"}, cwd: "/tmp", enabled: true, timeoutMs: 60000},
				remote: {url: "https://example.com/mcp", headers: {Authorization: "Bearer x"}},
				"chrome-devtools": {command: "npx", enabled: false, timeoutMs: 100},
				Plain_1: {url: "http://127.0.0.1:8080/mcp", timeoutMs: 600000},
			},
		},
	}`)
	want := map[string]MCPServer{
		"github": {Command: "node", Args: []string{"server.js"}, Env: map[string]string{"TOKEN": "x"},
			Cwd: "/tmp", TimeoutMs: 60000},
		"remote": {URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"},
			TimeoutMs: 60000},
		"chrome-devtools": {Command: "npx", Disabled: true, TimeoutMs: 100},
		"Plain_1":         {URL: "http://127.0.0.1:8080/mcp", TimeoutMs: 600000},
	}
	if !reflect.DeepEqual(cfg.MCP.Servers, want) {
		t.Errorf("servers = %+v\nwant %+v", cfg.MCP.Servers, want)
	}
	if got := cfg.MCP.ServerNames(); !slices.Equal(got, []string{"Plain_1", "chrome-devtools", "github", "remote"}) {
		t.Errorf("ServerNames() = %q", got)
	}
	if !cfg.MCP.Servers["github"].Stdio() || cfg.MCP.Servers["remote"].Stdio() {
		t.Error("Stdio() is wrong")
	}
	long := strings.Repeat("a", 64)
	if _, ok := mustParse(t, `{mcp: {servers: {`+long+`: {command: "x"}}}}`).MCP.Servers[long]; !ok {
		t.Error("a 64-character server name is rejected")
	}
	if len(mustParse(t, `{mcp: {}}`).MCP.Servers) != 0 || len(mustParse(t, `{mcp: {servers: {}}}`).MCP.Servers) != 0 {
		t.Error("empty mcp sections yield servers")
	}

	const s = "test.json5:1:21: mcp.servers.a"
	bad := []struct{ server, want string }{
		{`{}`, s + `: set command (a stdio server) or url (an HTTP server)`},
		{`{command: "x", url: "http://h"}`, s + `: set either command (a stdio server) or url (an HTTP server), not both`},
		{`{command: ""}`, "test.json5:1:31: mcp.servers.a.command: must not be empty"},
		{`{command: ["node"]}`, "test.json5:1:31: mcp.servers.a.command: expected a string, got an array"},
		{`{url: "ftp://h/x"}`, `test.json5:1:27: mcp.servers.a.url: URL "ftp://h/x" must use http or https`},
		{`{url: "example.com/mcp"}`, `test.json5:1:27: mcp.servers.a.url: URL "example.com/mcp" must use http or https`},
		{`{url: "https:///mcp"}`, `test.json5:1:27: mcp.servers.a.url: URL "https:///mcp" has no host`},
		{`{url: "http://h/%zz"}`, `test.json5:1:27: mcp.servers.a.url: invalid URL "http://h/%zz"`},
		{`{command: "x", timeoutMs: 99}`, "test.json5:1:47: mcp.servers.a.timeoutMs: 99 is out of range (100–600000)"},
		{`{command: "x", timeoutMs: 600001}`, "test.json5:1:47: mcp.servers.a.timeoutMs: 600001 is out of range (100–600000)"},
		{`{command: "x", args: "-v"}`, `test.json5:1:42: mcp.servers.a.args: expected an array of strings, got string "-v"`},
		{`{command: "x", args: [1]}`, `test.json5:1:43: mcp.servers.a.args[0]: expected a string, got number 1`},
		{`{command: "x", env: {A: 1}}`, `test.json5:1:45: mcp.servers.a.env.A: expected a string, got number 1`},
		{`{command: "x", env: {"A=B": "1"}}`, `test.json5:1:42: mcp.servers.a.env["A=B"]: invalid environment variable (names must be non-empty without '=' or NUL; values without NUL)`},
		{`{command: "x", env: []}`, `test.json5:1:41: mcp.servers.a.env: expected an object of strings, got an array`},
		{`{command: "x", headers: {A: "b"}}`, `test.json5:1:36: mcp.servers.a.headers: headers apply only to HTTP servers (url)`},
		{`{url: "http://h", args: []}`, `test.json5:1:39: mcp.servers.a.args: args applies only to stdio servers (command)`},
		{`{url: "http://h", cwd: "/"}`, `test.json5:1:39: mcp.servers.a.cwd: cwd applies only to stdio servers (command)`},
		{`{url: "http://h", headers: {"Bad Name": "x"}}`, `test.json5:1:49: mcp.servers.a.headers["Bad Name"]: invalid HTTP header name`},
		{`{url: "http://h", headers: {A: "x\ny"}}`, `test.json5:1:52: mcp.servers.a.headers.A: HTTP header values must not contain CR, LF or NUL`},
		{`{url: "http://h", enabled: "no"}`, `test.json5:1:48: mcp.servers.a.enabled: expected a boolean, got string "no"`},
		{`{url: "http://h", type: "http"}`, `test.json5:1:39: mcp.servers.a.type: unknown key (the transport follows from command (stdio) or url (HTTP); remove type)`},
		{`{url: "http://h", disabled: true}`, `test.json5:1:39: mcp.servers.a.disabled: unknown key (use enabled: false)`},
		{`{url: "http://h", bogus: 1}`, `test.json5:1:39: mcp.servers.a.bogus: unknown key (expected one of: command, args, env, inheritEnv, cwd, url, headers, enabled, timeoutMs, trusted, sequential)`},
		{`{comand: "x"}`, s + ": set command (a stdio server) or url (an HTTP server)\n" +
			`test.json5:1:22: mcp.servers.a.comand: unknown key (did you mean "command"?)`},
		{`"node server.js"`, s + `: expected an object, got string "node server.js"`},
	}
	for _, b := range bad {
		src := `{mcp: {servers: {a: ` + b.server + `}}}`
		if got := parseErr(t, src); got != b.want {
			t.Errorf("%s:\n got %s\nwant %s", src, got, b.want)
		}
	}

	names := []struct{ src, want string }{
		{`{mcp: {servers: {"a b": {command: "x"}}}}`, `test.json5:1:18: mcp.servers["a b"]: invalid server name "a b" (use 1–64 letters, digits, '_' or '-')`},
		{`{mcp: {servers: {"": {command: "x"}}}}`, `test.json5:1:18: mcp.servers[""]: invalid server name "" (use 1–64 letters, digits, '_' or '-')`},
		{`{mcp: {servers: {"a.b": {command: "x"}}}}`, `test.json5:1:18: mcp.servers["a.b"]: invalid server name "a.b" (use 1–64 letters, digits, '_' or '-')`},
		{`{mcp: {servers: {` + long + `b: {command: "x"}}}}`, `test.json5:1:18: mcp.servers.` + long + `b: invalid server name "` + long + `b" (use 1–64 letters, digits, '_' or '-')`},
		{`{mcp: {servers: []}}`, `test.json5:1:17: mcp.servers: expected an object mapping server names to servers, got an array`},
		{`{mcp: {server: {}}}`, `test.json5:1:8: mcp.server: unknown key (did you mean "servers"?)`},
		{`{mcpServers: {}}`, `test.json5:1:2: mcpServers: unknown key (MCP servers go in mcp: { servers: { … } })`},
	}
	for _, n := range names {
		if got := parseErr(t, n.src); got != n.want {
			t.Errorf("%s:\n got %s\nwant %s", n.src, got, n.want)
		}
	}
}

func TestUnknownKeys(t *testing.T) { // C2: typos must not silently fall back to defaults
	tests := []struct{ src, want string }{
		{`{tools: {codeMode: {timoutMs: 5000}}}`, `test.json5:1:21: tools.codeMode.timoutMs: unknown key (did you mean "timeoutMs"?)`},
		{`{tools: {codeMode: {timeoutMS: 5000}}}`, `test.json5:1:21: tools.codeMode.timeoutMS: unknown key (did you mean "timeoutMs"?)`},
		{`{tools: {codeMode: {timeout_ms: 5000}}}`, `test.json5:1:21: tools.codeMode.timeout_ms: unknown key (did you mean "timeoutMs"?)`},
		{`{tools: {codeMode: {timeout: 5000}}}`, `test.json5:1:21: tools.codeMode.timeout: unknown key (did you mean "timeoutMs"?)`},
		{`{tools: {codeMode: {memoryLimit: 5000}}}`, `test.json5:1:21: tools.codeMode.memoryLimit: unknown key (did you mean "memoryLimitBytes"?)`},
		{`{tools: {codeMode: {snapshotTTLSeconds: 5}}}`, `test.json5:1:21: tools.codeMode.snapshotTTLSeconds: unknown key (did you mean "snapshotTtlSeconds"?)`},
		{`{tools: {codeMode: {maxPendingToolCall: 5}}}`, `test.json5:1:21: tools.codeMode.maxPendingToolCall: unknown key (did you mean "maxPendingToolCalls"?)`},
		{`{tools: {codeMode: {enabeld: true}}}`, `test.json5:1:21: tools.codeMode.enabeld: unknown key (did you mean "enabled"?)`},
		{`{tools: {codeMode: {language: []}}}`, `test.json5:1:21: tools.codeMode.language: unknown key (did you mean "languages"?)`},
		{`{tools: {codeMode: {zzz: 1}}}`, `test.json5:1:21: tools.codeMode.zzz: unknown key (expected one of: enabled, runtime, mode, languages, timeoutMs, memoryLimitBytes, maxOutputBytes, maxSnapshotBytes, maxPendingToolCalls, snapshotTtlSeconds, searchDefaultLimit, maxSearchLimit, searchEmbeddings, preferredModels)`},
		{`{tools: {codemode: true}}`, `test.json5:1:10: tools.codemode: unknown key (did you mean "codeMode"?)`},
		{`{tools: {code_mode: true}}`, `test.json5:1:10: tools.code_mode: unknown key (did you mean "codeMode"?)`},
		{`{tool: {}}`, `test.json5:1:2: tool: unknown key (did you mean "tools"?)`},
		{`{codeMode: true}`, `test.json5:1:2: codeMode: unknown key (did you mean tools.codeMode?)`},
		{`{workspce: "."}`, `test.json5:1:2: workspce: unknown key (did you mean "workspace"?)`},
		{`{"weird key": 1}`, `test.json5:1:2: ["weird key"]: unknown key (expected one of: workspace, tools, mcp, plugins, runtime, serve, runStore)`},
		{`{tools: {webFetch: {allowPrivateNetwork: true}}}`, `test.json5:1:21: tools.webFetch.allowPrivateNetwork: unknown key (did you mean "allowPrivateNetworks"?)`},
		{`{runtime: {compileCacheDirectory: ""}}`, `test.json5:1:12: runtime.compileCacheDirectory: unknown key (did you mean "compileCacheDir"?)`},
		// A known key inside an unknown one is not looked at.
		{`{tools: {codeMode: {limits: {timeoutMs: 1}}}}`, `test.json5:1:21: tools.codeMode.limits: unknown key (expected one of: enabled, runtime, mode, languages, timeoutMs, memoryLimitBytes, maxOutputBytes, maxSnapshotBytes, maxPendingToolCalls, snapshotTtlSeconds, searchDefaultLimit, maxSearchLimit, searchEmbeddings, preferredModels)`},
	}
	for _, tt := range tests {
		if got := parseErr(t, tt.src); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

func TestDuplicateKeys(t *testing.T) {
	src := "{\n  tools: {\n    codeMode: { timeoutMs: 500, 'timeoutMs': 600 },\n  },\n}"
	want := "test.json5:3:33: tools.codeMode.timeoutMs: duplicate key (first set at 3:17)"
	if got := parseErr(t, src); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	src = `{mcp: {servers: {a: {command: "x", env: {K: "1", "K": "2"}}}}}`
	want = `test.json5:1:50: mcp.servers.a.env.K: duplicate key (first set at 1:42)`
	if got := parseErr(t, src); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestSyntaxErrors(t *testing.T) { // C3: positions computed from json5's byte offsets
	tests := []struct{ src, want string }{
		{"", "test.json5:1:1: the file is empty; expected an object such as {}"},
		{"  \n\t\n", "test.json5:1:1: the file is empty; expected an object such as {}"},
		{"// only a comment\n/* and another */\n", "test.json5:1:1: the file is empty; expected an object such as {}"},
		{"[]", "test.json5:1:1: the top level must be an object, got an array"},
		{"\n  42\n", "test.json5:2:3: the top level must be an object, got number 42"},
		{`"config"`, `test.json5:1:1: the top level must be an object, got string "config"`},
		{"null", "test.json5:1:1: the top level must be an object, got null"},
		{"{\n  tools: {\n    codeMode: { enabled: tru },\n  },\n}", "test.json5:3:29: syntax error: invalid character ' ' in literal true (expecting 'e')"},
		{"{\n  tools: {\n", "test.json5:3:1: syntax error: unexpected end of input"},
		{"{tools: tru", "test.json5:1:12: syntax error: unexpected end of input"},
		{"{\n  a: 1\n  b: 2\n}", "test.json5:3:3: syntax error: invalid character 'b' after object key:value pair"},
		{"{\n  a b: 1\n}", "test.json5:2:5: syntax error: invalid character 'b' after object key"},
		{"{a: 1}}", "test.json5:1:7: syntax error: invalid character '}' after top-level value"},
		{"{a: 1,,}", "test.json5:1:7: syntax error: invalid character ',' looking for beginning of object key"},
		{"{a: [1,,]}", "test.json5:1:8: syntax error: invalid character ',' looking for beginning of value"},
		{"{\n  \"a\": é\n}", "test.json5:2:8: syntax error: invalid character 'é' looking for beginning of value"},
		{"{\n  \"é\": é\n}", "test.json5:2:8: syntax error: invalid character 'é' looking for beginning of value"},
		{"{a: \xff}", "test.json5:1:5: syntax error: invalid byte 0xFF looking for beginning of value (the file must be UTF-8)"},
		{"{a: 'unterminated}", "test.json5:1:19: syntax error: unexpected end of input"},
		{"{a: 1 /* open comment", "test.json5:1:22: syntax error: unexpected end of input"},
		{"{a: 0x}", "test.json5:1:7: syntax error: invalid character '}' in hex number"},
		{"{a: 0xFFFFFFFFFFFFFFFFFFFF}", "test.json5:1:5: syntax error: invalid number 0xFFFFFFFFFFFFFFFFFFFF"},
		{"{a: .}", "test.json5:1:5: syntax error: invalid number ."},
		{"{\r\n  a: ?\r\n}", "test.json5:2:6: syntax error: invalid character '?' looking for beginning of value"},
		{"{\n\ta:\t#\n}", "test.json5:2:5: syntax error: invalid character '#' looking for beginning of value"},
		{"\xef\xbb\xbf{tools: 5}", "test.json5:1:9: tools: expected an object, got number 5"},
	}
	for _, tt := range tests {
		if got := parseErr(t, tt.src); got != tt.want {
			t.Errorf("%q:\n got %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

func TestJSON5Syntax(t *testing.T) { // C3: comments, unquoted keys, trailing commas, single quotes
	cfg := mustParse(t, "\xef\xbb\xbf"+`// leading comment
	{
		/* block */ workspace: '/srv/ws', // trailing comment
		"tools": {
			'codeMode': { enabled: true, languages: ['javascript',], },
			deny: ["a", /* inline */ "b",],
		},
	}
	// trailing comment`)
	if cfg.Workspace != "/srv/ws" || !cfg.Tools.CodeMode.Enabled ||
		!slices.Equal(cfg.Tools.CodeMode.Languages, []string{"javascript"}) ||
		!slices.Equal(cfg.Tools.Deny, []string{"a", "b"}) {
		t.Errorf("parsed %+v", cfg)
	}
}

func TestErrorsAreData(t *testing.T) {
	src := "{\n  tools: {\n    codeMode: {\n      timeoutMs: 70000,\n      maxSearchLimit: 0,\n    },\n  },\n  bogus: 1,\n}"
	_, err := Parse([]byte(src), "codemode.json5")
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %T is not an ErrorList", err)
	}
	want := ErrorList{
		{File: "codemode.json5", Line: 4, Column: 18, Path: "tools.codeMode.timeoutMs", Msg: "70000 is out of range (100–60000)"},
		{File: "codemode.json5", Line: 5, Column: 23, Path: "tools.codeMode.maxSearchLimit", Msg: "0 is out of range (1–50)"},
		{File: "codemode.json5", Line: 8, Column: 3, Path: "bogus", Msg: "unknown key (expected one of: workspace, tools, mcp, plugins, runtime, serve, runStore)"},
	}
	if len(list) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(list), len(want), err)
	}
	for i := range want {
		got := *list[i]
		got.offset = 0
		if got != *want[i] {
			t.Errorf("error %d = %+v, want %+v", i, got, *want[i])
		}
	}
	var first *Error
	if !errors.As(err, &first) || first.Path != "tools.codeMode.timeoutMs" {
		t.Errorf("errors.As(*Error) = %+v, want the first problem", first)
	}
	wantText := "codemode.json5:4:18: tools.codeMode.timeoutMs: 70000 is out of range (100–60000)\n" +
		"codemode.json5:5:23: tools.codeMode.maxSearchLimit: 0 is out of range (1–50)\n" +
		"codemode.json5:8:3: bogus: unknown key (expected one of: workspace, tools, mcp, plugins, runtime, serve, runStore)"
	if err.Error() != wantText {
		t.Errorf("Error() =\n%s\nwant\n%s", err, wantText)
	}

	// Without a file name or a position the prefix shrinks.
	for _, tt := range []struct {
		e    Error
		want string
	}{
		{Error{Line: 1, Column: 2, Path: "a", Msg: "m"}, "1:2: a: m"},
		{Error{File: "f", Msg: "m"}, "f: m"},
		{Error{Msg: "m"}, "m"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%+v.Error() = %q, want %q", tt.e, got, tt.want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json5")
	if err := os.WriteFile(good, []byte(`{tools: {codeMode: true}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(good)
	if err != nil || !cfg.Tools.CodeMode.Enabled {
		t.Fatalf("Load(good) = %+v, %v", cfg, err)
	}

	bad := filepath.Join(dir, "bad.json5")
	if err := os.WriteFile(bad, []byte("{\n  tools: 1,\n}"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	if want := bad + ":2:10: tools: expected an object, got number 1"; err == nil || err.Error() != want {
		t.Errorf("Load(bad) error = %v, want %s", err, want)
	}

	missing := filepath.Join(dir, "missing.json5")
	_, err = Load(missing)
	if err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want one naming %s and wrapping os.ErrNotExist", err, missing)
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"command", "args", "env", "cwd", "url", "headers", "enabled", "timeoutMs"}
	for got, want := range map[string]string{
		"comand": "command", "Command": "command", "arg": "args", "ur": "url", "uri": "url",
		"header": "headers", "enable": "enabled", "timeout": "timeoutMs", "TIMEOUT_MS": "timeoutMs",
		"x": "", "transport": "", "type": "", "environment": "",
	} {
		if s := suggest(got, known); s != want {
			t.Errorf("suggest(%q) = %q, want %q", got, s, want)
		}
	}
	if s := suggest("timoeutMs", known); s != "timeoutMs" { // a transposition is one edit
		t.Errorf("suggest(timoeutMs) = %q", s)
	}
}

func TestPlugins(t *testing.T) {
	if mustParse(t, `{}`).Plugins.Git.Enabled || Default().Plugins.Git.Enabled {
		t.Error("the git plugin is on by default")
	}
	if !mustParse(t, `{plugins: {git: {enabled: true}}}`).Plugins.Git.Enabled {
		t.Error("plugins.git.enabled: true did not enable the git plugin")
	}
	if mustParse(t, `{plugins: {git: {}}}`).Plugins.Git.Enabled {
		t.Error("an empty plugins.git enables it")
	}
	tests := []struct{ src, want string }{
		{`{plugins: {git: true}}`, `test.json5:1:17: plugins.git: expected an object, got boolean true`},
		{`{plugins: {git: {enabled: 1}}}`, `test.json5:1:27: plugins.git.enabled: expected a boolean, got number 1`},
		{`{plugins: {gti: {}}}`, `test.json5:1:12: plugins.gti: unknown key (did you mean "git"?)`},
		{`{plugin: {}}`, `test.json5:1:2: plugin: unknown key (did you mean "plugins"?)`},
	}
	for _, tt := range tests {
		if got := parseErr(t, tt.src); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

// TestSwarm: tools.swarm is a gate of its own (issue 25): off unless enabled, limits with their
// defaults, the children's model and tools, and Validate for values built in Go.
func TestSwarm(t *testing.T) {
	if s := mustParse(t, `{}`).Tools.Swarm; s.Enabled || !reflect.DeepEqual(s, DefaultSwarm()) {
		t.Fatalf("absent: %+v", s)
	}
	if s := Default().Tools.Swarm; s.Enabled || !reflect.DeepEqual(s, DefaultSwarm()) {
		t.Fatalf("default.json5: %+v", s)
	}
	if !mustParse(t, `{tools: {swarm: true}}`).Tools.Swarm.Enabled || mustParse(t, `{tools: {swarm: {maxConcurrent: 4}}}`).Tools.Swarm.Enabled {
		t.Fatal("only true or enabled: true enables")
	}
	if mustParse(t, `{tools: {codeMode: true}}`).Tools.Swarm.Enabled {
		t.Fatal("code mode alone enabled the swarm")
	}
	s := mustParse(t, `{tools: {swarm: {enabled: true, maxConcurrent: 2, maxChildrenPerGroup: 3, maxTotalPerGroup: 4,
		maxDepth: 2, maxRunning: 5, childTimeoutSeconds: 6, maxTurns: 7, tools: {allow: ["read"], deny: ["mcp:*"]},
		model: {provider: "anthropic", baseUrl: "http://127.0.0.1:1", model: "m", apiKey: {env: "K"}, models: ["m*"]}}}}`).Tools.Swarm
	want := Swarm{Enabled: true, MaxConcurrent: 2, MaxChildrenPerGroup: 3, MaxTotalPerGroup: 4, MaxDepth: 2, MaxRunning: 5,
		ChildTimeoutSeconds: 6, MaxTurns: 7, Tools: SwarmTools{Allow: []string{"read"}, Deny: []string{"mcp:*"}},
		Model: &SwarmModel{Provider: "anthropic", BaseURL: "http://127.0.0.1:1", Model: "m", APIKey: Secret{Env: "K"}, Models: []string{"m*"}, TimeoutMs: 300000}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("%+v\nwant %+v", s, want)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := s.Model.AllowedModels(); !reflect.DeepEqual(got, []string{"m*"}) {
		t.Fatal(got)
	}
	if got := (SwarmModel{Model: "only"}).AllowedModels(); !reflect.DeepEqual(got, []string{"only"}) {
		t.Fatal(got)
	}
	bad := Swarm{MaxConcurrent: 9, MaxChildrenPerGroup: 5, MaxTotalPerGroup: 4, MaxDepth: 0, MaxRunning: 1, ChildTimeoutSeconds: 1, MaxTurns: 1,
		Model: &SwarmModel{Provider: "x", TimeoutMs: 1}}
	err := bad.Validate()
	for _, want := range []string{"tools.swarm.maxDepth: 0", "maxConcurrent: 9 is more than maxChildrenPerGroup", "maxChildrenPerGroup: 5 is more than maxTotalPerGroup",
		"tools.swarm.model.provider", "tools.swarm.model.model", "tools.swarm.model.timeoutMs"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v lacks %q", err, want)
		}
	}
	if err := (Swarm{}).WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}
