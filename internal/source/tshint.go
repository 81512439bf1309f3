package source

import "github.com/tdewolff/parse/v2/js"

// LooksLikeTypeScript reports whether JavaScript that failed to compile carries TypeScript-only
// syntax, so the syntax error can say what to do (call exec with language "typescript") rather
// than leave a model guessing at a bare SyntaxError. It is a hint, not a parser: it looks for
// constructs JavaScript never has — a typed binding (`const n: number`), a typed parameter or
// return (`(a: string)`, `): T =>`), `interface X {`, `type X =`, `enum X {`, `x as T`, and
// access modifiers in a class — and stays quiet when unsure.
func LooksLikeTypeScript(code string) bool {
	if len(code) > 1<<20 {
		return false // an error hint is not worth lexing a megabyte for
	}
	toks := significantTokens(code)
	word := func(i int, w string) bool {
		return i >= 0 && i < len(toks) && js.IsIdentifierName(toks[i].tt) && string(toks[i].text) == w
	}
	ident := func(i int) bool { return i >= 0 && i < len(toks) && js.IsIdentifierName(toks[i].tt) }
	is := func(i int, tt js.TokenType) bool { return i >= 0 && i < len(toks) && toks[i].tt == tt }
	depth := 0 // parentheses
	for i := range toks {
		switch toks[i].tt {
		case js.OpenParenToken:
			depth++
		case js.CloseParenToken:
			depth--
			// `): T` followed by `=>` or `{`: a return type.
			if is(i+1, js.ColonToken) && ident(i+2) && (is(i+3, js.ArrowToken) || is(i+3, js.OpenBraceToken)) {
				return true
			}
		}
		switch {
		case (word(i, "const") || word(i, "let") || word(i, "var")) && ident(i+1) && is(i+2, js.ColonToken):
			return true
		case (word(i, "interface") || word(i, "enum")) && ident(i+1) && !word(i+1, "from") && (is(i+2, js.OpenBraceToken) || word(i+2, "extends")):
			return true
		case word(i, "type") && ident(i+1) && (is(i+2, js.EqToken) || is(i+2, js.LtToken)) && (i == 0 || is(i-1, js.SemicolonToken) || is(i-1, js.CloseBraceToken)):
			return true
		case word(i, "as") && i > 0 && (ident(i-1) || is(i-1, js.CloseParenToken) || is(i-1, js.CloseBracketToken)) && ident(i+1):
			return true
		case depth > 0 && (is(i-1, js.OpenParenToken) || is(i-1, js.CommaToken)) && ident(i) && is(i+1, js.ColonToken) &&
			(word(i+2, "string") || word(i+2, "number") || word(i+2, "boolean") || word(i+2, "any") || word(i+2, "unknown")):
			// `(a: string`, `, n: number`: a typed parameter (an object literal's `{a: 1}` is in braces).
			return true
		case (word(i, "private") || word(i, "public") || word(i, "protected") || word(i, "readonly")) && ident(i+1) &&
			(is(i+2, js.ColonToken) || is(i+2, js.OpenParenToken) || is(i+2, js.SemicolonToken)):
			return true
		}
	}
	return false
}
