package schemahint

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func mustParse(tb testing.TB, src string) *Schema {
	tb.Helper()
	s, err := Parse([]byte(src))
	if err != nil {
		if len(src) > 200 {
			src = src[:200] + "…"
		}
		tb.Fatalf("Parse(%s): %v", src, err)
	}
	return s
}

// obj wraps property schemas (JSON text, in order) in an object schema.
func obj(props string, extra ...string) string {
	s := `{"type":"object","properties":{` + props + `}`
	for _, e := range extra {
		s += "," + e
	}
	return s + "}"
}

func TestInputHint(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		// Empty and absent roots.
		{"empty", `{}`, `{}`},
		{"true", `true`, `{}`},
		{"false", `false`, `never`},
		{"bare object", `{"type":"object"}`, `{}`},
		{"no properties", `{"type":"object","properties":{}}`, `{}`},
		{"annotations only", `{"$schema":"http://json-schema.org/draft-07/schema#","description":"x"}`, `{}`},

		// Ordering: required first (schema order), then optional (schema order).
		{"brief example", obj(`"path":{"type":"string"},"offset":{"type":"integer","minimum":1},"mode":{"enum":["a","b"]}`, `"required":["path"]`),
			`{ path: string; offset?: number /* int >= 1 */; mode?: "a" | "b" }`},
		{"required first", obj(`"b":{"type":"number"},"a":{"type":"string"},"c":{"type":"boolean"}`, `"required":["c","a"]`),
			`{ a: string; c: boolean; b?: number }`},
		{"missing required", obj(`"a":{"type":"string"}`, `"required":["zz","a"]`), `{ a: string; zz: unknown }`},

		// Primitive types and notes.
		{"integer range", obj(`"n":{"type":"integer","minimum":1,"maximum":100}`), `{ n?: number /* int 1..100 */ }`},
		{"exclusive bounds", obj(`"n":{"type":"integer","exclusiveMinimum":0,"maximum":20}`), `{ n?: number /* int > 0, <= 20 */ }`},
		{"draft4 exclusive", obj(`"n":{"type":"number","minimum":0,"exclusiveMinimum":true,"maximum":1,"exclusiveMaximum":true}`), `{ n?: number /* > 0, < 1 */ }`},
		{"max safe integer dropped", obj(`"n":{"type":"integer","exclusiveMinimum":0,"maximum":9007199254740991}`), `{ n?: number /* int > 0 */ }`},
		{"string constraints", obj(`"u":{"type":"string","format":"uri","minLength":1,"maxLength":2048}`), `{ u?: string /* uri, len 1..2048 */ }`},
		{"zero min length dropped", obj(`"u":{"type":"string","minLength":0}`), `{ u?: string }`},
		{"hostile format dropped", obj(`"u":{"type":"string","format":"x */ y"}`), `{ u?: string }`},
		{"pattern not in compact", obj(`"u":{"type":"string","pattern":"^a*/b$"}`), `{ u?: string }`},
		{"boolean null", obj(`"b":{"type":"boolean"},"z":{"type":"null"}`), `{ b?: boolean; z?: null }`},
		{"integer and number fold", obj(`"n":{"type":["integer","number"]}`), `{ n?: number }`},
		{"type array", obj(`"s":{"type":["string","null"]}`), `{ s?: string | null }`},
		{"nullable", obj(`"s":{"type":"string","nullable":true}`), `{ s?: string | null }`},
		{"unknown type name", obj(`"f":{"type":"file"}`), `{ f?: unknown }`},
		{"untyped property", obj(`"x":{"description":"anything"}`), `{ x?: unknown }`},

		// Enums and const.
		{"const", obj(`"k":{"const":"x"}`), `{ k?: "x" }`},
		{"enum mixed", obj(`"e":{"enum":[1,"a",true,null,2.5]}`), `{ e?: 1 | "a" | true | null | 2.5 }`},
		{"enum bounded", obj(`"e":{"enum":["a","b","c","d","e","f","g","h","i","j"]}`), `{ e?: "a" | "b" | "c" | "d" | "e" | "f" | … }`},
		{"enum filtered by type", obj(`"e":{"type":"string","enum":["a",1,null]}`), `{ e?: "a" }`},
		{"enum nullable", obj(`"e":{"type":"string","enum":["a"],"nullable":true}`), `{ e?: "a" | null }`},
		{"enum dedupe", obj(`"e":{"enum":["a","a","b"]}`), `{ e?: "a" | "b" }`},
		{"empty enum", obj(`"e":{"enum":[]}`), `{ e?: never }`},
		{"enum object member", obj(`"e":{"enum":[{"a":1},[1]]}`), `{ e?: object | unknown[] }`},
		{"enum long literal elided", obj(`"e":{"enum":["a","` + strings.Repeat("x", 100) + `"]}`), `{ e?: "a" | string }`},
		{"enum escapes", obj(`"e":{"enum":["a\"b","c\nd","e\u2028f"]}`), `{ e?: "a\"b" | "c\nd" | "e\u2028f" }`},

		// Unions.
		{"anyOf simple", obj(`"v":{"anyOf":[{"type":"string"},{"type":"number"}]}`), `{ v?: string | number }`},
		{"anyOf nullable note", obj(`"v":{"anyOf":[{"type":"integer","minimum":1},{"type":"null"}]}`), `{ v?: number | null /* int >= 1 */ }`},
		{"oneOf objects", obj(`"v":{"oneOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"string"}]}`), `{ v?: { a: string } | string }`},
		{"anyOf dedupe", obj(`"v":{"anyOf":[{"type":"string"},{"type":"string","format":"date"}]}`), `{ v?: string }`},
		{"anyOf with ref", obj(`"v":{"anyOf":[{"$ref":"#/$defs/x"},{"type":"string"}]}`), `{ v?: unknown }`},
		{"anyOf with empty member", obj(`"v":{"anyOf":[{},{"type":"string"}]}`), `{ v?: unknown }`},
		{"anyOf with false member", obj(`"v":{"anyOf":[false,{"type":"string"}]}`), `{ v?: string }`},
		{"constraint-only anyOf", obj(`"v":{"type":"string","anyOf":[{"minLength":1},{"format":"uri"}]}`), `{ v?: string }`},
		{"anyOf next to properties", obj(`"v":{"type":"object","properties":{"a":{"type":"string"}},"oneOf":[{"required":["a"],"properties":{"a":{"const":"x"}}}]}`), `{ v?: unknown }`},
		{"type next to anyOf", obj(`"v":{"type":["string","null"],"anyOf":[{"type":"string"},{"type":"null"}]}`), `{ v?: string | null }`},
		{"union bounded", obj(`"v":{"anyOf":[{"const":1},{"const":2},{"const":3},{"const":4},{"const":5},{"const":6},{"const":7}]}`), `{ v?: 1 | 2 | 3 | 4 | 5 | 6 | … }`},
		{"anyOf and oneOf", obj(`"v":{"anyOf":[{"type":"string"}],"oneOf":[{"type":"number"}]}`), `{ v?: unknown }`},

		// Unsupported keywords: unknown for that node only.
		{"ref property", obj(`"p":{"$ref":"#/$defs/x"},"q":{"type":"string"}`), `{ p?: unknown; q?: string }`},
		{"ref root", `{"$ref":"#/$defs/x"}`, `unknown`},
		{"allOf", obj(`"p":{"allOf":[{"type":"string"}]}`), `{ p?: unknown }`},
		{"not", obj(`"p":{"not":{"type":"string"}}`), `{ p?: unknown }`},
		{"if", obj(`"p":{"type":"string","if":{"minLength":1},"then":{}}`), `{ p?: unknown }`},
		{"patternProperties", obj(`"p":{"type":"object","patternProperties":{"^x":{"type":"string"}}}`), `{ p?: unknown }`},
		{"dependentRequired", obj(`"p":{"type":"object","dependentRequired":{"a":["b"]}}`), `{ p?: unknown }`},
		{"malformed type", obj(`"p":{"type":5}`), `{ p?: unknown }`},
		{"malformed properties", obj(`"p":{"type":"object","properties":[]}`), `{ p?: unknown }`},
		{"non-schema property", obj(`"p":"string"`), `{ p?: unknown }`},

		// Arrays and tuples.
		{"array", obj(`"a":{"type":"array","items":{"type":"string"},"minItems":1}`), `{ a?: string[] /* items >= 1 */ }`},
		{"array note from items", obj(`"a":{"type":"array","items":{"type":"string","format":"uri"},"maxItems":10}`), `{ a?: string[] /* uri, items <= 10 */ }`},
		{"array of union", obj(`"a":{"type":"array","items":{"type":["string","number"]}}`), `{ a?: Array<string | number> }`},
		{"array of objects", obj(`"a":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}`), `{ a?: Array<{ id: string }> }`},
		{"array without items", obj(`"a":{"type":"array"}`), `{ a?: unknown[] }`},
		{"nested arrays", obj(`"a":{"type":"array","items":{"type":"array","items":{"type":"number"}}}`), `{ a?: number[][] }`},
		{"inferred array", obj(`"a":{"items":{"type":"boolean"}}`), `{ a?: boolean[] }`},
		{"tuple closed", obj(`"t":{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"items":false}`), `{ t?: [string, number] }`},
		{"tuple open", obj(`"t":{"type":"array","prefixItems":[{"type":"string"}]}`), `{ t?: [string, ...unknown[]] }`},
		{"tuple rest", obj(`"t":{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"number"}}`), `{ t?: [string, ...number[]] }`},
		{"tuple draft4", obj(`"t":{"type":"array","items":[{"type":"string"}],"additionalItems":{"anyOf":[{"type":"string"},{"type":"number"}]}}`), `{ t?: [string, ...Array<string | number>] }`},
		{"tuple draft4 closed", obj(`"t":{"type":"array","items":[{"type":"string"}],"additionalItems":false}`), `{ t?: [string] }`},

		// Objects.
		{"nested open empty object", obj(`"o":{"type":"object"}`), `{ o?: object }`},
		{"nested closed empty object", obj(`"o":{"type":"object","additionalProperties":false}`), `{ o?: {} }`},
		{"map", obj(`"m":{"type":"object","additionalProperties":{"type":"number"}}`), `{ m?: { [key: string]: number } }`},
		{"map true is open", obj(`"m":{"type":"object","additionalProperties":true}`), `{ m?: object }`},
		{"props and map", obj(`"m":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"string"}}`), `{ m?: { a?: string; [key: string]: string } }`},
		{"root map", `{"type":"object","additionalProperties":{"type":"string"}}`, `{ [key: string]: string }`},
		{"nested", obj(`"o":{"type":"object","properties":{"p":{"type":"object","properties":{"q":{"type":"integer","minimum":0}},"required":["q"]}}}`), `{ o?: { p?: { q: number /* int >= 0 */ } } }`},
		{"inferred object", `{"properties":{"a":{"type":"string"}}}`, `{ a?: string }`},
		{"object or null", obj(`"o":{"type":["object","null"],"properties":{"a":{"type":"string"}}}`), `{ o?: { a?: string } | null }`},

		// Hostile names.
		{"comment close in name", obj(`"a*/b":{"type":"string"}`), `{ "a*/b"?: string }`},
		{"proto", obj(`"__proto__":{"type":"string"},"constructor":{"type":"number"}`), `{ __proto__?: string; constructor?: number }`},
		{"newline in name", obj(`"a\nb":{"type":"string"}`), `{ "a\nb"?: string }`},
		{"quote in name", obj(`"a\"b":{"type":"string"}`), `{ "a\"b"?: string }`},
		{"digit first", obj(`"1a":{"type":"string"}`), `{ "1a"?: string }`},
		{"empty name", obj(`"":{"type":"string"}`), `{ ""?: string }`},
		{"dashes", obj(`"auth-method":{"type":"string"}`), `{ "auth-method"?: string }`},
		{"non-ascii name", obj(`"naïve":{"type":"string"}`), `{ "naïve"?: string }`},
		{"bidi name", obj(`"a\u202eb":{"type":"string"}`), `{ "a\u202eb"?: string }`},
		{"reserved word name", obj(`"default":{"type":"string"}`), `{ default?: string }`},
		{"duplicate keys keep first position last value", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"a":{"type":"number"}}}`, `{ a?: number; b?: string }`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := InputHint(mustParse(t, tc.schema), 200)
			if got != tc.want {
				t.Errorf("InputHint(%s)\n got: %s\nwant: %s", tc.schema, got, tc.want)
			}
		})
	}
}

func TestInputHintNil(t *testing.T) {
	if got := InputHint(nil, 100); got != "{}" {
		t.Errorf("InputHint(nil) = %q", got)
	}
	if got := InputHint(nil, 1); got != "" {
		t.Errorf("InputHint(nil, 1) = %q", got)
	}
}

func TestInputHintDegrades(t *testing.T) {
	schema := mustParse(t, obj(
		`"path":{"type":"string","minLength":1},`+
			`"opts":{"type":"object","properties":{"deep":{"type":"object","properties":{"x":{"type":"integer","minimum":1}},"required":["x"]},"flag":{"type":"boolean"}}},`+
			`"mode":{"enum":["fast","slow"]}`, `"required":["path"]`))
	tests := []struct {
		maxLen int
		want   string
	}{
		{200, `{ path: string /* len >= 1 */; opts?: { deep?: { x: number /* int >= 1 */ }; flag?: boolean }; mode?: "fast" | "slow" }`},
		// Notes go first.
		{100, `{ path: string; opts?: { deep?: { x: number }; flag?: boolean }; mode?: "fast" | "slow" }`},
		// Then the deepest objects collapse.
		{82, `{ path: string; opts?: { deep?: object; flag?: boolean }; mode?: "fast" | "slow" }`},
		{81, `{ path: string; opts?: object; mode?: "fast" | "slow" }`},
		{60, `{ path: string; opts?: object; mode?: "fast" | "slow" }`},
		// Then the root lists what fits and ends with …
		{45, `{ path: string; opts?: object; … }`},
		{30, `{ path: string; … }`},
		{14, `{ … }`},
		{6, `…`},
		{3, `…`},
		{2, ``},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.maxLen), func(t *testing.T) {
			got := InputHint(schema, tc.maxLen)
			if got != tc.want {
				t.Errorf("InputHint(maxLen %d)\n got: %q\nwant: %q", tc.maxLen, got, tc.want)
			}
			if len(got) > tc.maxLen {
				t.Errorf("len %d > maxLen %d", len(got), tc.maxLen)
			}
		})
	}
	// A long token is dropped, not cut.
	long := mustParse(t, obj(`"a":{"type":"string"},"`+strings.Repeat("b", 50)+`":{"type":"string"}`, `"required":["a"]`))
	if got, want := InputHint(long, 40), `{ a: string; … }`; got != want {
		t.Errorf("long name: got %q want %q", got, want)
	}
	// A non-object root that does not fit becomes unknown.
	u := mustParse(t, `{"anyOf":[{"type":"string","enum":["aaaaaaaaaaaaaaaaa","bbbbbbbbbbbbbbbbbbbbbbbb"]},{"type":"number"}]}`)
	if got := InputHint(u, 20); got != "unknown" {
		t.Errorf("union root: got %q", got)
	}
}

func TestOutputHint(t *testing.T) {
	closed := func(props string, req string) string {
		return `{"type":"object","properties":{` + props + `},"required":[` + req + `],"additionalProperties":false}`
	}
	tests := []struct {
		name, schema, want string // want "" means ok=false
	}{
		{"brief example", `{"type":"array","items":` + closed(`"id":{"type":"string"},"paid":{"type":"boolean"},"tons":{"type":"number"}`, `"id","paid","tons"`) + `}`,
			`Array<{ id: string; paid: boolean; tons: number }>`},
		{"schema order, optional", closed(`"b":{"type":"string"},"a":{"type":"integer","minimum":1}`, `"a"`), `{ b?: string; a: number }`},
		{"closed empty", `{"type":"object","additionalProperties":false}`, `{}`},
		{"nested closed", closed(`"o":`+closed(`"x":{"type":["string","null"]}`, `"x"`), `"o"`), `{ o: { x: string | null } }`},
		{"typed map", `{"type":"object","additionalProperties":{"type":"number"}}`, `{ [key: string]: number }`},
		{"union of closed", `{"anyOf":[` + closed(`"ok":{"const":true}`, `"ok"`) + `,` + closed(`"error":{"type":"string"}`, `"error"`) + `]}`,
			`{ ok: true } | { error: string }`},
		{"object or null", `{"type":["object","null"],"properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{ a?: string } | null`},
		{"enum 10", `{"enum":["a","b","c","d","e","f","g","h","i","j"]}`, `"a" | "b" | "c" | "d" | "e" | "f" | "g" | "h" | "i" | "j"`},
		{"tuple closed", `{"type":"array","prefixItems":[{"type":"string"}],"items":false}`, `[string]`},
		{"primitive", `{"type":"string"}`, `string`},
		{"never", `false`, `never`},

		{"open object", `{"type":"object","properties":{"a":{"type":"string"}}}`, ``},
		{"additionalProperties true", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true}`, ``},
		{"nested open", closed(`"o":{"type":"object","properties":{}}`, ``), ``},
		{"untyped closed object", `{"properties":{"a":{"type":"string"}},"additionalProperties":false}`, ``},
		{"untyped property", closed(`"a":{}`, ``), ``},
		{"array without items", `{"type":"array"}`, ``},
		{"untyped array", `{"items":{"type":"string"}}`, ``},
		{"ref", closed(`"a":{"$ref":"#/$defs/a"}`, ``), ``},
		{"allOf", `{"allOf":[{"type":"string"}]}`, ``},
		{"enum 40", `{"enum":[` + strings.TrimSuffix(strings.Repeat(`"x",`, 1)+numbers(40), ",") + `]}`, ``},
		{"union 20", `{"anyOf":[` + constMembers(20) + `]}`, ``},
		{"missing required", closed(`"a":{"type":"string"}`, `"a","b"`), ``},
		{"tuple open", `{"type":"array","prefixItems":[{"type":"string"}]}`, ``},
		{"empty", `{}`, ``},
		{"true", `true`, ``},
		{"map of unknown", `{"type":"object","additionalProperties":{"description":"x"}}`, ``},
		{"enum object literal", `{"enum":[{"a":1}]}`, ``},
		{"unknown type", `{"type":"file"}`, ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := OutputHint(mustParse(t, tc.schema), 200)
			if ok != (tc.want != "") || got != tc.want {
				t.Errorf("OutputHint(%s)\n got: %q %v\nwant: %q", tc.schema, got, ok, tc.want)
			}
		})
	}
	if _, ok := OutputHint(nil, 100); ok {
		t.Error("OutputHint(nil) ok")
	}
	// Exact but too large: no hint (Q3).
	big := mustParse(t, closed(`"aaaaaaaaaa":{"type":"string"},"bbbbbbbbbb":{"type":"string"}`, ``))
	if h, ok := OutputHint(big, 30); ok {
		t.Errorf("too long: %q", h)
	}
	if h, ok := OutputHint(big, 0); !ok || h != `{ aaaaaaaaaa?: string; bbbbbbbbbb?: string }` {
		t.Errorf("default maxLen: %q %v", h, ok)
	}
}

func numbers(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%d,", i)
	}
	return b.String()
}

func constMembers(n int) string {
	var parts []string
	for i := 0; i < n; i++ {
		parts = append(parts, fmt.Sprintf(`{"const":%d}`, i))
	}
	return strings.Join(parts, ",")
}

// bigObject is a schema with n properties, every third required, with
// descriptions.
func bigObject(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	var req []string
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string","description":"property %d */ hostile"}`, i, i)
		if i%3 == 0 {
			req = append(req, fmt.Sprintf(`"p%d"`, i))
		}
	}
	b.WriteString(`},"required":[` + strings.Join(req, ",") + `]}`)
	return []byte(b.String())
}

