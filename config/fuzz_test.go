package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, that every accepted file is within the C2
// ranges (and the other documented ones), that every rejection is a well-formed ErrorList, and
// that the position indexer agrees with json5 about where every value is.
func FuzzParse(f *testing.F) {
	f.Add(defaultFile)
	inputs, _ := filepath.Glob(filepath.Join("testdata", "errors", "*.json5"))
	for _, in := range inputs {
		if data, err := os.ReadFile(in); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		`{}`, `{tools: {codeMode: true}}`, `{tools: {codeMode: {searchDefaultLimit: 1e300, maxSearchLimit: 3}}}`,
		`{tools: {allow: [], deny: ['a*', "b?"]}}`, `{mcp: {servers: {a: {url: "http://h", headers: {X: "y"}}}}}`,
		`{a: 0x1F, b: +Infinity, c: -.5, d: NaN, 'e': "\u00e9\
"}`, "{/**/a/* * /:*/: 1 // x\r}", `{"a": {"a": 1, "a": [1, {"a": 2}]}}`, "\xef\xbb\xbf{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz.json5")
		if err != nil {
			checkErrorList(t, data, err)
		} else {
			checkRanges(t, cfg)
		}
		checkIndex(t, data)
	})
}

func checkErrorList(t *testing.T, data []byte, err error) {
	var list ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		t.Fatalf("error %T %v is not a non-empty ErrorList", err, err)
	}
	for i, e := range list {
		if e.Msg == "" || e.File != "fuzz.json5" {
			t.Fatalf("malformed error %+v", e)
		}
		if e.Line < 0 || e.Column < 0 || (e.Line == 0) != (e.Column == 0) {
			t.Fatalf("bad position in %v", e)
		}
		// Positions are only missing if json5 itself panicked.
		if e.Line == 0 && !strings.Contains(e.Msg, "parser failed") {
			t.Fatalf("no position for %v", e)
		}
		if i > 0 && list[i-1].offset >= 0 && e.offset >= 0 && list[i-1].offset > e.offset {
			t.Fatalf("errors not sorted: %v", err)
		}
		if e.offset > len(data) {
			t.Fatalf("offset %d past the end (%d): %v", e.offset, len(data), e)
		}
	}
}

func inRange[T int | int64](t *testing.T, name string, v T, lo, hi int64) {
	if int64(v) < lo || int64(v) > hi {
		t.Fatalf("%s = %d, outside %d–%d", name, v, lo, hi)
	}
}

func checkRanges(t *testing.T, cfg *Config) {
	c := cfg.Tools.CodeMode
	if c.Runtime != "quickjs-wasi" || c.Mode != "only" {
		t.Fatalf("runtime, mode = %q, %q", c.Runtime, c.Mode)
	}
	if len(c.Languages) == 0 || len(c.Languages) > 2 ||
		(len(c.Languages) == 2 && c.Languages[0] == c.Languages[1]) {
		t.Fatalf("languages = %q", c.Languages)
	}
	for _, l := range c.Languages {
		if l != "javascript" && l != "typescript" {
			t.Fatalf("languages = %q", c.Languages)
		}
	}
	inRange(t, "timeoutMs", c.TimeoutMs, 100, 60000)
	inRange(t, "memoryLimitBytes", c.MemoryLimitBytes, 1048576, 1073741824)
	inRange(t, "maxOutputBytes", c.MaxOutputBytes, 1024, 10485760)
	inRange(t, "maxSnapshotBytes", c.MaxSnapshotBytes, 1024, 268435456)
	inRange(t, "maxPendingToolCalls", c.MaxPendingToolCalls, 1, 128)
	inRange(t, "snapshotTtlSeconds", c.SnapshotTTLSeconds, 1, 86400)
	inRange(t, "maxSearchLimit", c.MaxSearchLimit, 1, 50)
	inRange(t, "searchDefaultLimit", c.SearchDefaultLimit, 1, int64(c.MaxSearchLimit))
	inRange(t, "webFetch.timeoutMs", cfg.Tools.WebFetch.TimeoutMs, 100, 120000)
	inRange(t, "webFetch.maxBytes", cfg.Tools.WebFetch.MaxBytes, 1024, 67108864)
	for _, list := range [][]string{cfg.Tools.Allow, cfg.Tools.Deny, cfg.Tools.DirectOnly, cfg.Tools.Sandbox.Tools.AlsoAllow} {
		for _, s := range list {
			if s == "" {
				t.Fatal("empty tool name accepted")
			}
		}
	}
	for name, s := range cfg.MCP.Servers {
		if !serverName.MatchString(name) {
			t.Fatalf("server name %q accepted", name)
		}
		if (s.Command == "") == (s.URL == "") {
			t.Fatalf("server %q: command %q, url %q", name, s.Command, s.URL)
		}
		if s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
			t.Fatalf("server %q: url %q", name, s.URL)
		}
		inRange(t, "mcp timeoutMs", s.TimeoutMs, 100, 600000)
	}
}

// checkIndex: for input json5 accepts, every decoded value has an indexed position whose first
// byte matches its kind.
func checkIndex(t *testing.T, data []byte) {
	src := data
	if hasBOM(src) {
		src = append([]byte("   "), src[3:]...)
	}
	v, err := unmarshal(src)
	if err != nil {
		return
	}
	idx := buildIndex(src)
	var walk func(p path, v any, depth int)
	walk = func(p path, v any, depth int) {
		if depth > maxIndexDepth {
			return
		}
		s, ok := idx.spans[p.String()]
		if !ok || s.end < s.value {
			t.Fatalf("no complete span for %q in %q", p, data)
		}
		first := src[s.value]
		switch v := v.(type) {
		case map[string]any:
			if first != '{' {
				t.Fatalf("%q: object at %q", p, src[s.value:s.end])
			}
			for k, e := range v {
				walk(p.key(k), e, depth+1)
			}
		case []any:
			if first != '[' {
				t.Fatalf("%q: array at %q", p, src[s.value:s.end])
			}
			for i, e := range v {
				walk(p.index(i), e, depth+1)
			}
		case string:
			if first != '"' && first != '\'' {
				t.Fatalf("%q: string at %q", p, src[s.value:s.end])
			}
		default:
			if !isLiteralByte(first) {
				t.Fatalf("%q: literal at %q", p, src[s.value:s.end])
			}
		}
	}
	walk(nil, v, 0)
}
