package source

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unicode/utf16"
)

// T1: TypeScript is a source transform: types go, the program stays the async wrapper.
func TestPrepareTypeScript(t *testing.T) {
	tests := []struct {
		name    string
		code    string
		gone    []string // type-only text that must not reach the JS
		present []string // runtime text that must survive
	}{
		{"annotations", "const n: number = 1\nfunction f(a: string, b?: number): string { return a }\nreturn f('x', n)",
			[]string{": number", ": string", "b?"}, []string{"return f("}},
		{"interface", "interface Point { x: number; y: number }\nconst p: Point = {x: 1, y: 2}\nreturn p.x",
			[]string{"interface", "Point"}, []string{"x: 1"}},
		{"type alias", "type ID = string | number\nconst id: ID = 'a'\nreturn id", []string{"type ID", ": ID"}, []string{"\"a\""}},
		{"generics", "function first<T>(xs: T[]): T | undefined { return xs[0] }\nconst m = new Map<string, number[]>()\nreturn first<number>([1])",
			[]string{"<T>", "<string, number[]>", "<number>"}, []string{"first([1])", "new Map()"}},
		{"enum", "enum Color { Red, Green = 'g' }\nreturn Color.Green", []string{"enum "}, []string{"Color"}},
		{"as cast", "const v = (input as unknown) as string\nreturn v.length", []string{" as "}, []string{"input"}},
		{"non-null assertion", "const el = maybe!\nreturn el!.x", []string{"!"}, []string{"el.x"}},
		{"satisfies", "const cfg = {a: 1} satisfies Record<string, number>\nreturn cfg", []string{"satisfies", "Record"}, []string{"a: 1"}},
		{"class with modifiers", "class A { private x: number = 1; constructor(public readonly y: string) {} }\nreturn new A('y')",
			[]string{"private", "readonly", "public"}, []string{"this.y = y"}},
		{"abstract class", "abstract class S { abstract area(): number }\nclass Q extends S { area() { return 1 } }\nreturn new Q().area()",
			[]string{"abstract"}, []string{"class Q extends S"}},
		{"declare", "declare const injected: number\nreturn typeof injected", []string{"declare"}, []string{"typeof injected"}},
		{"await and return", "const r: number = await tools.callValue('x', {})\nreturn r", nil, []string{"await tools.callValue"}}, // X6
		{"type-only import type in expression", "const x: typeof globalThis = globalThis\nreturn x", []string{"typeof globalThis ="}, []string{"globalThis"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Prepare(tt.code, TypeScript)
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if p.Language != TypeScript || p.Source != tt.code {
				t.Fatalf("program does not record its source/language")
			}
			if !strings.HasPrefix(p.JS, "(async function") || !strings.HasSuffix(p.JS, "})") {
				t.Fatalf("not the async wrapper: %q", p.JS)
			}
			for _, s := range tt.gone {
				if strings.Contains(p.JS, s) {
					t.Errorf("JS still contains %q:\n%s", s, p.JS)
				}
			}
			for _, s := range tt.present {
				if !strings.Contains(p.JS, s) {
					t.Errorf("JS lacks %q:\n%s", s, p.JS)
				}
			}
			if !TypeScriptUsed() {
				t.Errorf("TypeScriptUsed() is false after a TypeScript Prepare")
			}
		})
	}
}

// T1: diagnostics are invalid input, positioned in the model's code, not in the wrapper.
func TestTypeScriptSyntaxErrors(t *testing.T) {
	tests := []struct {
		name      string
		code      string
		msg       string
		line, col int
	}{
		{"missing type", "const a = 1\nlet b: = 2", `Unexpected "="`, 2, 8},
		{"first line", "let x: number = ;", `Unexpected ";"`, 1, 17},
		{"unclosed paren at the end of the third line", "const a = 1\nconst b = 2\n    const c = (", "", 3, 16},
		// esbuild reports byte columns: the column here counts UTF-16 units like the engine.
		{"after non-ASCII", "const é = 'ü'; let y: = 2", `Unexpected "="`, 1, 23},
		{"after astral", "const s = '😀'; let y: = 2", `Unexpected "="`, 1, 24},
		// An error at the wrapper's closing line is reported at the end of the code.
		{"unclosed block", "if (x) {\n  return 1", `the "{" at line 1:8 is never closed`, 2, 11},
		// Issue 14 item 4: never the wrapper's "}" or ")".
		{"unclosed paren", "return (1 +", `unexpected end of the code: the "(" at line 1:8 is never closed`, 1, 12},
		{"dangling operator", "const n: number = 1 +", `something is missing after "+"`, 1, 22},
		{"closes the cell", "return 1 }", `unexpected "}": it closes nothing the cell opened`, 1, 10},
		{"unterminated string", "return 'abc", "Unterminated string", 1, 12},
		{"unterminated template", "return `abc", "", 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Prepare(tt.code, TypeScript)
			if p != nil {
				t.Fatalf("got a program: %q", p.JS)
			}
			e := asError(t, err)
			if !strings.HasPrefix(e.Msg, "SyntaxError: ") || !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("message %q, want a TypeScript diagnostic containing %q", e.Msg, tt.msg)
			}
			if tt.col == 0 { // only the line is pinned down
				if e.Line != 1 && e.Line != tt.line {
					t.Errorf("position %d:%d, want line 1..%d", e.Line, e.Column, tt.line)
				}
				return
			}
			if e.Line != tt.line || e.Column != tt.col {
				t.Errorf("position %d:%d, want %d:%d (%v)", e.Line, e.Column, tt.line, tt.col, e)
			}
		})
	}
}