func deepObject(n int) string {
	s := `{"type":"string"}`
	for i := 0; i < n; i++ {
		s = `{"type":"object","properties":{"x":` + s + `},"required":["x"],"additionalProperties":false}`
	}
	return s
}

func TestHostileSizes(t *testing.T) {
	t.Run("10k properties", func(t *testing.T) {
		s, err := Parse(bigObject(10000))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		h := InputHint(s, 200)
		if len(h) > 200 || !strings.HasSuffix(h, "… }") || !strings.HasPrefix(h, "{ p0: string; p3: string;") {
			t.Errorf("hint %q", h)
		}
		if _, ok := OutputHint(s, 200); ok {
			t.Error("open 10k object gave an output hint")
		}
		dts := RenderServerDTS(DTSServer{Name: "big", JSName: "big", Tools: []DTSTool{{Name: "t", JSName: "t", Input: s, Output: s}}}, DTSOptions{})
		if len(dts) > DefaultMaxToolBytes+4096 {
			t.Errorf("dts %d bytes", len(dts))
		}
		if !strings.Contains(dts, "9800 more properties not shown") {
			t.Errorf("dts does not say properties were omitted:\n%s", dts[len(dts)-300:])
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %v", d)
		}
	})
	t.Run("huge enum", func(t *testing.T) {
		s := mustParse(t, `{"type":"object","properties":{"e":{"enum":[`+strings.TrimSuffix(numbers(10000), ",")+`]}}}`)
		if h := InputHint(s, 200); h != `{ e?: 0 | 1 | 2 | 3 | 4 | 5 | … }` {
			t.Errorf("hint %q", h)
		}
	})
	t.Run("deep nesting", func(t *testing.T) {
		s := mustParse(t, deepObject(20))
		h := InputHint(s, 60)
		if h != `{ x: { x: { x: { x: { x: { x: { x: object } } } } } } }` {
			t.Errorf("hint %q", h)
		}
		if o, ok := OutputHint(s, 1000); !ok || strings.Count(o, "{") != 20 {
			t.Errorf("output %q %v", o, ok)
		}
		if _, ok := OutputHint(s, 100); ok {
			t.Error("deep output fit in 100 bytes")
		}
	})
	t.Run("wide and deep", func(t *testing.T) {
		// Each level has 50 properties that are all the next level: the
		// rendered size would explode without budgets.
		level := `{"type":"string"}`
		for d := 0; d < 6; d++ {
			var props []string
			for i := 0; i < 50; i++ {
				props = append(props, fmt.Sprintf(`"k%d":%s`, i, level))
			}
			next := `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
			if len(next) > MaxInputBytes {
				break
			}
			level = next
		}
		s := mustParse(t, level)
		start := time.Now()
		if h := InputHint(s, 300); len(h) > 300 {
			t.Errorf("hint too long: %d", len(h))
		}
		dts := RenderToolDTS(DTSServer{Name: "x", JSName: "x"}, DTSTool{Name: "t", JSName: "t", Input: s}, DTSOptions{})
		if len(dts) > DefaultMaxToolBytes+2048 {
			t.Errorf("dts %d bytes", len(dts))
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %v", d)
		}
	})
}

func TestHintsDeterministic(t *testing.T) {
	for _, c := range loadCatalog(t)[:100] {
		a, _ := Parse(c.InputSchema)
		b, _ := Parse(c.InputSchema)
		first := InputHint(a, 150)
		if first != InputHint(b, 150) || first != InputHint(a, 150) {
			t.Fatalf("%s/%s: unstable hint", c.Server, c.Name)
		}
	}
}
