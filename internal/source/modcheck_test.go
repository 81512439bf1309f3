package source

import (
	"strings"
	"testing"
)

// moduleRejects are cells that reach for a module loader (X4). line/col is where the error must
// point in the model's code (1-based, UTF-16 columns).
var moduleRejects = []struct {
	name      string
	code      string
	word      string // "import", "export" or "require": which message
	line, col int
}{
	{"dynamic import", "import('fs')", "import", 1, 1},
	{"awaited dynamic import", `await import("x")`, "import", 1, 7},
	{"import.meta", "import.meta.url", "import", 1, 1},
	{"import declaration", "import fs from 'fs'", "import", 1, 1},
	{"import named", "import {readFile} from 'fs'", "import", 1, 1},
	{"import side effect", "import 'fs'", "import", 1, 1},
	{"export declaration", "export const x = 1", "export", 1, 1},
	{"export default", "export default 1", "export", 1, 1},
	{"export list", "const x = 1\nexport { x }", "export", 2, 1},
	{"require call", "require('fs')", "require", 1, 1},
	{"require in nested function", "function f() {\n  return require('x')\n}", "require", 2, 10},
	{"require in arrow default", "const f = (m = require('x')) => m", "require", 1, 16},
	{"require in template expression", "return `${require('x')}`", "require", 1, 11},
	{"require tagged", "require`fs`", "require", 1, 1},
	{"new require", "new require('x')", "require", 1, 5},
	{"require grouped", "(require)('x')", "require", 1, 2},
	{"require optional call", "require?.('x')", "require", 1, 1},
	{"require after a comma", "(0, require)('x')", "require", 1, 5},
	{"require in a conditional", "(globalThis.x ? f : require)('x')", "require", 1, 21},
	{"require in a logical or", "(f || require)('x')", "require", 1, 7},
	{"require with a newline before the call", "require\n('x')", "require", 1, 1},
	{"require awaited", "await require('x')", "require", 1, 7},
	{"require in destructuring default", "const {a = require('x')} = {}", "require", 1, 12},
	{"import in class computed field key", "class A { [import('x')] = 1 }", "import", 1, 12},
	{"require in class computed method key", "class A { static [require('fs')]() {} }", "require", 1, 19},
	{"require in object computed method key", "({ [require('x')]() {} })", "require", 1, 5},
	{"require in class field initializer", "class A { f = require('x') }", "require", 1, 15},
	{"require in static block", "class A { static { require('x') } }", "require", 1, 20},
	{"escaped require", `requ\u0069re('fs')`, "require", 1, 1},
	{"escaped require braces", `\u{72}equire('fs')`, "require", 1, 1},
	{"escaped import keyword", `\u0069mport('x')`, "import", 1, 1},
	{"require after member of same name", "obj.require(1)\nrequire('fs')", "require", 2, 1},
	{"import after member of same name", "x.import; import('fs')", "import", 1, 11},
	{"import.meta after object key", "const o = {import: 1}\nreturn import.meta", "import", 2, 8},
	{"require after shadowed one", "function g() { function require() {}; require() }\nrequire('fs')", "require", 2, 1},
	{"require after words in strings and comments", "// require('a')\nconst s = 'require(\"b\")' /* import('c') */\n  require('fs')", "require", 3, 3},
	{"position after non-ASCII", "const é = 1; require('x')", "require", 1, 14},
	{"position after astral", "const s = '😀'; require('x')", "require", 1, 17},
	{"position with CRLF", "const a = 1\r\n\r\n  import('x')", "import", 3, 3},
	{"multi-line block comment before", "/* a\n b */ const q = 1; import('x')", "import", 2, 20},
}

// moduleAllowed are cells where the words only appear as text or as the cell's own names (X4:
// "the same words inside strings, comments, template literals or regular expressions are just
// text").
var moduleAllowed = []struct{ name, code string }{
	{"single-quoted string", `return 'require("fs")'`},
	{"double-quoted string", `return "import('x')"`},
	{"template literal", "const x = 'fs'; return `import ${x}`"},
	{"template literal require", "return `require('fs') ${'import(\"x\")'}`"},
	{"line comment", "// import('fs'); require('fs')\nreturn 1"},
	{"block comment", "/* import x from 'y'\n require('z') */ return 1"},
	{"regex import", `return /import\(/.test(s)`},
	{"regex require", `return s.match(/require\(/g)`},
	{"regex after paren", "if (s) /require\\(/.test(s)"},
	{"member call", "return obj.require(1)"},
	{"member name import", "return x.import"},
	{"optional member", "return x?.require?.(1) ?? y?.import"},
	{"object key import", "return {import: 1}"},
	{"object key require", "return {require: 1, export: 2}"},
	{"object method named require", "return {require() { return 1 }}"},
	{"class members", "class A { require() {} import = 1; static export = 2 }\nreturn new A().require()"},
	{"private name", "class A { #require = 1; get r() { return this.#require } }\nreturn new A().r"},
	{"local function require", "function require() { return 1 }\nreturn require('x')"},
	{"local const require", "const require = (m) => tools.callValue(m)\nreturn require('fs')"},
	{"hoisted function require", "const v = require('x')\nfunction require(m) { return m }\nreturn v"},
	{"hoisted var require", "function f() { return require('x') }\nvar require = () => 1\nreturn f()"},
	{"parameter require", "const f = (require) => require('x'); return f(String)"},
	{"catch binding require", "try { throw 1 } catch (require) { return require }"},
	{"destructured require", "const {require} = {require: String}; return require('x')"},
	{"escaped member", `return o.requ\u0069re`},
	{"label named require", "require: for (;;) { break require }"},
	{"words as parts of names", "const requirement = 1, important = 2, exported = 3; return requirement + important + exported"},
	{"string key access", "return globalThis['require']"},
	// Issue 14 item 2: the mention of require is not module loading; only a call of it is.
	{"typeof require", "return typeof require"},
	{"README example", "console.log(\"hi\"); return [1 + 1, typeof require]"},
	{"require aliased", "const r = require; return typeof r"},
	{"require stored", "globalThis.x = require"},
	{"require returned", "return require"},
	{"require compared", "return require === undefined"},
	{"require in a condition", "if (typeof require !== 'undefined') { return 1 }"},
	{"require member of a local", "const m = {require: (x) => x}; return m.require('fs')"},
	{"shorthand property", "const require = 1; return {require}"},
	{"require called through a member", "return globalThis.require?.('x')"},
	{"require function declaration then call", "function require(m) { return m }\nreturn (0, require)('x')"},
}

