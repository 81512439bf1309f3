package source

import (
	"fmt"
	"strings"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"
)

// The TypeScript transform (esbuild) parses, visits and prints by recursive descent with no
// depth limit of its own, and a Go stack overflow is a fatal error no recover can catch: one
// 520 KB cell of 260,000 nested parentheses took the whole process down, and at 230,000 levels it
// took 1.4 GB. Parentheses are not the only way in: `!!!!…`, `a.b.b.b…`, `f()()()…`, `a=a=a…`,
// `if(a)if(a)…`, `else if` chains and nested arrows recurse just as deep, kilobytes of stack per
// level. Some paths are super-linear too: nested scopes (the renamer), comma chains (the
// printer), string concatenation (constant folding), the indentation of pretty-printed output.
//
// So before esbuild sees a cell, a token scan (the tdewolff lexer: a loop, no recursion)
// measures how deep the parser could go. The measure does not underestimate the nesting of a
// statement: every token in a bracket level counts, and a level's count starts again only where
// the parser is back in that level's list or statement loop:
//
//   - at `;` — but an `else` right after it continues the chain: `if…; else if…; else if…` nests
//     one level per `else`, so the count goes on from the chain's length;
//   - at `,` between the items of an array literal, an object literal or call arguments. A
//     bracket that cannot be told apart from a group, an index or a block counts as one of
//     those, whose commas are operators and never reset.
//
// The depth at a token is the sum, over the enclosing brackets, of the count each had when it
// opened, plus the current count. Scopes (blocks, bodies and arrows; not object literals) are
// counted the same way against MaxScopeNesting, the renamer's cost. Newlines never reset
// (`a⏎.b⏎.b…` is one chain), so semicolon-free code counts a whole bracket level as one
// statement: MaxNesting is large because it bounds esbuild's stack, not a style.
//
// Measured on this repository's test cache (the TypeScript sources of its npm packages, whole
// modules): depth at most 830 (p99 495), scopes at most 18. At the bounds, filled to
// MaxTypeScriptBytes, the worst family costs esbuild ~0.6 s, ~80 MB and a stack under 16 MiB
// (TestTransformStackBounded and FuzzNesting run the transform with a 32 MiB stack limit).

// MaxNesting bounds the measured nesting of a TypeScript cell: brackets, plus the operators,
// operands and chained calls of one statement.
const MaxNesting = 4096

// MaxScopeNesting bounds the blocks, function bodies and arrow functions a TypeScript cell nests.
const MaxScopeNesting = 64

// MaxTypeScriptBytes bounds a TypeScript cell (JavaScript: MaxCodeBytes). esbuild allocates up
// to ~1 KB per byte of a hostile cell, its super-linear paths (one: a duplicate declaration's
// error scans the file from the start) grow with the size, and the transform cannot be
// interrupted.
const MaxTypeScriptBytes = 64 << 10

// prettyMaxDepth is the deepest measured nesting whose transform output is indented; deeper
// cells are printed without whitespace (typescript.go).
const prettyMaxDepth = 128

// nestLevel is one open bracket of the scan (or the top level).
type nestLevel struct {
	open      js.TokenType // OpenParenToken, OpenBracketToken, OpenBraceToken, TemplateStartToken; 0 at the top
	list      bool         // its commas separate items (array/object literal, call arguments)
	object    bool         // an object literal or type: `{` after `:` in it is one too
	base      int          // depth of the bracket itself
	scopeBase int          // scopes enclosing the bracket (itself included for a brace)
	run       int          // tokens since the last reset
	arrows    int          // `=>` since the last reset
	chain     int          // `else` tokens in the current if/else chain
	ended     bool         // the previous token ended a statement (`;`)
	braceEnd  bool         // the previous token closed a brace
	head      bool         // a paren after if, while, for, with, switch or catch
	headEnd   bool         // the previous token closed such a paren
}

