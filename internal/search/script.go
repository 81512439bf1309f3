package search

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// This file is the Unicode side of the analyzer (issue 23 item 1): width and
// compatibility normalisation, diacritic folding for Latin letters, and
// character bigrams for scripts written without spaces between words.
//
// Choices (RATIONALE.md "Why character bigrams for CJK?"):
//   - NFKC first, so full-width letters and punctuation (ＡＢＣ，。) become what
//     they mean, and compatibility ideographs meet their canonical form.
//   - Combining marks are dropped only after a Latin letter (é → e, ü → u):
//     folding Cyrillic й or Japanese voiced kana (が → か) would merge words.
//   - Han, Hiragana and Katakana form one class, Hangul, Thai, Lao, Khmer and
//     Myanmar one class each; a run of one class becomes overlapping bigrams
//     (数据库 → 数据, 据库), a run of one character stays a unigram. Bigrams
//     need no dictionary, are language-neutral across Chinese and Japanese, and
//     are what Lucene's CJK analyzer does; a segmenter would need a dictionary
//     per language and mis-segments the product names tool descriptions are
//     full of.
//   - English stemming applies only to words that were plain ASCII: a folded
//     word (café, größe) is not English and keeps its form.

// Script classes of letters that are written without spaces.
const (
	classSpaced = iota // Latin, Cyrillic, Greek, Arabic, Devanagari…: words are space-separated
	classCJK           // Han, Hiragana, Katakana (Chinese, Japanese)
	classHangul
	classThai
	classLao
	classKhmer
	classMyanmar
)

func scriptClass(r rune) int {
	if r < 0x0E00 {
		return classSpaced
	}
	switch {
	case unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || r == 0x30FC:
		return classCJK
	case unicode.Is(unicode.Hangul, r):
		return classHangul
	case unicode.Is(unicode.Thai, r):
		return classThai
	case unicode.Is(unicode.Lao, r):
		return classLao
	case unicode.Is(unicode.Khmer, r):
		return classKhmer
	case unicode.Is(unicode.Myanmar, r):
		return classMyanmar
	}
	return classSpaced
}

// isASCII reports whether s is plain ASCII (the fast path of every step here).
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// normalizeText applies NFKC to non-ASCII text.
func normalizeText(s string) string {
	if isASCII(s) || knobs.noUnicode {
		return s
	}
	return norm.NFKC.String(s)
}

// foldWord removes combining marks that follow a Latin letter (after NFD) and
// recomposes: "émoji" → "emoji", "größe" → "große". It reports whether the word
// changed.
func foldWord(w string) (string, bool) {
	if isASCII(w) || knobs.noUnicode {
		return w, false
	}
	d := norm.NFD.String(w)
	var b strings.Builder
	b.Grow(len(d))
	latin, changed := false, false
	for _, r := range d {
		if unicode.Is(unicode.Mn, r) {
			if latin {
				changed = true
				continue
			}
		} else {
			latin = unicode.Is(unicode.Latin, r)
		}
		b.WriteRune(r)
	}
	if !changed {
		return w, false
	}
	return norm.NFC.String(b.String()), true
}

// spaceless reports whether the word is written in a script without spaces
// (its first rune decides: splitWords never mixes classes in one word).
func spaceless(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return r >= 0x0E00 && scriptClass(r) != classSpaced
}

// appendBigrams appends the overlapping character bigrams of w (one class), or
// w itself when it is a single character.
func appendBigrams(out []string, w string) []string {
	if knobs.noUnicode {
		return append(out, w)
	}
	first := true
	prevStart, prevEnd := 0, 0
	for i, r := range w {
		end := i + utf8.RuneLen(r)
		if !first {
			out = append(out, w[prevStart:end])
		}
		first = false
		prevStart, prevEnd = i, end
	}
	if prevEnd == len(w) && utf8.RuneCountInString(w) == 1 {
		out = append(out, w)
	}
	return out
}
