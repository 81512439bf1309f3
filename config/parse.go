package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/titanous/json5"
)

// Parse parses a configuration file. filename is used only in error messages and may be empty.
// On failure the error is an ErrorList (never empty) and the Config is nil.
func Parse(data []byte, filename string) (*Config, error) {
	d := &decoder{data: data, file: filename}
	cfg := d.parse()
	if len(d.errs) > 0 {
		sortErrors(d.errs)
		return nil, d.errs
	}
	return cfg, nil
}

type decoder struct {
	data []byte
	file string
	idx  *index
	errs ErrorList
}

func (d *decoder) parse() *Config {
	src := d.data
	if hasBOM(src) {
		// json5 rejects a byte order mark; blank it out so offsets stay those of the file.
		src = slices.Clone(src)
		copy(src, "   ")
	}
	if start, ok := skipSpace(src, 0); ok && start == len(src) {
		d.addAt(0, nil, "the file is empty; expected an object such as {}")
		return nil
	}
	if at, deep := tooDeep(src); deep {
		d.addAt(at, nil, fmt.Sprintf("the file nests objects and arrays deeper than %d levels", maxFileDepth))
		return nil
	}
	root, err := unmarshal(src)
	if err != nil {
		d.syntaxError(err)
		return nil
	}
	d.idx = buildIndex(src)
	for _, dup := range d.idx.dups {
		line, col := lineCol(d.data, dup.first)
		d.addAt(dup.at, dup.p, fmt.Sprintf("duplicate key (first set at %d:%d)", line, col))
	}
	m, ok := root.(map[string]any)
	if !ok {
		d.errorf(nil, "the top level must be an object, got %s", describe(root))
		return nil
	}
	cfg := defaults()
	d.config(m, cfg)
	return cfg
}

// maxFileDepth bounds the nesting of objects and arrays in a configuration file. The json5
// decoder recurses once per level with no limit of its own (a million levels took 256 MB of
// stack; a few million are a fatal stack overflow); a configuration needs a handful.
const maxFileDepth = 256

// tooDeep reports whether src nests deeper than maxFileDepth, and the offset of the bracket
// that does. It follows json5's lexical rules for strings and comments, like the indexer.
func tooDeep(src []byte) (int, bool) {
	depth := 0
	for pos := 0; pos < len(src); {
		next, ok := skipSpace(src, pos)
		if !ok || next >= len(src) {
			return 0, false
		}
		pos = next
		switch c := src[pos]; c {
		case '"', '\'':
			for pos++; pos < len(src) && src[pos] != c; pos++ {
				if src[pos] == '\\' {
					pos++
				}
			}
		case '{', '[':
			if depth++; depth > maxFileDepth {
				return pos, true
			}
		case '}', ']':
			depth--
		}
		pos++
	}
	return 0, false
}

// unmarshal runs json5, turning any panic from it into an error: its decoder re-panics on
// internal inconsistencies, and a malformed file must never take the gateway down.
func unmarshal(src []byte) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the JSON5 parser failed: %v", r)
		}
	}()
	err = json5.Unmarshal(src, &v)
	return v, err
}

func (d *decoder) syntaxError(err error) {
	var syn *json5.SyntaxError
	var typ *json5.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		d.addAt(d.syntaxPosition(syn))
	case errors.As(err, &typ):
		// Only numbers can fail to convert to the untyped values we ask for (a hexadecimal
		// literal beyond int64, or a lone "."); Offset is just past the literal.
		lit := strings.TrimPrefix(typ.Value, "number ")
		d.addAt(int(typ.Offset)-len(lit), nil, "syntax error: invalid number "+lit)
	default:
		d.addAt(-1, nil, "syntax error: "+err.Error())
	}
}