// nestingError describes a cell over one of the bounds, at the token where it was crossed.
func nestingError(code string, offset int, what string) *Error {
	return at(code, offset, fmt.Sprintf("exec: TypeScript: the code %s, the limit for the transform (brackets, "+
		"and the operators and chained calls of one statement, count): split it into shorter statements and functions", what))
}

// measureNesting scans code and returns the deepest nesting and scope nesting it saw, stopping
// with an error at the first token past maxDepth or maxScopes.
func measureNesting(code string, maxDepth, maxScopes int) (depth, scopes int, err error) {
	stack := make([]nestLevel, 1, 16)
	prevText, prevEnd, offset := []byte(nil), 0, 0
	checkDepth := func(l *nestLevel) bool {
		depth = max(depth, l.base+l.run)
		if l.base+l.run > maxDepth {
			err = nestingError(code, offset, fmt.Sprintf("nests deeper than %d levels", maxDepth))
			return false
		}
		return true
	}
	// A newline after the code keeps the lexer's two-byte lookahead inside the buffer (see
	// significantTokens).
	eachToken(parse.NewInputString(code+"\n"), func(tt js.TokenType, text []byte, at int, prev js.TokenType) bool {
		offset = at
		pText, newline := prevText, hasLineTerminator(code[min(prevEnd, len(code)):min(offset, len(code))])
		prevText, prevEnd = text, offset+len(text)
		l := &stack[len(stack)-1]
		switch tt {
		case js.SemicolonToken:
			l.run, l.arrows, l.ended, l.braceEnd = l.chain, 0, true, false
			return true
		case js.CommaToken:
			if l.list {
				l.run, l.arrows, l.chain, l.ended, l.braceEnd = 0, 0, 0, false, false
				return true
			}
		case js.TemplateMiddleToken:
			if l.open == js.TemplateStartToken { // `}…${`: the next substitution
				l.run, l.arrows = 0, 0
				return true
			}
		}
		if l.ended || l.braceEnd {
			if tt == js.ElseToken {
				l.chain++
			} else {
				l.chain = 0
				if l.ended {
					l.run = 0
				}
			}
			l.ended, l.braceEnd = false, false
		}
		switch tt {
		case js.OpenParenToken, js.OpenBracketToken, js.OpenBraceToken, js.TemplateStartToken:
			l.run++
			child := nestLevel{open: tt, base: l.base + l.run, scopeBase: l.scopeBase + l.arrows}
			switch tt {
			case js.OpenParenToken:
				// call arguments or parameters, unless after a statement head's `)` or a `}`
				// (`if (a) (b, c)`, `{} (b, c)`: a group)
				child.list = endsOperand(prev, pText) && !l.headEnd && prev != js.CloseBraceToken
				child.head = isHead(prev)
			case js.OpenBracketToken:
				child.list = arrayBracket(prev) // an array literal, not an index
			case js.OpenBraceToken:
				child.object = objectBrace(prev, l.object, newline)
				child.list = child.object
				if !child.object {
					child.scopeBase++
				}
			}
			depth, scopes = max(depth, child.base), max(scopes, child.scopeBase)
			if child.base > maxDepth {
				err = nestingError(code, offset, fmt.Sprintf("nests deeper than %d levels", maxDepth))
				return false
			}
			if child.scopeBase > maxScopes {
				err = nestingError(code, offset, fmt.Sprintf("nests more than %d blocks and functions", maxScopes))
				return false
			}
			stack = append(stack, child)
			return true
		case js.CloseParenToken, js.CloseBracketToken, js.CloseBraceToken, js.TemplateEndToken:
			head := false
			if len(stack) > 1 {
				head = stack[len(stack)-1].head
				stack = stack[:len(stack)-1]
			}
			l = &stack[len(stack)-1]
			l.run++
			l.braceEnd = tt == js.CloseBraceToken
			l.headEnd = head
			return checkDepth(l)
		case js.ArrowToken:
			l.run++
			l.arrows++
			scopes = max(scopes, l.scopeBase+l.arrows)
			if l.scopeBase+l.arrows > maxScopes {
				err = nestingError(code, offset, fmt.Sprintf("nests more than %d blocks and functions", maxScopes))
				return false
			}
		default:
			l.run++
		}
		l.headEnd = false
		return checkDepth(l)
	})
	return depth, scopes, err
}

