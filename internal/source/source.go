// Package source turns an exec input into JavaScript ready for the sandbox: it applies the input
// rules (X1–X2), transpiles TypeScript (T1–T2, lazily), refuses module access by parsing the code
// (X4), and maps positions in the evaluated program back to the model's own lines and columns.
package source

import (
	"fmt"
	"strings"
)

// Languages the exec tool accepts.
const (
	JavaScript = "javascript"
	TypeScript = "typescript"
)

// Filename is the script name the sandbox evaluates cells under; stack frames with this name are
// the model's code.
const Filename = "cell.js"

// MaxCodeBytes bounds a cell's source. A model never needs more; a hostile caller gets a clear error.
const MaxCodeBytes = 1 << 20

// wrapperHead turns the cell into an async function body (X6): top-level await and return work.
// It sits alone on the first line so the model's line N is the program's line N+1.
const (
	wrapperHead = "(async function () {\n"
	wrapperTail = "\n})"
)

// Input is the exec tool input.
type Input struct {
	Code     *string `json:"code,omitempty"`
	Command  *string `json:"command,omitempty"`
	Language *string `json:"language,omitempty"`
}

// Error is an invalid_input failure with an optional position in the model's code.
type Error struct {
	Msg    string
	Line   int // 1-based; 0 when unknown
	Column int // 1-based; 0 when unknown
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s (line %d:%d)", e.Msg, e.Line, e.Column)
	}
	return e.Msg
}

// Program is a prepared cell.
type Program struct {
	Language string
	// JS is the program the sandbox evaluates as a global script; its completion value is the
	// async function wrapping the cell.
	JS string
	// Source is the model's code as written.
	Source string
	// OfferTypeScript says TypeScript is an enabled language: a JavaScript cell that does not
	// compile and looks like TypeScript gets a hint to switch (SyntaxHint).
	OfferTypeScript bool
	pos             positionMapper
}

// SyntaxHint is appended to the syntax error of a cell that did not compile: for JavaScript
// that carries TypeScript syntax, what to do instead; otherwise "".
func (p *Program) SyntaxHint() string {
	if p == nil || p.Language != JavaScript || !p.OfferTypeScript || !LooksLikeTypeScript(p.Source) {
		return ""
	}
	return `; this looks like TypeScript: call exec again with "language": "typescript"`
}

// MapPosition maps a 1-based line:column in JS back to the model's code. ok is false for
// positions inside the wrapper.
func (p *Program) MapPosition(line, col int) (int, int, bool) {
	if p.pos == nil {
		return 0, 0, false
	}
	return p.pos(line, col)
}

type positionMapper func(line, col int) (int, int, bool)

// ResolveCode applies X1: one of code/command must be non-empty; when both are present they must
// be equal.
func ResolveCode(in Input) (string, error) {
	var code, command string
	if in.Code != nil {
		code = *in.Code
	}
	if in.Command != nil {
		command = *in.Command
	}
	switch {
	case in.Code != nil && in.Command != nil && code != command:
		return "", &Error{Msg: "exec: `code` and `command` are both set but differ; send only `code`"}
	case strings.TrimSpace(code) != "":
		return code, nil
	case strings.TrimSpace(command) != "":
		return command, nil
	default:
		return "", &Error{Msg: "exec: `code` is required: a JavaScript or TypeScript async function body"}
	}
}

// ResolveLanguage applies X2: javascript by default; the language must be enabled.
func ResolveLanguage(in Input, enabled []string) (string, error) {
	lang := JavaScript
	if in.Language != nil {
		lang = *in.Language
	}
	if lang != JavaScript && lang != TypeScript {
		return "", &Error{Msg: fmt.Sprintf("exec: unknown language %q: use \"javascript\" or \"typescript\"", lang)}
	}
	for _, l := range enabled {
		if l == lang {
			return lang, nil
		}
	}
	return "", &Error{Msg: fmt.Sprintf("exec: language %q is disabled by tools.codeMode.languages (enabled: %s)", lang, strings.Join(enabled, ", "))}
}

// Check applies the bounds Prepare starts with: the size, no NUL byte, and for TypeScript the
// nesting bounds and the TypeScript size (nesting.go). It runs no parser and costs one token
// scan at most, so a caller can refuse a hostile cell before it spends anything else on it.
func Check(code, language string) error {
	_, err := check(code, language)
	return err
}

// check is Check, also returning the measured nesting of a TypeScript cell.
func check(code, language string) (int, error) {
	if len(code) > MaxCodeBytes {
		return 0, &Error{Msg: fmt.Sprintf("exec: code is %d bytes; the limit is %d", len(code), MaxCodeBytes)}
	}
	if strings.IndexByte(code, 0) >= 0 {
		return 0, &Error{Msg: "exec: code contains a NUL byte"}
	}
	if language != TypeScript {
		return 0, nil
	}
	depth, _, err := measureNesting(code, MaxNesting, MaxScopeNesting)
	if err != nil {
		return 0, err
	}
	if len(code) > MaxTypeScriptBytes {
		return 0, &Error{Msg: fmt.Sprintf("exec: TypeScript code is %d bytes; the limit is %d: "+
			"send larger cells as JavaScript (up to %d bytes)", len(code), MaxTypeScriptBytes, MaxCodeBytes)}
	}
	return depth, nil
}

// Prepare validates and transforms a cell.
func Prepare(code, language string) (*Program, error) {
	depth, err := check(code, language)
	if err != nil {
		return nil, err
	}
	switch language {
	case JavaScript:
		js := wrapperHead + code + wrapperTail
		if err := checkModuleAccess(js, 1); err != nil {
			return nil, err
		}
		lines := strings.Count(code, "\n") + 1
		return &Program{Language: language, JS: js, Source: code, pos: func(line, col int) (int, int, bool) {
			switch {
			case line >= 2 && line <= lines+1:
				return line - 1, col, true
			case line == lines+2: // the wrapper's closing line: the code ended early
				return lines, lineLen(code) + 1, true
			}
			return 0, 0, false
		}}, nil
	case TypeScript:
		return prepareTypeScript(code, depth)
	default:
		return nil, &Error{Msg: fmt.Sprintf("exec: unknown language %q", language)}
	}
}

// lineLen is the length in UTF-16 units of the last line of s.
func lineLen(s string) int {
	last := s[strings.LastIndexByte(s, '\n')+1:]
	_, col := lineCol(last, len(last))
	return col - 1
}
