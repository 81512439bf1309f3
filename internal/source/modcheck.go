package source

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"
)

// Module access (X4) is refused before anything runs, from a real parse of the program: the same
// words inside strings, comments, template literals or regular expressions are just text.
//
// Refused is module *loading*, not the mention of a word: dynamic import(), import.meta, static
// import/export declarations (never valid inside the cell's function body; TypeScript's
// type-only imports are erased before this check, see typescript.go) and calls of an unbound
// `require` — `require(…)`, `require?.(…)`, `new require(…)`, require`…`, also through parentheses,
// a comma or a conditional. `typeof require`, a cell's own `require`, `obj.require` and
// `{require: 1}` are fine: the guest has no `require`, so they are undefined or the cell's own.
// The sandbox is the actual boundary — it has no module loader, so import() would reject at run
// time anyway — but a clear early error saves the model a turn.
//
// When the parser cannot handle the program (syntax it does not know, or a real syntax error),
// a token scan with the same lexer decides conservatively: any `import` keyword, or a `require`
// identifier followed by `(`, `?.` or a template, outside strings, comments, regular expressions
// and member names, is refused; otherwise QuickJS compiles the program and reports its own
// syntax errors.

const (
	msgImport  = "exec: import is not available in code mode: cells cannot load modules; use the tools, MCP and API globals instead"
	msgExport  = "exec: export is not available in code mode: a cell is an async function body, not a module; use `return value` to hand back a result"
	msgRequire = "exec: require() is not available in code mode: cells cannot load modules; use the tools, MCP and API globals instead"
	msgWrapper = "exec: the code closes the cell's function early (an unbalanced `}` or `)`): a cell is the body of an async function"
)

func moduleMsg(word string) string {
	switch word {
	case "require":
		return msgRequire
	case "export":
		return msgExport
	}
	return msgImport
}

// moduleVisitor collects the offending nodes. Identifier and import() nodes keep a slice of the
// parsed input, so the first byte of that slice identifies the exact token to report.
type moduleVisitor struct {
	hits       map[*byte]string // first byte of an offending token → "import" or "require"
	importMeta bool
	moduleStmt bool
}

func (v *moduleVisitor) hit(data []byte, word string) {
	if len(data) > 0 {
		v.hits[&data[0]] = word
	}
}

func (v *moduleVisitor) Enter(n js.INode) js.IVisitor {
	switch x := n.(type) {
	case *js.CallExpr:
		if lit, ok := x.X.(*js.LiteralExpr); ok && lit.TokenType == js.ImportToken {
			v.hit(lit.Data, "import")
		}
		v.callee(x.X)
	case *js.NewExpr:
		v.callee(x.X)
	case *js.TemplateExpr:
		if x.Tag != nil {
			v.callee(x.Tag)
		}
	case *js.ImportMetaExpr:
		v.importMeta = true
	case *js.ImportStmt, *js.ExportStmt:
		v.moduleStmt = true
	case *js.Var:
		if unbound(x) && identIs(x.Data, "import") { // an escaped keyword such as \u0069mport
			v.hit(x.Data, "import")
		}
	case *js.ClassElementName:
		// js.Walk does not descend into class element names: walk computed keys
		// (`class A { [require('x')] = 1 }`, `({ [import('x')]() {} })`) here.
		js.Walk(v, &x.PropertyName)
	}
	return v
}

func (v *moduleVisitor) Exit(js.INode) {}

// unbound reports whether a name refers to no declaration of the cell. The parser links a name
// it first read as a possible arrow parameter (`(0, require)`) to its declaration through Link.
func unbound(x *js.Var) bool {
	for i := 0; x.Link != nil && i < 64; i++ {
		x = x.Link
	}
	return x.Decl == js.NoDecl
}