func hasLineTerminator(s string) bool { return strings.ContainsAny(s, "\n\r\u2028\u2029") }

// endsOperand reports whether a token can end an operand, so that `(` after it is a call. Unsure
// cases answer false: the `(` is then read as a group, whose commas count.
func endsOperand(tt js.TokenType, text []byte) bool {
	switch tt {
	case js.AsToken, js.OfToken:
		return false // operators that read as identifiers
	case js.IdentifierToken:
		switch string(text) {
		case "satisfies", "keyof", "infer", "is", "asserts", "unique", "readonly":
			return false
		}
	case js.CloseParenToken, js.CloseBracketToken, js.CloseBraceToken, js.TemplateToken, js.TemplateEndToken,
		js.StringToken, js.RegExpToken, js.PrivateIdentifierToken, js.ThisToken, js.SuperToken,
		js.NullToken, js.TrueToken, js.FalseToken, js.ImportToken:
		return true
	}
	return js.IsNumeric(tt) || js.IsIdentifier(tt)
}

// isHead reports whether `(` after tt opens a statement's head, after which a `(` starts a group.
func isHead(tt js.TokenType) bool {
	switch tt {
	case js.IfToken, js.WhileToken, js.ForToken, js.WithToken, js.SwitchToken, js.CatchToken:
		return true
	}
	return false
}

// arrayBracket reports whether `[` after prev opens an array literal (or a tuple type), whose
// commas separate elements, rather than an index, whose commas are operators. Only tokens after
// which no operand can end say array: any identifier, literal or closing bracket says index.
func arrayBracket(prev js.TokenType) bool {
	switch prev {
	case js.ErrorToken, js.ReturnToken, js.YieldToken, js.AwaitToken, js.TypeofToken, js.VoidToken,
		js.DeleteToken, js.InToken, js.InstanceofToken, js.CaseToken, js.ThrowToken, js.ElseToken, js.DoToken:
		return true
	case js.CloseParenToken, js.CloseBracketToken, js.CloseBraceToken, js.NotToken, js.GtToken,
		js.GtGtToken, js.GtGtGtToken, js.IncrToken, js.DecrToken, js.OptChainToken:
		return false // `a()[x]`, `a![x]` (TypeScript's non-null), `f<T>[x]`, `a?.[x]`
	}
	return js.IsPunctuator(prev) || js.IsOperator(prev)
}

// objectBrace reports whether `{` after prev opens an object literal (or an object type), whose
// commas separate properties. Everything else — blocks, function and class bodies, and any case
// in doubt — is read as a block, where a comma is the comma operator.
func objectBrace(prev js.TokenType, inObject, newline bool) bool {
	switch prev {
	case js.ReturnToken, js.YieldToken:
		return !newline // `return⏎{` is a return and a block
	case js.OpenParenToken, js.OpenBracketToken, js.CommaToken, js.QuestionToken, js.EllipsisToken,
		js.TemplateStartToken, js.TemplateMiddleToken, js.AwaitToken,
		js.TypeofToken, js.VoidToken, js.DeleteToken, js.InToken, js.InstanceofToken, js.OfToken,
		js.CaseToken, js.ThrowToken, js.NewToken:
		return true
	case js.ColonToken:
		return inObject // a property's value; elsewhere a label, a case or an annotation
	case js.ArrowToken, js.IncrToken, js.DecrToken, js.GtToken, js.GtGtToken, js.GtGtGtToken:
		return false // an arrow's body, a body after a generic type (`): Promise<T> {`), `a++ {`
	}
	return js.IsOperator(prev)
}
