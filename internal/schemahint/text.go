package schemahint

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/codemode-go/codemode/internal/jsname"
)

// This file holds everything that turns untrusted text (property names, enum
// values, descriptions) into TypeScript source that cannot break out of the
// token, declaration or comment it is placed in.

const hexDigits = "0123456789abcdef"

func toValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// appendQuoted appends s as a double-quoted string literal that is valid both
// as JSON and as TypeScript. Quotes, backslashes, every control and format
// character (bidi overrides, zero-width characters), line and paragraph
// separators and any other non-graphic rune are escaped, so the literal is
// always one visible line. Invalid UTF-8 becomes U+FFFD.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				b = append(b, '\\', '"')
			case c == '\\':
				b = append(b, '\\', '\\')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case !unicode.IsGraphic(r):
			b = appendUnicodeEscape(b, r)
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

func appendUnicodeEscape(b []byte, r rune) []byte {
	if r > 0xffff {
		r -= 0x10000
		b = appendU16(b, 0xd800+(r>>10))
		return appendU16(b, 0xdc00+(r&0x3ff))
	}
	return appendU16(b, r)
}

func appendU16(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

func quote(s string) string { return string(appendQuoted(nil, s)) }

// reservedWords cannot name a declared function or namespace.
var reservedWords = map[string]bool{
	"break": true, "case": true, "catch": true, "class": true, "const": true, "continue": true,
	"debugger": true, "default": true, "delete": true, "do": true, "else": true, "enum": true,
	"export": true, "extends": true, "false": true, "finally": true, "for": true, "function": true,
	"if": true, "import": true, "in": true, "instanceof": true, "new": true, "null": true,
	"return": true, "super": true, "switch": true, "this": true, "throw": true, "true": true,
	"try": true, "typeof": true, "var": true, "void": true, "while": true, "with": true,
	"yield": true, "let": true, "static": true, "implements": true, "interface": true,
	"package": true, "private": true, "protected": true, "public": true, "await": true,
	"eval": true, "arguments": true,
}

// IsIdentifier reports whether name can be declared as a function or namespace
// in the rendered declarations: an ASCII JavaScript identifier that is not a
// reserved word. Callers that map MCP server and tool names to JS names
// (MCP.<server>.<tool>) should only produce names for which this holds.
func IsIdentifier(name string) bool {
	return jsname.IsIdent(name) && !reservedWords[name]
}

// declName returns name when it is declarable, else a deterministic
// declarable stand-in (invalid bytes become '_', a '_' is added before a
// leading digit or after a reserved word). ok reports whether name was kept.
func declName(name string) (string, bool) {
	if IsIdentifier(name) {
		return name, true
	}
	b := make([]byte, 0, len(name)+1)
	for i := 0; i < len(name) && len(b) < 64; i++ {
		c := name[i]
		if c == '_' || c == '$' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') {
			b = append(b, c)
		} else {
			b = append(b, '_')
		}
	}
	if len(b) == 0 || ('0' <= b[0] && b[0] <= '9') {
		b = append([]byte{'_'}, b...)
	}
	if reservedWords[string(b)] {
		b = append(b, '_')
	}
	return string(b), false
}