// syntaxPosition turns json5's byte count into the offset of the offending character and
// rewrites the messages that would mislead.
func (d *decoder) syntaxPosition(syn *json5.SyntaxError) (int, path, string) {
	const invalid = "invalid character "
	// json5 counts the offending byte as read.
	off, msg := int(syn.Offset)-1, syn.Error()
	switch {
	case off < 0 || off >= len(d.data) || msg == "unexpected end of JSON input",
		// At the end of input json5 feeds its state machine a phantom space.
		off == len(d.data)-1 && strings.HasPrefix(msg, invalid+"' '") && d.data[off] != ' ':
		off, msg = len(d.data), "unexpected end of input"
	case d.data[off] >= utf8.RuneSelf && strings.HasPrefix(msg, invalid):
		// json5 quotes a single byte as if it were Latin-1; show what the user typed.
		rest := ""
		if i := strings.Index(msg[len(invalid)+1:], "' "); i >= 0 {
			rest = msg[len(invalid)+1+i+1:]
		}
		if r, n := utf8.DecodeRune(d.data[off:]); r == utf8.RuneError && n <= 1 {
			msg = fmt.Sprintf("invalid byte 0x%02X%s (the file must be UTF-8)", d.data[off], rest)
		} else {
			msg = invalid + strconv.QuoteRune(r) + rest
		}
	}
	return off, nil, "syntax error: " + msg
}

// addAt records a problem at a byte offset (-1: unknown).
func (d *decoder) addAt(off int, p path, msg string) {
	e := &Error{File: d.file, Path: p.String(), Msg: msg, offset: off}
	e.Line, e.Column = lineCol(d.data, off)
	d.errs = append(d.errs, e)
}

// errorf records a problem with the value at p.
func (d *decoder) errorf(p path, format string, args ...any) {
	off := -1
	if s, ok := d.idx.lookup(p); ok {
		off = s.value
	}
	d.addAt(off, p, fmt.Sprintf(format, args...))
}

// keyErrorf records a problem with the key of p (an unknown or misspelt name).
func (d *decoder) keyErrorf(p path, format string, args ...any) {
	off := -1
	if s, ok := d.idx.lookup(p); ok {
		off = s.value
		if s.key >= 0 {
			off = s.key
		}
	}
	d.addAt(off, p, fmt.Sprintf(format, args...))
}

// literal returns the source text of the value at p, to echo numbers as the user wrote them
// (7e4, 0x10, 10000.5).
func (d *decoder) literal(p path, v float64) string {
	if s, ok := d.idx.spans[p.String()]; ok && s.end > s.value && s.end-s.value <= 40 {
		if text := d.data[s.value:s.end]; isLiteralByte(text[0]) {
			return string(text)
		}
	}
	return formatNumber(v)
}

func formatNumber(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == math.Trunc(f) && math.Abs(f) < 1e21:
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// describe names a JSON value's type, with the value itself when it is short, for type errors.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean " + strconv.FormatBool(v)
	case float64:
		return "number " + formatNumber(v)
	case string:
		if len(v) > 40 {
			return "a string"
		}
		return "string " + strconv.Quote(v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// object checks that v is an object whose keys are all known, reporting each unknown key with
// the closest known one. A key a user might reasonably have put at the wrong level gets a hint.
func (d *decoder) object(p path, v any, known ...string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.errorf(p, "expected an object, got %s", describe(v))
		return nil, false
	}
	d.unknownKeys(p, m, known)
	return m, true
}

func (d *decoder) unknownKeys(p path, m map[string]any, known []string) {
	for _, k := range sortedKeys(m) {
		if slices.Contains(known, k) {
			continue
		}
		kp := p.key(k)
		switch hint, s := hintFor(kp), suggest(k, known); {
		case hint != "":
			d.keyErrorf(kp, "unknown key (%s)", hint)
		case s != "":
			d.keyErrorf(kp, "unknown key (did you mean %q?)", s)
		default:
			d.keyErrorf(kp, "unknown key (expected one of: %s)", strings.Join(known, ", "))
		}
	}
}

// misplaced gives hints for keys that are valid elsewhere or in other tools' config formats.
var misplaced = map[string]string{
	"mcpServers":           "MCP servers go in mcp: { servers: { … } }",
	"codeMode":             "did you mean tools.codeMode?",
	"servers":              "did you mean mcp.servers?",
	"compileCache":         "did you mean runtime.compileCache?",
	"admission":            "did you mean runtime.admission?",
	"suspended":            "did you mean runtime.suspended?",
	"redis":                "did you mean runStore.redis?",
	"runtime.runStore":     "runStore is a top-level section, not part of runtime",
	"token":                "did you mean serve.http.token?",
	"http":                 "did you mean serve.http?",
	"serve.token":          "did you mean serve.http.token?",
	"tools.mcpServers":     "MCP servers go in the top-level mcp: { servers: { … } }",
	"tools.mcp":            "mcp is a top-level section, not part of tools",
	"tools.alsoAllow":      "did you mean tools.sandbox.tools.alsoAllow?",
	"swarm":                "did you mean tools.swarm?",
	"tools.codeMode.swarm": "swarm is tools.swarm, beside codeMode",
	// Other MCP clients' server entries.
	"mcp.servers.*.type":        "the transport follows from command (stdio) or url (HTTP); remove type",
	"mcp.servers.*.transport":   "the transport follows from command (stdio) or url (HTTP); remove transport",
	"mcp.servers.*.environment": `did you mean "env"?`,
	"mcp.servers.*.disabled":    "use enabled: false",
}

func hintFor(p path) string {
	if len(p) == 4 && p[0] == "mcp" && p[1] == "servers" {
		return misplaced["mcp.servers.*."+p[3]]
	}
	return misplaced[p.String()]
}

func (d *decoder) boolean(p path, v any) (bool, bool) {
	b, ok := v.(bool)
	if !ok {
		d.errorf(p, "expected a boolean, got %s", describe(v))
	}
	return b, ok
}

func (d *decoder) str(p path, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		d.errorf(p, "expected a string, got %s", describe(v))
	}
	return s, ok
}

