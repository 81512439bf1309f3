package source

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// FuzzPrepare: Prepare never panics; it returns either a program or an *Error (invalid_input).
// A JavaScript program is the code inside the wrapper, error positions lie inside the model's
// code, and mapped positions never leave it.
func FuzzPrepare(f *testing.F) {
	for _, tc := range syntaxCases {
		f.Add(tc.code, false)
		f.Add(tc.code, true)
	}
	for _, tc := range moduleRejects {
		f.Add(tc.code, false)
		f.Add(tc.code, true)
	}
	for _, tc := range moduleAllowed {
		f.Add(tc.code, false)
	}
	for _, tc := range parserUnknown {
		f.Add(tc.code, false)
	}
	for _, s := range []string{
		"", "})", "}); (async function () {", "/*", "`${", "'", "/", "/a/", "\\u", "\\u{", "import",
		"const x: number = 1\nreturn x", "enum E { A }\nreturn E.A", "let y: = 2", "if (x) {",
		"\r\n\r", "\u2028require\u2029", "😀", "\xff\xfe", "a\x00b",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, code string, ts bool) {
		lang := JavaScript
		if ts {
			lang = TypeScript
		}
		p, err := Prepare(code, lang)
		lines := strings.Count(code, "\n") + 1
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not a *source.Error", err, err)
			}
			if p != nil {
				t.Fatalf("both a program and an error")
			}
			if e.Line != 0 && (e.Line < 1 || e.Line > lines || e.Column < 1) {
				t.Fatalf("error position %d:%d outside the code (%d lines): %v", e.Line, e.Column, lines, e)
			}
			// X4: a module-access error in JavaScript points at the offending word itself.
			word := map[string]string{msgImport: "import", msgExport: "export", msgRequire: "require"}[e.Msg]
			if !ts && word != "" && e.Line > 0 {
				off, ok := offsetOf(code, e.Line, e.Column)
				if !ok || !identIs([]byte(identAt(code[off:])), word) {
					t.Fatalf("%v points at %q, not at %q", e, code[off:min(off+20, len(code))], word)
				}
			}
			return
		}
		if p == nil {
			t.Fatal("neither a program nor an error")
		}
		if p.Source != code || p.Language != lang {
			t.Fatalf("program does not record its source/language")
		}
		if !ts && p.JS != wrapperHead+code+wrapperTail {
			t.Fatalf("JS is not the wrapped code: %q", p.JS)
		}
		jsLines := strings.Count(p.JS, "\n") + 1
		for l := -1; l <= jsLines+1; l++ {
			for _, c := range []int{-1, 0, 1, 2, 5, 80} {
				if ml, mc, ok := p.MapPosition(l, c); ok && (ml < 1 || ml > lines || (c >= 1 && mc < 1)) {
					t.Fatalf("MapPosition(%d, %d) = %d:%d outside the code (%d lines)", l, c, ml, mc, lines)
				}
			}
		}
	})
}

// FuzzDecodeVLQ: decoding never panics and re-encoding what decoded gives the same values.
func FuzzDecodeVLQ(f *testing.F) {
	for _, s := range []string{"", "A", "AAAA", "iBAAkB", "2H", "+/////B", "+//////B", "g", "A!", "gggggggggg", "////////////A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vals, ok := decodeVLQ(s)
		if !ok {
			return
		}
		again, ok := decodeVLQ(encodeVLQ(vals))
		if !ok || len(again) != len(vals) {
			t.Fatalf("round trip of %v: %v %v", vals, again, ok)
		}
		for i := range vals {
			if again[i] != vals[i] {
				t.Fatalf("round trip of %v: %v", vals, again)
			}
		}
	})
}

// FuzzSourceMap: decoding any mappings and looking up any position never panics.
func FuzzSourceMap(f *testing.F) {
	f.Add(`{"mappings":"CAAC,iBAAkB;AACnB,QAAM,IAAY;AAClB,SAAO;AACP;"}`, 2, 3)
	f.Add(`{"mappings":"AAAA,IAAU;;EAEV,MACI"}`, 3, 1)
	f.Add(`{"mappings":";;;,,,;A;+//////B"}`, 1, -5)
	f.Add(`not json`, 1, 1)
	f.Fuzz(func(t *testing.T, raw string, line, col int) {
		sm := decodeSourceMap([]byte(raw))
		sm.lookup(line, col)
		for l := range len(sm) + 2 {
			sm.lookup(l, 1)
		}
	})
}

// offsetOf is the byte offset of a 1-based line and UTF-16 column in s.
func offsetOf(s string, line, col int) (int, bool) {
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(s[off:], '\n')
		if i < 0 {
			return 0, false
		}
		off += i + 1
	}
	for c := 1; c < col; {
		if off >= len(s) || s[off] == '\n' {
			return 0, false
		}
		r, size := utf8.DecodeRuneInString(s[off:])
		off += size
		c += max(utf16.RuneLen(r), 1) // an invalid byte counts as one unit, as in lineCol
	}
	return off, true
}

// identAt is the identifier (with escapes) at the start of s.
func identAt(s string) string {
	i := 0
	for i < len(s) {
		switch c := s[i]; {
		case c == '\\' && i+2 < len(s) && s[i+1] == 'u' && s[i+2] == '{':
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				return s[:i]
			}
			i += j + 1
		case c == '\\' && i+1 < len(s) && s[i+1] == 'u':
			i += min(6, len(s)-i)
		case c == '_' || c == '$' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			i++
		case c >= 0x80:
			r, size := utf8.DecodeRuneInString(s[i:])
			if !unicode.In(r, unicode.L, unicode.Nl, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc) && r != '\u200c' && r != '\u200d' {
				return s[:i]
			}
			i += size
		default:
			return s[:i]
		}
	}
	return s
}
