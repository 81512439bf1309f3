// Package config reads the gateway's JSON5 configuration file (docs/semantics.md C1–C4).
//
// The file is strict on purpose. Unknown keys, duplicate keys, wrong types and out-of-range
// values are all errors, because a typo such as `timoutMs` that quietly fell back to a default
// would weaken a limit the operator believes is set. Every problem is reported at once, with
// file:line:column, sorted by position (see ErrorList). A value that is validated is validated
// even where it has no effect (for example limits under a disabled codeMode), so that turning a
// feature on later cannot surface an old mistake.
//
// Absent settings take the defaults documented on each field. The defaults for an absent key are
// not the same thing as Default(): an empty file leaves code mode off (C1), while the shipped
// default file turns it on.
package config

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/codemode-go/codemode/api"
)

// Config is a parsed configuration file.
type Config struct {
	// Workspace is the root directory of the built-in file tools. "" (the default) means the
	// process's current directory; a relative path is relative to that directory, not to the
	// config file's.
	Workspace string
	// Tools is which tools a run gets and how code mode exposes them (the tools section).
	Tools Tools
	// MCP is the MCP servers the gateway connects (the mcp section).
	MCP MCP
	// Plugins are the bundled plugins, each off unless enabled (the plugins section).
	Plugins Plugins
	// Runtime is the engine's compilation cache and the process's limits: admission control,
	// suspended runs, saved results (the runtime section).
	Runtime Runtime
	// Serve is how `codemode serve` exposes itself: the HTTP listener, principals, OAuth, the
	// audit log (the serve section).
	Serve Serve
	// RunStore says where suspended runs live (default: in the process).
	RunStore RunStore
}

// Plugins is the `plugins` section: the bundled plugins, each off unless enabled.
type Plugins struct {
	// Git is the read-only git plugin (tools native:git:git_log, git_diff, …) over the
	// repository holding the workspace.
	Git GitPlugin
}

// GitPlugin configures the git plugin.
type GitPlugin struct {
	Enabled bool // default false
}

// Tools is the `tools` section: which tools a run gets and how code mode exposes them.
type Tools struct {
	// CodeMode is the code-mode switch and its limits.
	CodeMode CodeMode
	// Swarm lets cells start child agents (agents.run, phase, log); off by default.
	Swarm Swarm

	// Allow, when non-nil, is the only set of tools a run may use: tool names or catalog ids
	// ("read", "native:core:*", "mcp:github:*"), with '*' and '?' globs. nil means the key was
	// absent and every tool is allowed; an empty, non-nil slice means the run has no tools at all
	// (and therefore never activates code mode, A7).
	Allow []string
	// Deny removes tools after Allow, with the same syntax.
	Deny []string
	// DisableTools gives runs no tools at all (A7).
	DisableTools bool
	// DirectOnly names the tools that stay visible to the model under code mode because their
	// results (images, for example) cannot cross the JSON-only bridge. "exec" and "wait" are
	// code mode's own tools and are rejected here.
	DirectOnly []string
	// Approvals says which calls need a person's decision before they run.
	Approvals api.Approvals

	// Exec is the built-in shell tool (off by default).
	Exec Exec
	// WebFetch is the built-in HTTP fetch tool (on by default).
	WebFetch WebFetch
	// Sandbox is the tool policy of sandboxed agents (C4).
	Sandbox Sandbox
}

// NoTools reports whether the configuration intentionally gives runs no tools, either with
// disableTools or with an empty allow list; such runs never activate code mode (A7).
func (t Tools) NoTools() bool {
	return t.DisableTools || (t.Allow != nil && len(t.Allow) == 0)
}

// Exec configures the built-in shell tool named `exec`. It is off by default. When on, it is
// hidden from the model under code mode and catalogued as native:core:exec, so it never clashes
// with code mode's own `exec` (A11).
type Exec struct {
	// Enabled adds the shell tool (default false).
	Enabled bool
}