// cleanDoc turns untrusted prose into text that is safe inside a JSDoc block
// comment:
//   - invalid UTF-8, control characters and other non-graphic runes (bidi
//     overrides, zero-width characters) are removed; tabs become spaces;
//     CR, CRLF, NEL, U+2028 and U+2029 become newlines (spaces if oneLine);
//   - trailing spaces are trimmed, runs of blank lines collapse to one,
//     leading and trailing blank lines go (oneLine collapses all whitespace);
//   - the text is cut to maxRunes runes, preferably at a space, ending in "…";
//   - comment delimiters are broken up: a '/' after '*' becomes "\/" and a
//     '*' after '/' becomes "\*", so the result contains neither "*/" nor "/*";
//   - a line starting with '@' gets a backslash ("\@") so prose cannot add
//     JSDoc tags such as @param.
func cleanDoc(s string, maxRunes int, oneLine bool) string {
	if s == "" || maxRunes <= 0 {
		return ""
	}
	if plainDoc(s, maxRunes, oneLine) {
		return s
	}
	// Pass 1: normalise characters and whitespace, count runes, stop early.
	out := make([]byte, 0, min(len(s), 4*maxRunes+8))
	runes := 0
	pendingNL := 0 // newlines seen but not yet written
	pendingSP := false
	truncated := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '\r':
			if i < len(s) && s[i] == '\n' {
				i++
			}
			r = '\n'
		case r == 0x85 || r == 0x2028 || r == 0x2029:
			r = '\n'
		case r == '\t':
			r = ' '
		case r == utf8.RuneError && size == 1:
			continue
		}
		if oneLine && r == '\n' {
			r = ' '
		}
		if r == '\n' {
			pendingNL++
			pendingSP = false
			continue
		}
		if r == ' ' || (unicode.IsSpace(r) && r != '\n') {
			if oneLine || len(out) > 0 && pendingNL == 0 {
				pendingSP = true
			}
			continue
		}
		if !unicode.IsGraphic(r) {
			continue
		}
		// A visible rune: flush pending whitespace.
		if len(out) > 0 {
			if pendingNL > 0 {
				out = append(out, '\n')
				runes++
				if pendingNL > 1 {
					out = append(out, '\n')
					runes++
				}
			} else if pendingSP {
				out = append(out, ' ')
				runes++
			}
		}
		pendingNL, pendingSP = 0, false
		if runes >= maxRunes {
			truncated = true
			break
		}
		out = utf8.AppendRune(out, r)
		runes++
	}
	text := string(out)
	if truncated {
		text = cutText(text, maxRunes-1) + "…"
	}
	return escapeComment(text)
}

// plainDoc reports whether cleanDoc would return s unchanged: short
// printable ASCII with single spaces, single newlines (multi-line only), no
// comment delimiter and no '@' at a line start. Most descriptions are.
func plainDoc(s string, maxRunes int, oneLine bool) bool {
	if len(s) > maxRunes {
		return false
	}
	prev := byte('\n') // the start counts as a line start
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plainByte[c] {
			prev = c
			continue
		}
		switch {
		case c == '\n':
			if oneLine || prev == '\n' || prev == ' ' {
				return false
			}
		case c == ' ':
			if prev == ' ' || prev == '\n' {
				return false
			}
		case c == '@':
			if prev == '\n' {
				return false
			}
		case c == '/':
			if prev == '*' || i+1 < len(s) && s[i+1] == '*' {
				return false
			}
		default:
			return false
		}
		prev = c
	}
	return prev != ' ' && prev != '\n'
}

// plainByte marks printable ASCII that needs no attention in plainDoc.
var plainByte = func() (t [256]bool) {
	for c := 0x21; c < 0x7f; c++ {
		t[c] = c != '@' && c != '/'
	}
	return t
}()

// appendCommentSafe appends mid-line text to a comment, breaking "*/" and
// "/*" (also across the boundary with what b already holds).
func appendCommentSafe[T string | []byte](b []byte, s T) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		last := byte(0)
		if len(b) > 0 {
			last = b[len(b)-1]
		}
		switch {
		case c == '/' && last == '*':
			b = append(b, '\\', '/')
		case c == '*' && last == '/':
			b = append(b, '\\', '*')
		default:
			b = append(b, c)
		}
	}
	return b
}

// cutText shortens s to at most n runes, at a space when one is close to the end.
func cutText(s string, n int) string {
	if n <= 0 {
		return ""
	}
	end, count := 0, 0
	for i := range s {
		if count == n {
			end = i
			break
		}
		count++
		end = len(s)
	}
	cut := s[:end]
	if end < len(s) {
		if sp := strings.LastIndexAny(cut, " \n"); sp > 0 && sp >= len(cut)*3/4 {
			cut = cut[:sp]
		}
	}
	return strings.TrimRight(cut, " \n")
}

// escapeComment breaks "*/" and "/*" and escapes '@' at the start of a line.
func escapeComment(s string) string {
	if !strings.ContainsAny(s, "/@") {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		last := byte(0)
		if len(b) > 0 {
			last = b[len(b)-1]
		}
		switch {
		case c == '/' && last == '*':
			b = append(b, '\\', '/')
		case c == '*' && last == '/':
			b = append(b, '\\', '*')
		case c == '@' && (i == 0 || s[i-1] == '\n'):
			b = append(b, '\\', '@')
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// commentLine makes our own short text (already mostly safe) safe for a
// single-line comment of either style.
func commentLine(s string) string {
	return cleanDoc(s, 1<<20, true)
}
