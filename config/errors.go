package config

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is one problem in a configuration file. It is data rather than a bare string so that a
// CLI can print it, an editor integration can jump to it, and tests can assert on each part.
type Error struct {
	// File is the name given to Parse or the path given to Load; it may be empty.
	File string
	// Line and Column locate the offending value (or key, for key problems), both 1-based.
	// Column counts characters, not bytes; a tab counts as one. Both are 0 when unknown.
	Line, Column int
	// Path names the offending setting, e.g. "tools.codeMode.timeoutMs" or
	// `mcp.servers["bad name"]`; it is empty for syntax errors.
	Path string
	// Msg says what is wrong, e.g. "70000 is out of range (100–60000)".
	Msg string

	offset int // byte offset, for sorting; -1 when unknown
}

// Error formats the problem like a compiler diagnostic, e.g.
// "codemode.json5:4:17: tools.codeMode.timeoutMs: 70000 is out of range (100–60000)".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	if e.Line > 0 {
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Column))
		b.WriteString(":")
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is what Parse and Load return for an invalid file: every problem found, sorted by
// position, so one edit-and-retry cycle can fix them all. It is never empty. A JSON5 syntax error
// stops parsing, so it is always reported alone.
//
// errors.As(err, &e) with e of type *Error yields the first problem.
type ErrorList []*Error

// Error prints one problem per line.
func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap exposes the individual problems to errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// sortErrors orders by position; problems without a position go last, and ties keep the order
// in which they were found.
func sortErrors(l ErrorList) {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i].offset, l[j].offset
		if (a < 0) != (b < 0) {
			return b < 0
		}
		return a < b
	})
}

// lineCol converts a byte offset into a 1-based line and character column. A leading UTF-8 byte
// order mark is not counted as a column.
func lineCol(data []byte, off int) (line, col int) {
	if off < 0 {
		return 0, 0
	}
	off = min(off, len(data))
	before := data[:off]
	line = 1 + strings.Count(string(before), "\n")
	start := strings.LastIndexByte(string(before), '\n') + 1
	col = 1 + utf8.RuneCount(before[start:])
	if line == 1 && hasBOM(data) && off >= len(bom) {
		col--
	}
	return line, col
}

var bom = []byte{0xEF, 0xBB, 0xBF}

func hasBOM(data []byte) bool {
	return len(data) >= len(bom) && string(data[:len(bom)]) == string(bom)
}
