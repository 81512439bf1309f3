package source

import "testing"

// TestEndsEarly is issue 14 item 4: a syntax error in the wrapper's closing line is explained in
// terms of the model's code — never "unexpected token '}'" about our wrapper.
func TestEndsEarly(t *testing.T) {
	tests := []struct {
		name      string
		code      string
		msg       string
		line, col int
	}{
		{"open paren", "return (1 +", `unexpected end of the code: the "(" at line 1:8 is never closed`, 1, 12},
		{"open brace", "if (x) {\n  return 1", `unexpected end of the code: the "{" at line 1:8 is never closed`, 2, 11},
		{"open bracket after a nested pair", "return [f(1), g(2)", `unexpected end of the code: the "[" at line 1:8 is never closed`, 1, 19},
		{"open template expression", "return `a ${1 + ", `unexpected end of the code: the "${" at line 1:11 is never closed`, 1, 17},
		{"second template expression", "return `${a} and ${b", `unexpected end of the code: the "${" at line 1:18 is never closed`, 1, 21},
		{"dangling operator", "return 1 +", `unexpected end of the code: something is missing after "+"`, 1, 11},
		{"dangling arrow", "const f = () =>", `unexpected end of the code: something is missing after "=>"`, 1, 16},
		{"dangling operator before a comment", "x = 1 +\n// done", `unexpected end of the code: something is missing after "+"`, 2, 8},
		{"nothing to point at", "return x", `unexpected end of the code`, 1, 9},
		{"closes the cell", "return 1 }", `unexpected "}": it closes nothing the cell opened (a cell is the body of an async function: do not close it)`, 1, 10},
		{"mismatched close", "foo(1, {a: 2)", `unexpected ")": the "{" at line 1:8 is still open`, 1, 13},
		{"strings and comments do not count", "const s = '(' // {\nreturn [s", `unexpected end of the code: the "[" at line 2:8 is never closed`, 2, 10},
		{"after non-ASCII", "const é = '😀'; f(", `unexpected end of the code: the "(" at line 1:18 is never closed`, 1, 19},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Program{Language: JavaScript, Source: tt.code}
			lines := len(splitLines(tt.code))
			if _, ok := p.EndsEarly(lines+1, 1); ok {
				t.Fatal("the model's last line is not the wrapper")
			}
			e, ok := p.EndsEarly(lines+2, 2)
			if !ok {
				t.Fatal("the wrapper's closing line is not recognised")
			}
			if e.Msg != tt.msg || e.Line != tt.line || e.Column != tt.col {
				t.Fatalf("got %q at %d:%d, want %q at %d:%d", e.Msg, e.Line, e.Column, tt.msg, tt.line, tt.col)
			}
		})
	}
	if _, ok := (&Program{Language: TypeScript, Source: "x"}).EndsEarly(9, 1); ok {
		t.Fatal("TypeScript positions go through the source map, not EndsEarly")
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