// WebFetch configures the built-in HTTP fetch tool, which is on by default.
type WebFetch struct {
	Enabled bool // default true
	// TimeoutMs bounds one fetch: 100–120000, default 15000.
	TimeoutMs int
	// MaxBytes bounds one response body: 1024–67108864, default 2097152 (2 MiB).
	MaxBytes int64
	// AllowPrivateNetworks lets the tool reach loopback, link-local and private addresses.
	// Off by default so that model-written code cannot probe the gateway's own network.
	AllowPrivateNetworks bool
}

// Timeout is TimeoutMs as a duration.
func (w WebFetch) Timeout() time.Duration { return time.Duration(w.TimeoutMs) * time.Millisecond }

// Sandbox is the tool policy for sandboxed agents, kept as the contract's switch (docs/semantics.md, C4).
type Sandbox struct {
	// Tools is what sandboxed agents may use beyond their policy.
	Tools SandboxTools
}

// SandboxTools lists what the sandbox tool policy additionally allows.
type SandboxTools struct {
	// AlsoAllow names tools or bundled plugins that sandboxed agents may use on top of their
	// policy. Sandboxed agents with MCP servers need BundleMCP here to reach those servers.
	AlsoAllow []string
}

// BundleMCP is the name of the bundled MCP plugin in Sandbox.Tools.AlsoAllow (C4).
const BundleMCP = "bundle-mcp"

// AllowsBundleMCP reports whether sandboxed agents may use the configured MCP servers (C4).
func (s Sandbox) AllowsBundleMCP() bool { return slices.Contains(s.Tools.AlsoAllow, BundleMCP) }

// MCP is the `mcp` section.
type MCP struct {
	// Servers maps a server name (1–64 of A–Z a–z 0–9 _ -) to its connection. The name becomes
	// the owner in catalog ids (mcp:<server>:<tool>) and, made a safe identifier, the guest's
	// MCP.<server> namespace.
	Servers map[string]MCPServer
}