// X4 in TypeScript (issue 14 item 2). The cell's top-level import declarations are lifted out of
// the function body so the transform can erase the type-only ones (`import type`, names used
// only as types, unused names); a declaration that survives loads a module and is refused at its
// keyword. Export declarations, import-equals, dynamic import(), import.meta and require calls
// are refused by the same check as JavaScript, positioned through the source map.
func TestTypeScriptModuleAccess(t *testing.T) {
	tests := []struct {
		name      string
		code      string
		msg       string
		line, col int
	}{
		{"used import", "import x from 'y'\nreturn x", msgImport, 1, 1},
		{"used namespace import", "import * as FS from \"fs\"\nreturn FS.readFileSync", msgImport, 1, 1},
		{"side-effect import", "import 'polyfill'\nreturn 1", msgImport, 1, 1},
		{"named import no space", "const a: number = 1\n  import{b} from 'c'\nreturn b", msgImport, 2, 3},
		{"second import used", "import type { T } from 'y'\nconst n: T = 1\n  import { v } from 'z'; return v", msgImport, 3, 3},
		{"default and named, named used", "import x, { y } from 'z'\nreturn y", msgImport, 1, 1},
		{"import after non-ASCII", "const é: string = 'ü'; import { w } from 'z'; return w", msgImport, 1, 24},
		{"import equals require", "import fs = require('fs')", msgImport, 1, 1},
		{"export", "export const x: number = 1", msgExport, 1, 1},
		{"export default", "const a = 1\nexport default a", msgExport, 2, 1},
		{"dynamic import", "const m: any = await import('fs')\nreturn m", msgImport, 1, 22},
		{"import.meta", "const u: string = import.meta.url", msgImport, 1, 19},
		{"require", "const r: number = 1\nconst fs: any = require('fs')", msgRequire, 2, 17},
		{"require after types and unicode", "type T = { a: string }\nconst s: string = 'é😀'; const v: T = require('x')", msgRequire, 2, 39},
		// `declare` is type-only: the declaration is erased and `require` is unbound again.
		{"declared require", "declare function require(m: string): any\nreturn require('fs')", msgRequire, 2, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Prepare(tt.code, TypeScript)
			e := asError(t, err)
			if e.Msg != tt.msg {
				t.Errorf("message %q, want %q", e.Msg, tt.msg)
			}
			if e.Line != tt.line || e.Column != tt.col {
				t.Errorf("position %d:%d, want %d:%d", e.Line, e.Column, tt.line, tt.col)
			}
		})
	}
	allowed := []struct{ name, code string }{
		{"local require", "function require(m: string): string { return m }\nreturn require('fs')"},
		{"strings and comments", "// import x from 'y'\nconst s: string = 'require(\"fs\")'\nreturn `import ${s}`"},
		{"member names", "const o: { require(n: number): number; import: number } = { require: (n) => n, import: 1 }\nreturn o.require(o.import)"},
		{"type named like a module", "type require = string\nconst r: require = 'x'\nreturn r"},
		{"import type", "import type { Readable } from \"stream\"\nlet r: Readable | null = null\nreturn r"},
		{"import type namespace", "import type * as FS from \"fs\"\nconst f: typeof FS | null = null\nreturn f"},
		{"import type default", "import type Big from 'big.js'\nreturn 1"},
		{"unused import", "import x from 'y'\nreturn 1"},
		{"import used only as a type", "import { Stats } from 'fs'\nconst s: Stats | null = null\nreturn s"},
		{"inline type specifiers", "import { type A, type B } from 'y'\nconst a: A | B | null = null\nreturn a"},
		{"several imports and a comment", "import type { A } from 'a'; // types only\nimport type {\n  B, // the b\n  C,\n} from 'bc';\nconst v: A | B | C | null = null\nreturn v"},
		{"import attributes", "import type Data from './data.json' with { type: 'json' }\nreturn 1"},
		{"typeof require", "return typeof require"},
		{"type query of an import type", "type M = typeof import('fs')\nreturn 1"},
	}
	for _, tt := range allowed {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Prepare(tt.code, TypeScript); err != nil {
				t.Fatalf("Prepare(%q): %v", tt.code, err)
			}
		})
	}
}

// utf16Col is the 1-based UTF-16 column of byte offset off in its line of s.
func utf16Col(s string, off int) (line, col int) {
	start := strings.LastIndexByte(s[:off], '\n') + 1
	return strings.Count(s[:off], "\n") + 1, len(utf16.Encode([]rune(s[start:off]))) + 1
}