// integer checks that v is an integer. JSON5 numbers are JavaScript numbers, so 1e4 and 0x2710
// are the integer 10000, while 10000.5, NaN and Infinity are not integers.
func (d *decoder) integer(p path, v any) (float64, bool) {
	f, ok := v.(float64)
	if !ok {
		d.errorf(p, "expected an integer, got %s", describe(v))
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		d.errorf(p, "%s is not an integer", d.literal(p, f))
		return 0, false
	}
	return f, true
}

// number checks that v is an integer within [lo, hi].
func (d *decoder) number(p path, v any, lo, hi int64) (int64, bool) {
	f, ok := d.integer(p, v)
	if !ok {
		return 0, false
	}
	if f < float64(lo) || f > float64(hi) {
		d.errorf(p, "%s is out of range (%d–%d)", d.literal(p, f), lo, hi)
		return 0, false
	}
	return int64(f), true
}

// stringList checks for an array of non-empty strings. The result is non-nil even when empty,
// so that callers can tell `allow: []` from an absent key.
func (d *decoder) stringList(p path, v any) ([]string, bool) {
	a, ok := v.([]any)
	if !ok {
		d.errorf(p, "expected an array of strings, got %s", describe(v))
		return nil, false
	}
	out := make([]string, 0, len(a))
	for i, e := range a {
		ep := p.index(i)
		s, ok := d.str(ep, e)
		switch {
		case !ok:
		case s == "":
			d.errorf(ep, "must not be empty")
		default:
			out = append(out, s)
		}
	}
	return out, len(out) == len(a)
}

// stringMap checks for an object whose values are all strings.
func (d *decoder) stringMap(p path, v any) (map[string]string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.errorf(p, "expected an object of strings, got %s", describe(v))
		return nil, false
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		if s, ok := d.str(p.key(k), m[k]); ok {
			out[k] = s
		}
	}
	return out, len(out) == len(m)
}

// Small setters keep the section decoders to one line per field.

func (d *decoder) setBool(p path, m map[string]any, key string, dst *bool) {
	if v, ok := m[key]; ok {
		if b, ok := d.boolean(p.key(key), v); ok {
			*dst = b
		}
	}
}

func (d *decoder) setString(p path, m map[string]any, key string, dst *string) {
	if v, ok := m[key]; ok {
		if s, ok := d.str(p.key(key), v); ok {
			*dst = s
		}
	}
}

func (d *decoder) setStrings(p path, m map[string]any, key string, dst *[]string) {
	if v, ok := m[key]; ok {
		if l, ok := d.stringList(p.key(key), v); ok {
			*dst = l
		}
	}
}

func setInt[T int | int64](d *decoder, p path, m map[string]any, key string, lo, hi int64, dst *T) {
	if v, ok := m[key]; ok {
		if n, ok := d.number(p.key(key), v, lo, hi); ok {
			*dst = T(n)
		}
	}
}

