package schemahint

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fuzzESBuild also parses every fuzzed declaration with esbuild: thorough
// but slow inside fuzz workers (SCHEMAHINT_FUZZ_ESBUILD=1).
var fuzzESBuild = os.Getenv("SCHEMAHINT_FUZZ_ESBUILD") == "1"

// watchdog crashes the fuzz worker when one input takes too long, so the
// fuzzer records it (a slow input is a bug: everything here is bounded).
func watchdog(raw []byte) (stop func()) {
	t := time.AfterFunc(5*time.Second, func() {
		panic(fmt.Sprintf("input took more than 5s: %q", raw))
	})
	return func() { t.Stop() }
}

func addSeeds(f *testing.F, add func(raw []byte)) {
	for _, c := range loadCatalog(f)[:60] {
		add(c.InputSchema)
	}
	for _, s := range []string{
		`{}`, `true`, `false`, `{"type":"object"}`,
		obj(`"a*/b":{"type":"string","description":"*/ x /*"}`),
		obj(`"e":{"enum":["*/","\n",null,1,{"a":[]}]}`, `"required":["e","missing"]`),
		`{"anyOf":[{"type":"string"},{"$ref":"#"}]}`,
		`{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"number"}}`,
		`{"type":"array","items":[{"type":"string"}],"additionalItems":false}`,
		deepObject(30),
	} {
		add([]byte(s))
	}
}

// FuzzParse: Parse never panics; what it accepts re-encodes to JSON that
// parses to the same hints.
func FuzzParse(f *testing.F) {
	addSeeds(f, func(raw []byte) { f.Add(raw) })
	f.Fuzz(func(t *testing.T, raw []byte) {
		defer watchdog(raw)()
		s, err := Parse(raw)
		if err != nil {
			return
		}
		again, err := s.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		s2, err := Parse(again)
		if err != nil {
			t.Fatalf("re-encoded schema does not parse: %v\n%s", err, again)
		}
		if a, b := InputHint(s, 300), InputHint(s2, 300); a != b {
			t.Fatalf("hints differ after round trip:\n%s\n%s", a, b)
		}
		h1, ok1 := OutputHint(s, 300)
		h2, ok2 := OutputHint(s2, 300)
		if h1 != h2 || ok1 != ok2 {
			t.Fatalf("output hints differ after round trip")
		}
	})
}

// FuzzInputHint: hints stay within maxLen and are stable; declarations
// rendered with an arbitrary description and schema parse as TypeScript and
// keep the description inside comments.
func FuzzInputHint(f *testing.F) {
	addSeeds(f, func(raw []byte) { f.Add(raw, 120, "Create an issue */ PWNED /*\n@param x") })
	f.Fuzz(func(t *testing.T, raw []byte, maxLen int, desc string) {
		defer watchdog(raw)()
		s, err := Parse(raw)
		if err != nil {
			return
		}
		maxLen = maxLen % 1000
		h := InputHint(s, maxLen)
		limit := maxLen
		if limit <= 0 {
			limit = DefaultHintLen
		}
		if len(h) > limit {
			t.Fatalf("hint %d bytes > %d: %s", len(h), limit, h)
		}
		if h != InputHint(s, maxLen) {
			t.Fatal("unstable hint")
		}
		if strings.ContainsAny(h, "\n\r\u2028\u2029") {
			t.Fatalf("hint spans lines: %q", h)
		}
		if o, ok := OutputHint(s, maxLen); ok && (len(o) > limit || strings.Contains(o, "/*")) {
			t.Fatalf("bad output hint %q", o)
		}

		// Declarations: the description is wrapped in markers that must
		// stay in comments (unless the schema itself uses the marker as a
		// name or literal, which renders as code or strings legitimately).
		d := cleanDoc(desc, 600, false)
		if strings.Contains(d, "*/") || strings.Contains(d, "/*") {
			t.Fatalf("cleanDoc kept a comment delimiter: %q", d)
		}
		tool := DTSTool{Name: "t", JSName: "t", Title: desc, Description: "PWNED " + desc, Input: s, Output: s}
		src := RenderToolDTS(DTSServer{Name: "s", JSName: "s"}, tool, DTSOptions{})
		if src != RenderToolDTS(DTSServer{Name: "s", JSName: "s"}, tool, DTSOptions{}) {
			t.Fatal("unstable declaration")
		}
		checkStructure(t, src)
		if fuzzESBuild {
			checkTS(t, "fuzz", src)
		}
		if !bytes.Contains(raw, []byte("PWNED")) {
			checkInert(t, src, "PWNED")
		}
	})
}