// callee flags an unbound `require` in the position of the function a call, `new` or tagged
// template invokes: directly, in parentheses, as the last operand of a comma, or as either
// branch of a conditional or logical operator (`(0, require)(…)`, `(c ? require : f)(…)`).
func (v *moduleVisitor) callee(e js.IExpr) {
	switch x := e.(type) {
	case *js.Var:
		if unbound(x) && identIs(x.Data, "require") {
			v.hit(x.Data, "require")
		}
	case *js.GroupExpr:
		v.callee(x.X)
	case *js.CommaExpr:
		if len(x.List) > 0 {
			v.callee(x.List[len(x.List)-1])
		}
	case *js.CondExpr:
		v.callee(x.X)
		v.callee(x.Y)
	case *js.BinaryExpr:
		switch x.Op {
		case js.OrToken, js.AndToken, js.NullishToken:
			v.callee(x.X)
			v.callee(x.Y)
		case js.CommaToken:
			v.callee(x.Y)
		}
	}
}

func checkModuleAccess(program string, lineOffset int) error {
	in := parse.NewInputString(program)
	ast, err := js.Parse(in, js.Options{})
	if err != nil {
		return scanModuleTokens(program, lineOffset)
	}
	v := moduleVisitor{hits: map[*byte]string{}}
	js.Walk(&v, ast)
	if len(v.hits) > 0 || v.importMeta || v.moduleStmt {
		// Find the first offending token in source order: re-lex the same buffer, so the
		// tokens' bytes are the very bytes the AST nodes point to.
		in.Reset()
		word, at := "import", -1
		var keyword string // an import/export keyword waiting for the token after it
		keywordAt := -1
		eachToken(in, func(tt js.TokenType, text []byte, offset int, prev js.TokenType) bool {
			if keyword != "" {
				// import.meta, or an import/export declaration
				if (tt == js.DotToken && keyword == "import" && v.importMeta) || (tt != js.DotToken && v.moduleStmt) {
					word, at = keyword, keywordAt
					return false
				}
				keyword = ""
			}
			if w, ok := v.hits[&text[0]]; ok {
				word, at = w, offset
				return false
			}
			if (tt == js.ImportToken || tt == js.ExportToken) && !afterDot(prev) {
				keyword, keywordAt = string(text), offset
			}
			return true
		})
		if at < 0 && keyword != "" && v.moduleStmt {
			word, at = keyword, keywordAt
		}
		return positioned(moduleMsg(word), program, at, lineOffset)
	}
	if !wrapsCell(ast) {
		return &Error{Msg: msgWrapper}
	}
	return nil
}

// wrapsCell reports whether the program is still exactly the wrapper: one parenthesized async
// function expression. Code that closes the wrapper early (`}); f(); (async function () {`) would
// otherwise run at script level, outside the cell function. The wrapper's tail (`\n})`) cannot be
// swallowed by a comment, string or template, so a program of this shape has the whole cell as
// the function's body.
func wrapsCell(ast *js.AST) bool {
	if len(ast.List) != 1 {
		return false
	}
	es, ok := ast.List[0].(*js.ExprStmt)
	if !ok {
		return false
	}
	g, ok := es.Value.(*js.GroupExpr)
	if !ok {
		return false
	}
	f, ok := g.X.(*js.FuncDecl)
	return ok && f.Async
}

// scanModuleTokens is the fallback when the parser cannot handle the program: any import or
// export keyword (or an escaped `import`), and a `require` identifier followed by `(`, `?.` or a
// template, outside strings, comments, regular expressions and member names (`x.import`) is
// refused. Without a parse a cell's own `require` function cannot be told from the global one,
// so a call of it is refused too; its declaration (`function require(`) is not.
func scanModuleTokens(program string, lineOffset int) error {
	word, at := "", -1
	requireAt := -1 // a `require` waiting for the token after it
	eachToken(parse.NewInputString(program), func(tt js.TokenType, text []byte, offset int, prev js.TokenType) bool {
		if requireAt >= 0 {
			switch tt {
			case js.OpenParenToken, js.OptChainToken, js.TemplateToken, js.TemplateStartToken:
				word, at = "require", requireAt
				return false
			}
			requireAt = -1
		}
		if afterDot(prev) {
			return true
		}
		switch {
		case tt == js.ImportToken || tt == js.ExportToken:
			word = string(text)
		case tt == js.IdentifierToken && identIs(text, "require"):
			if prev != js.FunctionToken {
				requireAt = offset
			}
			return true
		case tt == js.IdentifierToken && identIs(text, "import"):
			word = "import"
		default:
			return true
		}
		at = offset
		return false
	})
	if at < 0 {
		return nil
	}
	return positioned(moduleMsg(word), program, at, lineOffset)
}

