package source

import (
	"strings"
	"unicode/utf16"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"
)

// TypeScript cells may import types: `import type { Readable } from "stream"`,
// `import type * as FS from "fs"`, or a plain import whose names are only used as types. The
// transform erases such declarations and nothing is loaded, so they must not be refused (X4).
// But a declaration is only valid at the top level of a module, and the cell is a function body:
// esbuild would reject it there. So the cell's top-level import declarations are lifted onto the
// wrapper's first line — outside the function, where esbuild accepts them and erases the ones
// that are only types — and blanked in place (spaces, newlines kept) so every other position is
// unchanged. A declaration that survives the transform is module loading and is refused by the
// module check of the output, at the position of the original declaration.

// liftedImport is one declaration moved onto the wrapper's first line.
type liftedImport struct {
	from, to int // UTF-16 columns (1-based, end exclusive) of the lifted text on line 1
	line     int // where the declaration was in the model's code (1-based)
	col      int
}

// liftImports returns the code with its top-level import declarations blanked, the text to put
// before the wrapper head, and where each lifted declaration came from.
func liftImports(code string) (string, string, []liftedImport) {
	if !strings.Contains(code, "import") {
		return code, "", nil
	}
	toks := significantTokens(code)
	var prefix strings.Builder
	var lifted []liftedImport
	var spans [][2]int
	depth := 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.tt {
		case js.OpenBraceToken, js.OpenParenToken, js.OpenBracketToken, js.TemplateStartToken:
			depth++
		case js.CloseBraceToken, js.CloseParenToken, js.CloseBracketToken, js.TemplateEndToken:
			depth--
		}
		if t.tt != js.ImportToken || depth != 0 || i > 0 && afterDot(toks[i-1].tt) {
			continue
		}
		end, ok := importDeclEnd(toks, i)
		if !ok {
			continue
		}
		parts := make([]string, 0, end-i)
		for _, p := range toks[i:end] {
			parts = append(parts, string(p.text))
		}
		text := strings.Join(parts, " ")
		if !strings.HasSuffix(text, ";") {
			text += ";"
		}
		text += " "
		start := utf16Len(prefix.String()) + 1
		prefix.WriteString(text)
		line, col := lineCol(code, t.offset)
		lifted = append(lifted, liftedImport{from: start, to: start + utf16Len(text), line: line, col: col})
		last := toks[end-1]
		spans = append(spans, [2]int{t.offset, last.offset + len(last.text)})
		i = end - 1
	}
	if len(spans) == 0 {
		return code, "", nil
	}
	return blankSpans(code, spans), prefix.String(), lifted
}

type token struct {
	tt     js.TokenType
	text   []byte
	offset int
}

// significantTokens lexes code. The lexer can read two bytes past a trailing `#`: a newline after
// the code (past every token's offset) keeps it inside the buffer.
func significantTokens(code string) []token {
	var toks []token
	eachToken(parse.NewInputString(code+"\n"), func(tt js.TokenType, text []byte, offset int, _ js.TokenType) bool {
		toks = append(toks, token{tt, text, offset})
		return true
	})
	return toks
}

// importDeclEnd recognises an import declaration with a module specifier starting at toks[i]
// (`import "m"`, `import [type] X, {a as b, type c} from "m"`, `import [type] * as X from "m"`,
// optionally `with {type: "json"}` and `;`) and returns the index after it. Import-equals
// (`import x = require("m")`), import() and import.meta are not lifted: they are left for the
// transform and the module check.
func importDeclEnd(toks []token, i int) (int, bool) {
	j := i + 1
	at := func(k int) (token, bool) {
		if k < len(toks) {
			return toks[k], true
		}
		return token{}, false
	}
	ident := func(t token) bool { return js.IsIdentifierName(t.tt) }
	t, ok := at(j)
	if !ok {
		return 0, false
	}
	if t.tt != js.StringToken {
		// Bindings, then `from`.
		for {
			t, ok = at(j)
			if !ok {
				return 0, false
			}
			switch {
			case t.tt == js.MulToken || t.tt == js.CommaToken:
				j++
			case t.tt == js.OpenBraceToken:
				k, ok := closeBrace(toks, j, func(t token) bool {
					return ident(t) || t.tt == js.CommaToken || t.tt == js.StringToken
				})
				if !ok {
					return 0, false
				}
				j = k
			case ident(t) && string(t.text) == "from":
				if n, ok := at(j + 1); ok && n.tt == js.StringToken {
					j += 2
					goto specifier
				}
				j++ // a binding named `from`
			case ident(t):
				j++
			default:
				return 0, false
			}
		}
	}
	j++ // the module specifier
specifier:
	if t, ok := at(j); ok && ident(t) && (string(t.text) == "with" || string(t.text) == "assert") {
		if n, ok := at(j + 1); ok && n.tt == js.OpenBraceToken {
			k, ok := closeBrace(toks, j+1, func(t token) bool {
				return ident(t) || t.tt == js.StringToken || t.tt == js.ColonToken || t.tt == js.CommaToken
			})
			if !ok {
				return 0, false
			}
			j = k
		}
	}
	if t, ok := at(j); ok && t.tt == js.SemicolonToken {
		j++
	}
	for _, t := range toks[i:j] {
		if strings.ContainsAny(string(t.text), "\n\r\u2028\u2029") {
			return 0, false // a line continuation inside a string: keep line numbers exact
		}
	}
	return j, true
}

// closeBrace returns the index after the `}` matching toks[open], if every token between is
// allowed (no nesting).
func closeBrace(toks []token, open int, allowed func(token) bool) (int, bool) {
	for k := open + 1; k < len(toks); k++ {
		switch {
		case toks[k].tt == js.CloseBraceToken:
			return k + 1, true
		case !allowed(toks[k]):
			return 0, false
		}
	}
	return 0, false
}

// blankSpans returns code with each span replaced by spaces, keeping line terminators and UTF-16
// columns.
func blankSpans(code string, spans [][2]int) string {
	var b strings.Builder
	b.Grow(len(code))
	prev := 0
	for _, sp := range spans {
		b.WriteString(code[prev:sp[0]])
		for _, r := range code[sp[0]:sp[1]] {
			switch r {
			case '\n', '\r', '\u2028', '\u2029':
				b.WriteRune(r)
			default:
				b.WriteString("  "[:max(utf16.RuneLen(r), 1)])
			}
		}
		prev = sp[1]
	}
	b.WriteString(code[prev:])
	return b.String()
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += max(utf16.RuneLen(r), 1)
	}
	return n
}
