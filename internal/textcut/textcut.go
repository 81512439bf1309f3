// Package textcut cuts text to a byte bound without splitting a UTF-8 sequence. Results and
// messages that carry text from hostile sources (commit messages, file lines, names) are
// bounded by bytes; a cut inside a rune would leave invalid UTF-8 at the end.
package textcut

import "unicode/utf8"

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