func afterDot(prev js.TokenType) bool { return prev == js.DotToken || prev == js.OptChainToken }

// identIs reports whether an identifier token reads as word, decoding \uXXXX and \u{X} escapes
// the way the engine does (`requ\u0069re` is `require`).
func identIs(text []byte, word string) bool {
	if bytes.IndexByte(text, '\\') < 0 {
		return string(text) == word
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		if text[i] != '\\' {
			b.WriteByte(text[i])
			i++
			continue
		}
		if i+1 >= len(text) || text[i+1] != 'u' {
			return false
		}
		var hex []byte
		j := i + 2
		if j < len(text) && text[j] == '{' {
			k := bytes.IndexByte(text[j:], '}')
			if k < 0 {
				return false
			}
			hex, j = text[j+1:j+k], j+k+1
		} else {
			if j+4 > len(text) {
				return false
			}
			hex, j = text[j:j+4], j+4
		}
		r, err := strconv.ParseUint(string(hex), 16, 32)
		if err != nil || r > unicode.MaxRune {
			return false
		}
		b.WriteRune(rune(r))
		i = j
	}
	return b.String() == word
}

// eachToken lexes the input, resolving the regular-expression/division ambiguity from the
// previous significant token, and calls fn with each significant token, its byte offset and the
// previous significant token's type.
func eachToken(in *parse.Input, fn func(tt js.TokenType, text []byte, offset int, prev js.TokenType) bool) {
	l := js.NewLexer(in)
	prev := js.ErrorToken // start of input: a '/' starts a regular expression
	for {
		tt, text := l.Next()
		if tt == js.ErrorToken && len(text) == 0 {
			return // end of input
		}
		// Any other ErrorToken is a character the lexer does not know (`@` of a decorator) or an
		// unterminated string or template, which swallows the rest: lexing goes on after it.
		if (tt == js.DivToken || tt == js.DivEqToken) && regexpAllowedAfter(prev) {
			tt, text = l.RegExp()
			if tt == js.ErrorToken {
				return
			}
		}
		switch tt {
		case js.WhitespaceToken, js.LineTerminatorToken, js.CommentToken, js.CommentLineTerminatorToken:
			continue
		}
		if len(text) == 0 {
			continue
		}
		// The lexer hands out slices clipped to the token (cap == len), so the offset comes from
		// the input's position, which is just past the token.
		if !fn(tt, text, in.Offset()-len(text), prev) {
			return
		}
		prev = tt
	}
}

func regexpAllowedAfter(prev js.TokenType) bool {
	switch {
	case prev == js.ErrorToken:
		return true
	case prev == js.CloseParenToken, prev == js.CloseBracketToken, prev == js.CloseBraceToken:
		return false
	case prev == js.IncrToken, prev == js.DecrToken:
		return false
	case js.IsPunctuator(prev), js.IsOperator(prev):
		return true
	case prev == js.ReturnToken, prev == js.TypeofToken, prev == js.InstanceofToken, prev == js.InToken,
		prev == js.OfToken, prev == js.NewToken, prev == js.DeleteToken, prev == js.VoidToken,
		prev == js.ThrowToken, prev == js.CaseToken, prev == js.DoToken, prev == js.ElseToken,
		prev == js.AwaitToken, prev == js.YieldToken:
		return true
	}
	return false
}

// positioned builds an Error at the byte offset at (mapped to the model's lines); at < 0 leaves it
// without a position.
func positioned(msg, program string, at, lineOffset int) error {
	e := &Error{Msg: msg}
	if at >= 0 {
		line, col := lineCol(program, at)
		if line > lineOffset {
			e.Line, e.Column = line-lineOffset, col
		}
	}
	return e
}

// lineCol converts a byte offset into 1-based line and column (columns count UTF-16 units, as
// JavaScript engines report them).
func lineCol(s string, offset int) (int, int) {
	line, col := 1, 1
	for i, r := range s {
		if i >= offset {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
			continue
		}
		if r >= 0x10000 {
			col += 2
		} else {
			col++
		}
	}
	return line, col
}