// genSchema builds a random JSON Schema (as JSON text) from the keywords
// this package handles, with hostile names, literals and prose.
func genSchema(r *rand.Rand, depth int) string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	hostileText := func() string {
		return quote(pick("PWNED */ x /*", "a\nPWNED\u2028b", "@param PWNED", "plain PWNED words", "\"PWNED\"", "PWNED\x00\u202e", strings.Repeat("PWNED ", 200)))
	}
	name := func() string {
		return quote(pick("a", "b", "path", "__proto__", "constructor", "default", "a-b", "1x", "", "a */ PWNED", "x\ny", "é", "$x", "_", "a\"b", "a\\b"))
	}
	literal := func() string {
		return pick(`"x"`, `"PWNED */"`, `"a\nb"`, `1`, `-2.5e3`, `true`, `null`, `{"a":1}`, `[1]`, quote(strings.Repeat("z", 300)))
	}
	annotations := func() string {
		var parts []string
		if r.IntN(2) == 0 {
			parts = append(parts, `"description":`+hostileText())
		}
		if r.IntN(4) == 0 {
			parts = append(parts, `"default":`+pick(literal(), hostileText()))
		}
		if r.IntN(6) == 0 {
			parts = append(parts, `"format":`+pick(`"uri"`, `"date-time"`, hostileText()))
		}
		if r.IntN(6) == 0 {
			parts = append(parts, `"pattern":`+hostileText())
		}
		if r.IntN(6) == 0 {
			parts = append(parts, `"minimum":`+pick("0", "1", "-1e400", "9007199254740991"), `"exclusiveMaximum":`+pick("10", "true"))
		}
		if r.IntN(8) == 0 {
			parts = append(parts, `"minLength":1`, `"maxItems":3`, `"uniqueItems":true`, `"deprecated":true`)
		}
		if r.IntN(8) == 0 {
			parts = append(parts, `"nullable":true`)
		}
		return strings.Join(parts, ",")
	}
	with := func(body string) string {
		if a := annotations(); a != "" {
			if body == "" {
				return "{" + a + "}"
			}
			return "{" + body + "," + a + "}"
		}
		return "{" + body + "}"
	}
	list := func(n int) string {
		var xs []string
		for i := 0; i < n; i++ {
			xs = append(xs, genSchema(r, depth+1))
		}
		return strings.Join(xs, ",")
	}
	if depth > 5 {
		return with(`"type":` + pick(`"string"`, `"number"`, `"boolean"`, `["integer","null"]`))
	}
	switch r.IntN(14) {
	case 0:
		return pick("true", "false", "{}")
	case 1:
		return with(`"type":` + pick(`"string"`, `"integer"`, `"number"`, `"boolean"`, `"null"`, `"file"`, `["string","null"]`, `["integer","number"]`))
	case 2:
		var ls []string
		for i := r.IntN(12); i >= 0; i-- {
			ls = append(ls, literal())
		}
		return with(`"enum":[` + strings.Join(ls, ",") + `]` + pick("", `,"type":"string"`))
	case 3:
		return with(`"const":` + literal())
	case 4, 5, 6:
		var props, req []string
		for i := r.IntN(6); i >= 0; i-- {
			n := name()
			props = append(props, n+":"+genSchema(r, depth+1))
			if r.IntN(2) == 0 {
				req = append(req, n)
			}
		}
		if r.IntN(5) == 0 {
			req = append(req, `"missing PWNED"`)
		}
		body := `"type":` + pick(`"object"`, `["object","null"]`) + `,"properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `]`
		switch r.IntN(4) {
		case 0:
			body += `,"additionalProperties":false`
		case 1:
			body += `,"additionalProperties":` + genSchema(r, depth+1)
		}
		return with(body)
	case 7:
		return with(`"type":"object","additionalProperties":` + genSchema(r, depth+1))
	case 8, 9:
		return with(`"type":"array","items":` + genSchema(r, depth+1))
	case 10:
		return with(`"type":"array","prefixItems":[` + list(1+r.IntN(3)) + `]` + pick("", `,"items":false`, `,"items":`+genSchema(r, depth+1)))
	case 11:
		return with(pick(`"anyOf"`, `"oneOf"`) + `:[` + list(1+r.IntN(4)) + `]`)
	case 12:
		return with(pick(`"$ref":"#/$defs/x"`, `"allOf":[{"type":"string"}]`, `"not":{}`, `"if":{},"then":{}`, `"patternProperties":{}`, `"type":5`))
	default:
		return with(`"type":"object","properties":{"inner":` + genSchema(r, depth+1) + `}`)
	}
}

func TestRandomSchemas(t *testing.T) {
	seed := uint64(1)
	if v, err := strconv.ParseUint(os.Getenv("SCHEMAHINT_SEED"), 10, 64); err == nil {
		seed = v
	}
	r := rand.New(rand.NewPCG(seed, 2))
	n := 400
	if testing.Short() {
		n = 50
	}
	var tools []DTSTool
	for i := 0; i < n; i++ {
		src := `{"type":"object","properties":{"root":` + genSchema(r, 0) + `,"other":` + genSchema(r, 0) + `}}`
		if r.IntN(4) == 0 {
			src = genSchema(r, 0)
		}
		s, err := Parse([]byte(src))
		if err != nil {
			continue // a generated root may be a boolean-only or invalid shape
		}
		for _, maxLen := range []int{20, 80, 256} {
			h := InputHint(s, maxLen)
			if len(h) > maxLen || h != InputHint(s, maxLen) || strings.ContainsAny(h, "\n\u2028") {
				t.Fatalf("bad hint %q for %s", h, src)
			}
			if o, ok := OutputHint(s, maxLen); ok && len(o) > maxLen {
				t.Fatalf("bad output hint %q", o)
			}
		}
		tool := DTSTool{Name: "t PWNED", JSName: "t" + strconv.Itoa(i), Title: "PWNED */", Description: "PWNED /* */ @param x", Input: s, Output: s}
		one := RenderToolDTS(DTSServer{Name: "s", JSName: "s"}, tool, DTSOptions{})
		checkStructure(t, one)
		checkInert(t, one, "PWNED")
		tools = append(tools, tool)
	}
	// esbuild once over all of them (one file), and over a small budget.
	for _, opts := range []DTSOptions{{}, {MaxBytes: 30000, MaxToolBytes: 2000, MaxDescription: 10, MaxParamDescription: 5}} {
		src := RenderServerDTS(DTSServer{Name: "random", JSName: "random", Tools: tools}, opts)
		checkTS(t, "random", src)
		checkInert(t, src, "PWNED")
	}
}