// ServerNames returns the server names sorted, for a deterministic catalog order.
func (m MCP) ServerNames() []string {
	names := make([]string, 0, len(m.Servers))
	for name := range m.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// MCPServer is one MCP server. Exactly one of Command (a stdio server the gateway starts) and URL
// (a streamable HTTP server) is set.
type MCPServer struct {
	// Command starts a stdio server: the program (no shell runs), with Args. Give either
	// Command or URL.
	Command string
	// Args are the program's arguments.
	Args []string
	// Env is the child's environment on top of a minimal one (PATH, HOME, USER, LOGNAME, SHELL,
	// TMPDIR, TZ, TERM, LANG and LC_*): the gateway's own variables — API keys among them —
	// never reach an MCP server unless named here or in InheritEnv.
	Env map[string]string
	// InheritEnv names gateway environment variables passed to the child as they are.
	InheritEnv []string
	Cwd        string // "" means the gateway's working directory

	URL     string            // http or https
	Headers map[string]string // sent with every HTTP request

	// Disabled switches the server off without deleting its settings (`enabled: false` in the
	// file; a server is on unless it says so).
	Disabled bool
	// Trusted says the server's results are the operator's own content: they reach the model
	// without the untrusted-content marking. Default false: an MCP server is someone else's
	// prose.
	Trusted bool
	// Sequential names the server's tools (globs; ["*"] for `sequential: true`) that must not
	// run concurrently: a run's calls to them start one at a time, in call order.
	Sequential []string
	// TimeoutMs bounds connecting and each request: 100–600000, default 60000 (0 means the
	// default).
	TimeoutMs int
}

// Stdio reports whether the server is a child process rather than an HTTP endpoint.
func (s MCPServer) Stdio() bool { return s.Command != "" }

// Timeout is TimeoutMs as a duration.
func (s MCPServer) Timeout() time.Duration { return time.Duration(s.TimeoutMs) * time.Millisecond }

// Runtime configures the WebAssembly engine. Compiling the QuickJS module costs about 600 ms cold
// and about 18 ms from wazero's on-disk cache, hence the cache is on by default.
type Runtime struct {
	CompileCache    bool   // default true; false compiles in memory on every start
	CompileCacheDir string // "" means a "codemode/wazero" directory in the user cache dir
	// Admission bounds the execs and waits running at once (see Admission).
	Admission Admission
	// Suspended bounds the store of suspended runs in all, per principal and per session, in
	// runs and in bytes (see Suspended).
	Suspended Suspended
	// Results bounds the values cells save for later cells (see Results).
	Results Results
}

// CompileCachePath returns the directory for wazero's compilation cache, or "" when the cache is
// off. It fails only when the cache is on, no directory is set and the user cache directory is
// unknown (no $HOME, for example); callers may then run without a cache.
func (r Runtime) CompileCachePath() (string, error) {
	if !r.CompileCache {
		return "", nil
	}
	if r.CompileCacheDir != "" {
		return r.CompileCacheDir, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("config: no directory for the compilation cache: %w", err)
	}
	return filepath.Join(dir, "codemode", "wazero"), nil
}

// The only values the contract allows for tools.codeMode.runtime, .mode and .languages (C2).
const (
	RuntimeQuickJSWASI = "quickjs-wasi"
	ModeOnly           = "only"
	LanguageJavaScript = "javascript"
	LanguageTypeScript = "typescript"
)

// CodeMode is tools.codeMode (C1, C2): the switch and the limits of code mode. In a file only
// `enabled: true` turns it on (an absent or disabled section leaves it off); in Go, start from
// DefaultCodeMode() (on, with the contract's limits) and change what you need. The limits are
// validated against the ranges listed here and in docs/semantics.md.
type CodeMode struct {
	// Enabled turns code mode on: the model sees exec, wait and the direct-only tools, and every
	// other tool is catalogued behind exec. Off, every tool is exposed directly.
	Enabled bool
	// Runtime is the sandbox: RuntimeQuickJSWASI, the only one.
	Runtime string
	// Mode is ModeOnly, the only one: expose exec, wait and direct-only tools, catalog the rest.
	Mode string
	// Languages the model may write cells in: a non-empty subset of LanguageJavaScript and
	// LanguageTypeScript, in the order written. TypeScript off means the compiler is never loaded.
	Languages           []string
	TimeoutMs           int   // 100–60000: wall clock per exec or wait call
	MemoryLimitBytes    int64 // 1048576–1073741824: guest heap
	MaxOutputBytes      int   // 1024–10485760: text, json and logs returned per call
	MaxSnapshotBytes    int64 // 1024–268435456: serialized VM of a suspended run
	MaxPendingToolCalls int   // 1–128: nested tool calls in flight at once
	SnapshotTTLSeconds  int   // 1–86400: how long a suspended run waits for `wait`
	// SearchDefaultLimit is tools.search's limit when the cell gives none. Any integer ≥ 1 is
	// accepted and then clamped to MaxSearchLimit, as the contract says "clamped", not "rejected" (K5).
	SearchDefaultLimit int
	MaxSearchLimit     int // 1–50: the most results one tools.search returns
	// SearchEmbeddings turns on dense retrieval for tool search; nil (the default) keeps it lexical.
	SearchEmbeddings *SearchEmbeddings
	// Auto (the file's `enabled: "auto"`, with Enabled true) activates code mode only for runs
	// whose model (api.RunContext.Model) matches PreferredModels; other runs get their tools
	// directly. See PrefersModel.
	Auto bool
	// PreferredModels are model-name globs ("gpt-5*", "claude-sonnet-*") for Auto; nil means
	// DefaultPreferredModels.
	PreferredModels []string
}

// DefaultCodeMode returns code mode enabled with the contract's default limits
// (docs/semantics.md, C2): what a library user starts from. A configuration file that does not
// enable code mode gets the same limits with Enabled false (C1).
func DefaultCodeMode() CodeMode {
	return CodeMode{
		Enabled:             true,
		Runtime:             RuntimeQuickJSWASI,
		Mode:                ModeOnly,
		Languages:           []string{LanguageJavaScript, LanguageTypeScript},
		TimeoutMs:           10000,
		MemoryLimitBytes:    67108864,
		MaxOutputBytes:      65536,
		MaxSnapshotBytes:    10485760,
		MaxPendingToolCalls: 16,
		SnapshotTTLSeconds:  900,
		SearchDefaultLimit:  8,
		MaxSearchLimit:      50,
	}
}

// AllowsLanguage reports whether cells may be written in lang ("javascript" or "typescript").
func (c CodeMode) AllowsLanguage(lang string) bool { return slices.Contains(c.Languages, lang) }

// Timeout is TimeoutMs as a duration.
func (c CodeMode) Timeout() time.Duration { return time.Duration(c.TimeoutMs) * time.Millisecond }

// SnapshotTTL is SnapshotTTLSeconds as a duration.
func (c CodeMode) SnapshotTTL() time.Duration {
	return time.Duration(c.SnapshotTTLSeconds) * time.Second
}

// SearchLimit applies the search rule (K5) to a limit requested by a cell: requested ≤ 0 means
// "none given" and yields SearchDefaultLimit; anything larger than MaxSearchLimit is clamped.
func (c CodeMode) SearchLimit(requested int) int {
	if requested <= 0 {
		requested = c.SearchDefaultLimit
	}
	return max(1, min(requested, c.MaxSearchLimit))
}

// Defaults for settings other than tools.codeMode; see the field comments.
const (
	defaultWebFetchTimeoutMs  = 15000
	defaultWebFetchMaxBytes   = 2097152
	defaultMCPServerTimeoutMs = 60000
)

// defaults is what an empty object parses to.
// fileCodeMode is tools.codeMode of a file that does not mention it: off (C1).
func fileCodeMode() CodeMode {
	c := DefaultCodeMode()
	c.Enabled = false
	return c
}

func defaults() *Config {
	return &Config{
		Tools: Tools{
			CodeMode: fileCodeMode(),
			Swarm:    DefaultSwarm(),
			WebFetch: WebFetch{
				Enabled:   true,
				TimeoutMs: defaultWebFetchTimeoutMs,
				MaxBytes:  defaultWebFetchMaxBytes,
			},
		},
		MCP:     MCP{Servers: map[string]MCPServer{}},
		Runtime: Runtime{CompileCache: true, Results: defaultResults()},
		Serve: Serve{HTTP: ServeHTTP{
			SessionIdleTimeoutSeconds: defaultSessionIdleTimeoutSeconds,
			MaxSessions:               defaultMaxSessions,
			MaxSessionsPerClient:      defaultMaxSessionsPerClient,
			ReadHeaderTimeoutSeconds:  defaultReadHeaderTimeoutSeconds,
			ReadBodyTimeoutSeconds:    defaultReadBodyTimeoutSeconds,
			IdleTimeoutSeconds:        defaultIdleTimeoutSeconds,
			MaxConnections:            defaultMaxConnections,
			MaxConnectionsPerClient:   defaultMaxConnectionsPerClient,
		}},
	}
}

// defaultFile is shipped so users can copy a commented, complete example; Default parses it
// rather than duplicating its values in Go, and a test keeps it valid.
//
//go:embed default.json5
var defaultFile []byte

// DefaultFile returns the embedded default configuration file, for `init`-style commands that
// write it out for the user to edit.
func DefaultFile() []byte { return slices.Clone(defaultFile) }

// Default returns the embedded default configuration: code mode on with the contract's limits,
// workspace ".", no MCP servers, the shell tool off and web fetch on. Each call returns a fresh
// value the caller may modify. It panics only if the embedded file is invalid, which a test
// rules out.
func Default() *Config {
	cfg, err := Parse(defaultFile, "default.json5")
	if err != nil {
		panic("config: embedded default.json5 is invalid: " + err.Error())
	}
	return cfg
}

// Load reads and parses the configuration file at path. Errors name the path: read errors as
// the *fs.PathError they wrap, problems in the file as an ErrorList whose entries carry it.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(data, path)
}