// parserUnknown is code tdewolff's parser does not know; the lexer fallback decides. Clean
// tokens must not be refused (the engine reports real syntax errors itself).
var parserUnknown = []struct{ name, code string }{
	{"using declaration", "using res = open()\nreturn res.name"},
	{"decorator", "@dec class A {}\nreturn A"},
	{"decorator with member names", "@dec class A { f() { return this.require } }\nreturn x.import + o?.require"},
	{"decorator and typeof require", "@dec class A {}\nreturn typeof require"},
	{"decorator and a require function declaration", "@dec class A {}\nfunction require(m) { return m }"},
	{"syntax error with strings", "return 'import(\"x\")' +"},
	{"syntax error with comments", "// require('x')\nconst = 1"},
}

func TestModuleAccessRejected(t *testing.T) {
	msgs := map[string]string{"import": msgImport, "export": msgExport, "require": msgRequire}
	for _, tc := range moduleRejects {
		t.Run(tc.name, func(t *testing.T) { // X4
			_, err := Prepare(tc.code, JavaScript)
			e := asError(t, err)
			if e.Msg != msgs[tc.word] {
				t.Errorf("message %q, want the %s message", e.Msg, tc.word)
			}
			if e.Line != tc.line || e.Column != tc.col {
				t.Errorf("position %d:%d, want %d:%d", e.Line, e.Column, tc.line, tc.col)
			}
			if !strings.Contains(e.Error(), "(line ") {
				t.Errorf("Error() has no position: %q", e.Error())
			}
		})
	}
}

func TestModuleAccessAllowed(t *testing.T) {
	for _, tc := range moduleAllowed {
		t.Run(tc.name, func(t *testing.T) { // X4
			p, err := Prepare(tc.code, JavaScript)
			if err != nil {
				t.Fatalf("Prepare(%q): %v", tc.code, err)
			}
			if p.JS != wrapperHead+tc.code+wrapperTail {
				t.Fatalf("JS is not the wrapped code: %q", p.JS)
			}
		})
	}
}

func TestModuleAccessParserFallback(t *testing.T) {
	for _, tc := range parserUnknown {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Prepare(tc.code, JavaScript); err != nil {
				t.Fatalf("Prepare(%q): %v", tc.code, err)
			}
		})
	}
	// Module access next to syntax the parser does not know is still refused, at the token.
	rejects := []struct {
		name, code, msg string
		line, col       int
	}{
		{"using require", "using m = require('x')", msgRequire, 1, 11},
		{"decorator then import", "@dec class A {}\nconst m = await import('x')", msgImport, 2, 17},
		{"decorator then export", "@dec class A {}\nexport default A", msgExport, 2, 1},
		{"decorator then escaped require", "@dec class A {}\nrequ\\u0069re('x')", msgRequire, 2, 1},
		{"syntax error then import", "let = ;\n  import('x')", msgImport, 2, 3},
		// Without a parse, a bare `require` cannot be told from a declaration or a key: the
		// fallback is conservative (member names after `.`/`?.` are the only exception).
		{"decorator and method named require", "@dec class A { require() {} }", msgRequire, 1, 16},
		{"decorator then optional require call", "@dec class A {}\nrequire?.('x')", msgRequire, 2, 1},
		{"decorator then tagged require", "@dec class A {}\nrequire`x`", msgRequire, 2, 1},
		{"decorator and key named import", "@dec class A {}\nreturn {import: 1}", msgImport, 2, 9},
	}
	for _, tc := range rejects {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Prepare(tc.code, JavaScript)
			e := asError(t, err)
			if e.Msg != tc.msg || e.Line != tc.line || e.Column != tc.col {
				t.Fatalf("got %v, want %q at %d:%d", e, tc.msg, tc.line, tc.col)
			}
		})
	}
}

func TestIdentIs(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"require", true},
		{"requir", false},
		{`requ\u0069re`, true},
		{`\u0072\u0065\u0071\u0075\u0069\u0072\u0065`, true},
		{`\u{72}equire`, true},
		{`\u{000072}equire`, true},
		{`requ\u0069r`, false},
		{`requ\u00`, false},
		{`requ\u{69`, false},
		{`requ\x69re`, false},
		{`requ\u{110000}re`, false},
		{`requ\uzzzzre`, false},
		{`\`, false},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			if got := identIs([]byte(tt.text), "require"); got != tt.want {
				t.Fatalf("identIs(%q) = %v", tt.text, got)
			}
		})
	}
}