func (d *decoder) config(m map[string]any, cfg *Config) {
	d.unknownKeys(nil, m, []string{"workspace", "tools", "mcp", "plugins", "runtime", "serve", "runStore"})
	d.setString(nil, m, "workspace", &cfg.Workspace)
	if v, ok := m["tools"]; ok {
		d.tools(path{"tools"}, v, &cfg.Tools)
	}
	if v, ok := m["mcp"]; ok {
		d.mcp(path{"mcp"}, v, &cfg.MCP)
	}
	if v, ok := m["plugins"]; ok {
		if m, ok := d.object(path{"plugins"}, v, "git"); ok {
			if v, ok := m["git"]; ok {
				if m, ok := d.object(path{"plugins", "git"}, v, "enabled"); ok {
					d.setBool(path{"plugins", "git"}, m, "enabled", &cfg.Plugins.Git.Enabled)
				}
			}
		}
	}
	if v, ok := m["runtime"]; ok {
		d.runtime(path{"runtime"}, v, &cfg.Runtime)
	}
	if v, ok := m["serve"]; ok {
		d.serve(path{"serve"}, v, &cfg.Serve)
	}
	if v, ok := m["runStore"]; ok {
		d.runStore(path{"runStore"}, v, &cfg.RunStore)
	}
}

func (d *decoder) tools(p path, v any, t *Tools) {
	m, ok := d.object(p, v, "codeMode", "swarm", "allow", "deny", "disableTools", "directOnly",
		"approvals", "exec", "webFetch", "sandbox")
	if !ok {
		return
	}
	if v, ok := m["codeMode"]; ok {
		d.codeMode(p.key("codeMode"), v, &t.CodeMode)
	}
	if v, ok := m["swarm"]; ok {
		d.swarm(p.key("swarm"), v, &t.Swarm) // issue 25
	}
	d.setStrings(p, m, "allow", &t.Allow)
	d.setStrings(p, m, "deny", &t.Deny)
	d.setBool(p, m, "disableTools", &t.DisableTools)
	d.setStrings(p, m, "directOnly", &t.DirectOnly)
	for i, name := range t.DirectOnly {
		if name == "exec" || name == "wait" {
			d.errorf(p.key("directOnly").index(i),
				"%q is a code mode control tool and cannot be direct-only", name)
		}
	}
	if v, ok := m["approvals"]; ok {
		d.approvals(p.key("approvals"), v, &t.Approvals)
	}
	if v, ok := m["exec"]; ok {
		if m, ok := d.object(p.key("exec"), v, "enabled"); ok {
			d.setBool(p.key("exec"), m, "enabled", &t.Exec.Enabled)
		}
	}
	if v, ok := m["webFetch"]; ok {
		wp := p.key("webFetch")
		if m, ok := d.object(wp, v, "enabled", "timeoutMs", "maxBytes", "allowPrivateNetworks"); ok {
			d.setBool(wp, m, "enabled", &t.WebFetch.Enabled)
			setInt(d, wp, m, "timeoutMs", 100, 120000, &t.WebFetch.TimeoutMs)
			setInt(d, wp, m, "maxBytes", 1024, 67108864, &t.WebFetch.MaxBytes)
			d.setBool(wp, m, "allowPrivateNetworks", &t.WebFetch.AllowPrivateNetworks)
		}
	}
	if v, ok := m["sandbox"]; ok {
		sp := p.key("sandbox")
		if m, ok := d.object(sp, v, "tools"); ok {
			if v, ok := m["tools"]; ok {
				if m, ok := d.object(sp.key("tools"), v, "alsoAllow"); ok {
					d.setStrings(sp.key("tools"), m, "alsoAllow", &t.Sandbox.Tools.AlsoAllow)
				}
			}
		}
	}
}

// codeModeKeys is in the contract's table order (docs/semantics.md, C2), which is also the order "expected one of" lists.
var codeModeKeys = []string{"enabled", "runtime", "mode", "languages", "timeoutMs",
	"memoryLimitBytes", "maxOutputBytes", "maxSnapshotBytes", "maxPendingToolCalls",
	"snapshotTtlSeconds", "searchDefaultLimit", "maxSearchLimit", "searchEmbeddings", "preferredModels"}

