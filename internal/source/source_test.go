package source

import (
	"errors"
	"strings"
	"testing"
)

func ptr(s string) *string { return &s }

// asError asserts that err is an *Error (invalid_input) and returns it.
func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *source.Error", err, err)
	}
	return e
}

func TestResolveCode(t *testing.T) {
	tests := []struct {
		name    string
		in      Input
		want    string
		wantErr string // substring of the error; "" means no error
	}{
		// X1: `code` is the documented field.
		{name: "code only", in: Input{Code: ptr("return 1")}, want: "return 1"},
		// X1: `command` is an alias.
		{name: "command only", in: Input{Command: ptr("return 2")}, want: "return 2"},
		// X1: both present and equal is fine.
		{name: "both equal", in: Input{Code: ptr("return 3"), Command: ptr("return 3")}, want: "return 3"},
		// X1: both present but different is an error.
		{name: "both different", in: Input{Code: ptr("return 1"), Command: ptr("return 2")}, wantErr: "differ"},
		// X1: an empty `code` next to a non-empty `command` is "both present, different".
		{name: "empty code with command", in: Input{Code: ptr(""), Command: ptr("return 2")}, wantErr: "differ"},
		// X1: one of them must be non-empty.
		{name: "both empty", in: Input{Code: ptr(""), Command: ptr("")}, wantErr: "required"},
		{name: "both whitespace", in: Input{Code: ptr(" \n\t"), Command: ptr(" \n\t")}, wantErr: "required"},
		{name: "code whitespace only", in: Input{Code: ptr("   ")}, wantErr: "required"},
		{name: "command whitespace only", in: Input{Command: ptr("\n\n")}, wantErr: "required"},
		{name: "neither", in: Input{}, wantErr: "required"},
		{name: "language only", in: Input{Language: ptr(JavaScript)}, wantErr: "required"},
		// The code is returned as written: surrounding whitespace is kept (positions depend on it).
		{name: "code kept verbatim", in: Input{Code: ptr("\n  return 1\n")}, want: "\n  return 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveCode(tt.in)
			if tt.wantErr != "" {
				e := asError(t, err)
				if !strings.Contains(e.Msg, tt.wantErr) {
					t.Fatalf("error %q does not mention %q", e.Msg, tt.wantErr)
				}
				if e.Line != 0 {
					t.Fatalf("input error has a position: %v", e)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestResolveLanguage(t *testing.T) {
	both := []string{JavaScript, TypeScript}
	tests := []struct {
		name     string
		language *string
		enabled  []string
		want     string
		wantErr  []string // substrings the error must contain
	}{
		// X2: language defaults to javascript.
		{name: "absent defaults to javascript", enabled: both, want: JavaScript},
		{name: "javascript", language: ptr(JavaScript), enabled: both, want: JavaScript},
		// X3/T1: typescript is accepted when enabled.
		{name: "typescript", language: ptr(TypeScript), enabled: both, want: TypeScript},
		{name: "typescript only enabled", language: ptr(TypeScript), enabled: []string{TypeScript}, want: TypeScript},
		// X2: a language outside the enum is invalid input.
		{name: "unknown", language: ptr("python"), enabled: both, wantErr: []string{`"python"`, "javascript", "typescript"}},
		{name: "wrong case", language: ptr("JavaScript"), enabled: both, wantErr: []string{"unknown language"}},
		{name: "empty string", language: ptr(""), enabled: both, wantErr: []string{"unknown language"}},
		// X2: a language not in `languages` is invalid input; the error names the enabled ones.
		{name: "typescript disabled", language: ptr(TypeScript), enabled: []string{JavaScript},
			wantErr: []string{"disabled", `"typescript"`, "enabled: javascript"}},
		{name: "default disabled", enabled: []string{TypeScript},
			wantErr: []string{"disabled", `"javascript"`, "enabled: typescript"}},
		{name: "nothing enabled", language: ptr(JavaScript), enabled: nil, wantErr: []string{"disabled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveLanguage(Input{Code: ptr("return 1"), Language: tt.language}, tt.enabled)
			if tt.wantErr != nil {
				e := asError(t, err)
				for _, s := range tt.wantErr {
					if !strings.Contains(e.Msg, s) {
						t.Errorf("error %q does not mention %q", e.Msg, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPrepareLimits(t *testing.T) {
	tests := []struct {
		name    string
		code    string
		lang    string
		wantErr string
	}{
		{name: "at the limit", code: strings.Repeat(" ", MaxCodeBytes-len("return 1")) + "return 1", lang: JavaScript},
		{name: "over the limit", code: strings.Repeat(" ", MaxCodeBytes) + "1", lang: JavaScript, wantErr: "limit"},
		{name: "over the limit ts", code: strings.Repeat("/", MaxCodeBytes+1), lang: TypeScript, wantErr: "limit"},
		{name: "NUL byte", code: "return '\x00'", lang: JavaScript, wantErr: "NUL"},
		{name: "NUL byte ts", code: "const a: string = '\x00'", lang: TypeScript, wantErr: "NUL"},
		{name: "NUL at start", code: "\x00", lang: JavaScript, wantErr: "NUL"},
		{name: "unknown language", code: "return 1", lang: "python", wantErr: "unknown language"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Prepare(tt.code, tt.lang)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			e := asError(t, err)
			if p != nil {
				t.Fatalf("got a program with an error")
			}
			if !strings.Contains(e.Msg, tt.wantErr) {
				t.Fatalf("error %q does not mention %q", e.Msg, tt.wantErr)
			}
		})
	}
}

// syntaxCases are cells that must prepare in both languages (X6 and modern syntax).
var syntaxCases = []struct{ name, code string }{
	{"top-level await", "const r = await Promise.resolve(1)\nreturn r"}, // X6
	{"top-level return", "return {ok: true}"},                           // X6
	{"return without value", "if (x) return\nreturn"},                   // X6
	{"await in for", "for (const t of [1, 2]) { await t }"},             // X6
	{"for await", "for await (const x of gen()) { console.log(x) }"},    // X6
	{"optional chaining", "return a?.b?.[c]?.(d)"},
	{"nullish assignment", "let o = {}; o.x ??= 1; o.y ||= 2; o.z &&= 3; return o"},
	{"class private fields", "class A { #p = 1; static #s = 2; #m() { return this.#p } get p() { return this.#m() } static { A.#s++ } }\nreturn new A().p"},
	{"private in", "class B { #x; static has(o) { return #x in o } }\nreturn B.has({})"},
	{"labelled loops", "outer: for (let i = 0; i < 3; i++) { inner: while (true) { if (i) continue outer; break inner } }"},
	{"regex after paren", "if (ok) /import\\(/.test(s)"},
	{"regex after brace", "{}\n/require\\(/g.exec(s)"},
	{"regex after return", "return /a\\/b[/]/.test(s)"},
	{"regex in call", "return s.replace(/require/g, 'x').split(/\\s+/)"},
	{"division", "const a = 4, b = 2, g = 1; return a / b / g"},
	{"division after paren", "return (a) / 2 / (b)"},
	{"unicode identifiers", "const ünïcødé = 1, π = 3.14, 変数 = 'x', $_ = 2; return ünïcødé + π + 変数 + $_"},
	{"unicode escapes in identifiers", "const \\u0061bc = 1; return abc"},
	{"CRLF line endings", "const a = 1\r\nconst b = 2\r\nreturn a + b\r\n"},
	{"only a line comment", "// nothing to do"},
	{"only a block comment", "/* nothing\n to do */"},
	{"empty-ish", "\n\n"},
	{"trailing line comment", "return 1 // done"},
	{"spread and destructuring", "const {a, ...rest} = {a: 1, b: 2}; const [x = 1, ...ys] = [0]; return {...rest, x, ys}"},
	{"async arrow and generators", "const f = async (x) => x * 2; function* g() { yield 1 } async function* h() { yield* g() }\nreturn f(2)"},
	{"bigint and numeric separators", "return 1_000n + 0x1fn"},
	{"template literals", "const x = 1; return `a ${x} ${`nested ${x + 1}`} b`"},
	{"tagged template", "return String.raw`\\n${1}`"},
	{"use strict directive", "'use strict'\nreturn this"},
	{"closing braces in strings", "return '})' + \"})\" + `})`"},
	{"closing braces in comments", "// })\n/* }) */\nreturn 1"},
	{"new.target and super", "class A {} class B extends A { constructor() { super(); this.t = new.target } }\nreturn new B()"},
	{"getters setters in object", "return { get a() { return 1 }, set a(v) {}, [`k${1}`]: 2 }"},
}

func TestPrepareSyntax(t *testing.T) {
	for _, lang := range []string{JavaScript, TypeScript} {
		for _, tc := range syntaxCases {
			t.Run(lang+"/"+tc.name, func(t *testing.T) {
				p, err := Prepare(tc.code, lang)
				if err != nil {
					t.Fatalf("Prepare(%q): %v", tc.code, err)
				}
				if p.Source != tc.code || p.Language != lang {
					t.Fatalf("program does not record its source/language: %+v", p)
				}
				if lang == JavaScript && p.JS != wrapperHead+tc.code+wrapperTail {
					t.Fatalf("JS is not the wrapped code: %q", p.JS)
				}
				if !strings.HasPrefix(p.JS, "(async function") {
					t.Fatalf("program is not the async wrapper (X6): %q", p.JS)
				}
			})
		}
	}
}

// Code that closes the wrapper function early would run at script level, outside the cell's
// async function (X6): return/await would not work and code would run at compile time.
func TestPrepareWrapperEscape(t *testing.T) {
	tests := []struct{ name, code string }{
		{"close and reopen", "}); globalThis.x = 1; (async function () {"},
		{"close and call", "})(); (async function () {"},
		{"comma", "}), f(), (async function () {"},
		{"second function", "});\n(async function () {"},
	}
	for _, lang := range []string{JavaScript, TypeScript} {
		for _, tc := range tests {
			t.Run(lang+"/"+tc.name, func(t *testing.T) {
				_, err := Prepare(tc.code, lang)
				e := asError(t, err)
				if !strings.Contains(e.Msg, "closes the cell's function") {
					t.Fatalf("unexpected error %v", e)
				}
			})
		}
	}
}

// Positions the engine reports in the evaluated program map back to the model's code: the
// wrapper's head is alone on line 1, so program line N+1 is the model's line N.
func TestMapPositionJS(t *testing.T) {
	type pos struct{ line, col int }
	tests := []struct {
		name string
		code string
		in   []pos // program positions
		want []pos // model positions; {0, 0} = not mappable
	}{
		{
			name: "three lines",
			code: "const a = 1\nconst b = 2\nreturn a + b",
			in:   []pos{{1, 1}, {1, 21}, {2, 1}, {2, 7}, {3, 3}, {4, 12}, {5, 1}, {5, 2}, {6, 1}, {0, 0}, {-1, 5}},
			want: []pos{{0, 0}, {0, 0}, {1, 1}, {1, 7}, {2, 3}, {3, 12}, {3, 13}, {3, 13}, {0, 0}, {0, 0}, {0, 0}},
		},
		{
			name: "single line",
			code: "return 1",
			in:   []pos{{2, 8}, {3, 1}},
			want: []pos{{1, 8}, {1, 9}},
		},
		{
			name: "trailing newline",
			code: "return 1\n",
			in:   []pos{{2, 1}, {3, 1}, {4, 2}},
			want: []pos{{1, 1}, {2, 1}, {2, 1}},
		},
		{
			name: "unicode last line",
			code: "x\nconst s = '😀é'",
			in:   []pos{{3, 11}, {4, 1}},
			want: []pos{{2, 11}, {2, 16}}, // 😀 is two UTF-16 units
		},
		{
			name: "CRLF",
			code: "a\r\nb\r\nc",
			in:   []pos{{2, 1}, {3, 1}, {4, 1}, {5, 1}},
			want: []pos{{1, 1}, {2, 1}, {3, 1}, {3, 2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Prepare(tt.code, JavaScript)
			if err != nil {
				t.Fatal(err)
			}
			for i, in := range tt.in {
				l, c, ok := p.MapPosition(in.line, in.col)
				want := tt.want[i]
				if want == (pos{}) {
					if ok {
						t.Errorf("MapPosition(%d, %d) = %d:%d, want not mappable", in.line, in.col, l, c)
					}
					continue
				}
				if !ok || l != want.line || c != want.col {
					t.Errorf("MapPosition(%d, %d) = %d:%d %v, want %d:%d", in.line, in.col, l, c, ok, want.line, want.col)
				}
			}
		})
	}
}

func TestMapPositionZeroProgram(t *testing.T) {
	var p Program
	if _, _, ok := p.MapPosition(2, 1); ok {
		t.Fatal("a zero Program maps positions")
	}
}

func TestErrorString(t *testing.T) {
	if got := (&Error{Msg: "m"}).Error(); got != "m" {
		t.Errorf("got %q", got)
	}
	if got := (&Error{Msg: "m", Line: 2, Column: 3}).Error(); got != "m (line 2:3)" {
		t.Errorf("got %q", got)
	}
}
