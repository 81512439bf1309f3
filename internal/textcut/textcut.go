// Package textcut cuts text to a byte bound without splitting a UTF-8 sequence, and makes it
// one inert line for display. Results and messages that carry text from hostile sources (commit
// messages, file lines, names, a model's labels) are bounded by bytes; a cut inside a rune would
// leave invalid UTF-8 at the end.
package textcut

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Prefix returns s cut to at most n bytes: when s is longer, the cut backs off from byte n to
// the start of the rune there, so no rune is split. In invalid UTF-8, stray continuation
// bytes are backed over together with the rune before them.
func Prefix[T ~string | ~[]byte](s T, n int) T {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Ellipsis returns s cut to at most n bytes on a rune boundary, with "…" after a cut.
func Ellipsis(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + "…"
}

// Line makes hostile text fit for one line of a terminal, a progress message or an audit
// record: tabs and line breaks become spaces, other control and format characters (escape
// sequences, bidi overrides) and invalid bytes are dropped, runs of white space collapse to one
// space, and the result is cut like Ellipsis.
func Line(s string, n int) string {
	s = strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError:
			return -1
		}
		return r
	}, s)), " ")
	return Ellipsis(s, n)
}
