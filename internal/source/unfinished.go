package source

import (
	"fmt"
	"strings"

	"github.com/tdewolff/parse/v2/js"
)

// A syntax error that the engine (QuickJS, or esbuild for TypeScript) reports on the wrapper's
// closing line is about our `})`, never about anything the model wrote: `return (1 +` gives
// "unexpected token in expression: '}'". The model's code either ended early (a bracket left
// open, an operator with nothing after it) or closed a bracket it never opened, ending the cell's
// function itself. unfinished looks at the model's tokens and says which, with a position in the
// model's code.

// EndsEarly reports whether a syntax error at line:col of the evaluated JavaScript lies in the
// wrapper's closing line, and if so returns an explanation positioned in the model's code.
func (p *Program) EndsEarly(line, col int) (*Error, bool) {
	if p.Language != JavaScript || line <= strings.Count(p.Source, "\n")+2 { // the model's lines are 2..n+1
		return nil, false
	}
	return unfinished(p.Source), true
}

// bracket is an open bracket waiting for its match.
type bracket struct {
	open   string
	offset int
}

var closing = map[js.TokenType]string{
	js.CloseParenToken: "(", js.CloseBracketToken: "[", js.CloseBraceToken: "{", js.TemplateEndToken: "${",
}

// unfinished explains why the model's code does not end where the cell function does.
func unfinished(code string) *Error {
	var stack []bracket
	last := js.ErrorToken
	var lastText string
	for _, t := range significantTokens(code) {
		switch t.tt {
		case js.OpenParenToken, js.OpenBracketToken, js.OpenBraceToken:
			stack = append(stack, bracket{string(t.text), t.offset})
		case js.TemplateStartToken: // `…${
			stack = append(stack, bracket{"${", t.offset + len(t.text) - 2})
		case js.TemplateMiddleToken: // }…${
			if len(stack) > 0 && stack[len(stack)-1].open == "${" {
				stack[len(stack)-1].offset = t.offset + len(t.text) - 2
			}
		case js.CloseParenToken, js.CloseBracketToken, js.CloseBraceToken, js.TemplateEndToken:
			want := closing[t.tt]
			text := string(t.text)
			if t.tt == js.TemplateEndToken {
				text = "}"
			}
			switch {
			case len(stack) == 0:
				return at(code, t.offset, fmt.Sprintf("unexpected %q: it closes nothing the cell opened (a cell is the body of an async function: do not close it)", text))
			case stack[len(stack)-1].open != want:
				top := stack[len(stack)-1]
				l, c := lineCol(code, top.offset)
				return at(code, t.offset, fmt.Sprintf("unexpected %q: the %q at line %d:%d is still open", text, top.open, l, c))
			}
			stack = stack[:len(stack)-1]
		}
		last, lastText = t.tt, string(t.text)
	}
	end := &Error{Msg: "unexpected end of the code"}
	end.Line, end.Column = strings.Count(code, "\n")+1, lineLen(code)+1
	switch {
	case len(stack) > 0:
		top := stack[len(stack)-1]
		l, c := lineCol(code, top.offset)
		end.Msg += fmt.Sprintf(": the %q at line %d:%d is never closed", top.open, l, c)
	case last != js.ErrorToken && (js.IsOperator(last) || js.IsPunctuator(last)) && !endsStatement(last):
		end.Msg += fmt.Sprintf(": something is missing after %q", lastText)
	}
	return end
}

func endsStatement(tt js.TokenType) bool {
	switch tt {
	case js.SemicolonToken, js.CloseBraceToken, js.CloseParenToken, js.CloseBracketToken, js.IncrToken, js.DecrToken:
		return true
	}
	return false
}

func at(code string, offset int, msg string) *Error {
	l, c := lineCol(code, offset)
	return &Error{Msg: msg, Line: l, Column: c}
}