func (d *decoder) codeMode(p path, v any, c *CodeMode) {
	if b, ok := v.(bool); ok {
		c.Enabled = b // C1: true is {enabled: true}; false is disabled
		return
	}
	if s, ok := v.(string); ok && s == "auto" {
		c.Enabled, c.Auto = true, true // like {enabled: "auto"}
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.errorf(p, `expected a boolean, "auto" or an object, got %s`, describe(v))
		return
	}
	d.unknownKeys(p, m, codeModeKeys)
	// C1: only an explicit `enabled: true` (or "auto") enables; every other field leaves it off.
	d.codeModeEnabled(p, m, c)
	d.preferredModels(p, m, c)
	d.enum(p, m, "runtime", RuntimeQuickJSWASI, &c.Runtime)
	d.enum(p, m, "mode", ModeOnly, &c.Mode)
	if v, ok := m["languages"]; ok {
		if l, ok := d.languages(p.key("languages"), v); ok {
			c.Languages = l
		}
	}
	setInt(d, p, m, "timeoutMs", rangeTimeoutMs.lo, rangeTimeoutMs.hi, &c.TimeoutMs)
	setInt(d, p, m, "memoryLimitBytes", rangeMemoryLimitBytes.lo, rangeMemoryLimitBytes.hi, &c.MemoryLimitBytes)
	setInt(d, p, m, "maxOutputBytes", rangeMaxOutputBytes.lo, rangeMaxOutputBytes.hi, &c.MaxOutputBytes)
	setInt(d, p, m, "maxSnapshotBytes", rangeMaxSnapshotBytes.lo, rangeMaxSnapshotBytes.hi, &c.MaxSnapshotBytes)
	setInt(d, p, m, "maxPendingToolCalls", rangeMaxPendingToolCalls.lo, rangeMaxPendingToolCalls.hi, &c.MaxPendingToolCalls)
	setInt(d, p, m, "snapshotTtlSeconds", rangeSnapshotTTLSeconds.lo, rangeSnapshotTTLSeconds.hi, &c.SnapshotTTLSeconds)
	setInt(d, p, m, "maxSearchLimit", rangeMaxSearchLimit.lo, rangeMaxSearchLimit.hi, &c.MaxSearchLimit)
	if v, ok := m["searchDefaultLimit"]; ok {
		// Any integer ≥ 1 is accepted and clamped (C2). Clamp before converting so that 1e300
		// cannot overflow.
		sp := p.key("searchDefaultLimit")
		if f, ok := d.integer(sp, v); ok {
			if f < 1 {
				d.errorf(sp, "%s is out of range (minimum 1)", d.literal(sp, f))
			} else {
				c.SearchDefaultLimit = int(min(f, float64(c.MaxSearchLimit)))
			}
		}
	}
	c.SearchDefaultLimit = min(c.SearchDefaultLimit, c.MaxSearchLimit)
	if v, ok := m["searchEmbeddings"]; ok && v != nil {
		c.SearchEmbeddings = d.searchEmbeddings(p.key("searchEmbeddings"), v) // issue 23
	}
}

// enum checks a string setting that has exactly one allowed value.
func (d *decoder) enum(p path, m map[string]any, key, only string, dst *string) {
	v, ok := m[key]
	if !ok {
		return
	}
	s, ok := d.str(p.key(key), v)
	if !ok {
		return
	}
	if s != only {
		d.errorf(p.key(key), "%q is not supported (the only value is %q)", s, only)
		return
	}
	*dst = s
}

func (d *decoder) languages(p path, v any) ([]string, bool) {
	all := []string{LanguageJavaScript, LanguageTypeScript}
	a, ok := v.([]any)
	if !ok {
		d.errorf(p, "expected an array of strings, got %s", describe(v))
		return nil, false
	}
	if len(a) == 0 {
		d.errorf(p, `must list at least one of "javascript", "typescript"`)
		return nil, false
	}
	out := make([]string, 0, len(a))
	for i, e := range a {
		ep := p.index(i)
		s, ok := d.str(ep, e)
		switch {
		case !ok:
		case !slices.Contains(all, s):
			if sug := suggest(s, all); sug != "" {
				d.errorf(ep, "%q is not a supported language (did you mean %q?)", s, sug)
			} else {
				d.errorf(ep, `%q is not a supported language ("javascript" or "typescript")`, s)
			}
		case slices.Contains(out, s):
			d.errorf(ep, "duplicate language %q", s)
		default:
			out = append(out, s)
		}
	}
	return out, len(out) == len(a)
}