// TS positions are mapped back through esbuild's source map: find where an identifier landed in
// the generated JS and check MapPosition returns where the model wrote it.
func TestMapPositionTypeScript(t *testing.T) {
	tests := []struct {
		name  string
		code  string
		names []string // unique identifiers present in both code and JS
	}{
		{"annotations shift columns",
			"const alpha: number = 1\nconst beta: Map<string, number[]> = new Map<string, number[]>()\nreturn gammaFn(alpha, beta)",
			[]string{"alpha", "beta", "gammaFn"}},
		{"removed lines",
			"interface I {\n  a: number\n  b: string\n}\ntype T = I & { c: boolean }\nconst value: T = makeIt()\nreturn value",
			[]string{"value", "makeIt"}},
		// esbuild escapes non-ASCII in its output ("\u{1F600}"), so generated and original
		// columns differ after it.
		{"non-ASCII before",
			"const s: string = '😀é'; const target: number = 1\nconst ü: number = 'é' + target; const after = ü\nreturn after",
			[]string{"target", "after"}},
		{"lifted type imports keep lines and columns",
			"import type {\n  A, // the a\n} from 'a'; const alpha: A = makeIt()\nimport type B from 'b'\nreturn gammaFn(alpha)",
			[]string{"alpha", "makeIt", "gammaFn"}},
		{"indented and CRLF",
			"if (cond) {\r\n    const deep: string = compute()\r\n    return deep\r\n}",
			[]string{"cond", "compute", "deep"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Prepare(tt.code, TypeScript)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range tt.names {
				gen := strings.Index(p.JS, name)
				orig := strings.Index(tt.code, name)
				if gen < 0 || orig < 0 {
					t.Fatalf("%q not found in code or JS:\n%s", name, p.JS)
				}
				gl, gc := utf16Col(p.JS, gen)
				wl, wc := utf16Col(tt.code, orig)
				l, c, ok := p.MapPosition(gl, gc)
				if !ok || l != wl || c != wc {
					t.Errorf("%s: MapPosition(%d, %d) = %d:%d %v, want %d:%d\n%s", name, gl, gc, l, c, ok, wl, wc, p.JS)
				}
			}
			// The wrapper's head is not the model's code.
			if l, c, ok := p.MapPosition(1, 1); ok {
				t.Errorf("wrapper head maps to %d:%d", l, c)
			}
			// Nothing maps outside the model's code.
			lines := strings.Count(tt.code, "\n") + 1
			jsLines := strings.Count(p.JS, "\n") + 1
			for gl := 0; gl <= jsLines+1; gl++ {
				for gc := 0; gc <= 40; gc++ {
					if l, c, ok := p.MapPosition(gl, gc); ok && (l < 1 || l > lines || c < 1) {
						t.Fatalf("MapPosition(%d, %d) = %d:%d outside the code", gl, gc, l, c)
					}
				}
			}
		})
	}
}

// T2: the TypeScript compiler is loaded lazily. Preparing JavaScript in a fresh process must not
// touch it, so the check runs in a subprocess (this process may already have run TypeScript).
func TestTypeScriptLazy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperJSOnly$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "CODEMODE_SOURCE_JS_ONLY=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestHelperJSOnly") {
		t.Fatalf("helper did not run:\n%s", out)
	}
}

// TestHelperJSOnly is TestTypeScriptLazy's subprocess.
func TestHelperJSOnly(t *testing.T) {
	if os.Getenv("CODEMODE_SOURCE_JS_ONLY") != "1" {
		t.Skip("run by TestTypeScriptLazy")
	}
	if TypeScriptUsed() {
		t.Fatal("TypeScriptUsed() is true in a fresh process")
	}
	for _, tc := range syntaxCases {
		if _, err := Prepare(tc.code, JavaScript); err != nil {
			t.Fatalf("Prepare(%q): %v", tc.code, err)
		}
	}
	for _, tc := range moduleRejects {
		if _, err := Prepare(tc.code, JavaScript); err == nil {
			t.Fatalf("Prepare(%q) succeeded", tc.code)
		}
	}
	// Refused and disabled TypeScript never reaches the compiler either.
	if _, err := ResolveLanguage(Input{Language: ptr(TypeScript)}, []string{JavaScript}); err == nil {
		t.Fatal("disabled TypeScript accepted")
	}
	if _, err := Prepare("const a: string = '\x00'", TypeScript); err == nil {
		t.Fatal("NUL byte accepted")
	}
	if TypeScriptUsed() {
		t.Fatal("TypeScriptUsed() became true without a TypeScript cell (T2)")
	}
	// No esbuild machinery (e.g. worker goroutines) is running.
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "evanw/esbuild") {
		t.Fatalf("esbuild goroutines are running:\n%s", stacks)
	}
	if _, err := Prepare("const a: number = 1\nreturn a", TypeScript); err != nil {
		t.Fatal(err)
	}
	if !TypeScriptUsed() {
		t.Fatal("TypeScriptUsed() is false after a TypeScript Prepare")
	}
}