var serverName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func (d *decoder) mcp(p path, v any, mc *MCP) {
	m, ok := d.object(p, v, "servers")
	if !ok {
		return
	}
	v, ok = m["servers"]
	if !ok {
		return
	}
	sp := p.key("servers")
	servers, ok := v.(map[string]any)
	if !ok {
		d.errorf(sp, "expected an object mapping server names to servers, got %s", describe(v))
		return
	}
	for _, name := range sortedKeys(servers) {
		np := sp.key(name)
		if !serverName.MatchString(name) {
			d.keyErrorf(np, "invalid server name %q (use 1–64 letters, digits, '_' or '-')", name)
		}
		mc.Servers[name] = d.server(np, servers[name])
	}
}

func (d *decoder) server(p path, v any) MCPServer {
	s := MCPServer{TimeoutMs: defaultMCPServerTimeoutMs}
	m, ok := d.object(p, v, "command", "args", "env", "inheritEnv", "cwd", "url", "headers", "enabled", "timeoutMs", "trusted", "sequential")
	if !ok {
		return s
	}
	d.setBool(p, m, "trusted", &s.Trusted)
	d.sequentialTools(p, m, &s)
	d.setString(p, m, "command", &s.Command)
	d.setStrings(p, m, "args", &s.Args)
	d.setStrings(p, m, "inheritEnv", &s.InheritEnv)
	for i, k := range s.InheritEnv {
		if strings.ContainsAny(k, "=\x00") {
			d.errorf(p.key("inheritEnv").index(i), "invalid environment variable name %q", k)
		}
	}
	d.setString(p, m, "cwd", &s.Cwd)
	d.setString(p, m, "url", &s.URL)
	enabled := true
	d.setBool(p, m, "enabled", &enabled)
	s.Disabled = !enabled
	setInt(d, p, m, "timeoutMs", 100, 600000, &s.TimeoutMs)
	if v, ok := m["env"]; ok {
		if env, ok := d.stringMap(p.key("env"), v); ok {
			s.Env = env
			for _, k := range sortedKeys(env) {
				if val := env[k]; k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(val, "\x00") {
					d.keyErrorf(p.key("env").key(k), "invalid environment variable (names must be "+
						"non-empty without '=' or NUL; values without NUL)")
				}
			}
		}
	}
	if v, ok := m["headers"]; ok {
		if h, ok := d.stringMap(p.key("headers"), v); ok {
			s.Headers = h
			for _, k := range sortedKeys(h) {
				if !isToken(k) {
					d.keyErrorf(p.key("headers").key(k), "invalid HTTP header name")
				} else if strings.ContainsAny(h[k], "\r\n\x00") {
					d.errorf(p.key("headers").key(k), "HTTP header values must not contain CR, LF or NUL")
				}
			}
		}
	}

	_, hasCommand := m["command"]
	_, hasURL := m["url"]
	switch {
	case hasCommand && hasURL:
		d.errorf(p, "set either command (a stdio server) or url (an HTTP server), not both")
	case !hasCommand && !hasURL:
		d.errorf(p, "set command (a stdio server) or url (an HTTP server)")
	case hasCommand:
		if _, isString := m["command"].(string); isString && s.Command == "" {
			d.errorf(p.key("command"), "must not be empty")
		}
		if _, ok := m["headers"]; ok {
			d.keyErrorf(p.key("headers"), "headers apply only to HTTP servers (url)")
		}
	case hasURL:
		if _, isString := m["url"].(string); isString {
			d.checkURL(p.key("url"), s.URL)
		}
		for _, k := range []string{"args", "env", "inheritEnv", "cwd"} {
			if _, ok := m[k]; ok {
				d.keyErrorf(p.key(k), "%s applies only to stdio servers (command)", k)
			}
		}
	}
	return s
}

func (d *decoder) checkURL(p path, raw string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		d.errorf(p, "invalid URL %q", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		d.errorf(p, "URL %q must use http or https", raw)
	case u.Host == "":
		d.errorf(p, "URL %q has no host", raw)
	}
}

// isToken reports whether s is an HTTP token (RFC 9110), the syntax of a header name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
