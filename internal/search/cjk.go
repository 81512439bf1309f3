package search

import (
	"strings"
	"unicode/utf8"

	"github.com/codemode-go/codemode/internal/search/cedict"
)

// Chinese and Japanese with a dictionary (issue 23, round 2; RATIONALE.md "Why a bilingual
// dictionary, and what it gained"): with the CC-CEDICT index (package cedict) a run of Han/Kana
// text is
//
//   - normalised character by character to simplified forms (數據庫 → 数据库, 検索 → 检索), so
//     traditional Chinese and Japanese kanji meet simplified Chinese;
//   - cut into character bigrams as without a dictionary, plus the dictionary words of three or
//     more characters found by forward longest match (数据库: the bigrams 数据, 据库 and the word
//     数据库; a two-character word is one of the bigrams already);
//   - translated: each dictionary word found (and each single character that is a word on its
//     own and not a function character) gives its English words, which the index keeps as
//     translated terms (fTrans, "~term") and a query uses as lower-weighted alternatives.
//
// Without the dictionary (a `go get` build before its download) text is analysed as bigrams only.

// dictionary is the CC-CEDICT index NewIndex uses (nil: none); tests replace it.
var dictionary = cedict.Default

// cjkStop are Chinese function characters: they are not translated on their own.
var cjkStop = map[rune]bool{}

func init() {
	for _, r := range "的了是在和与或及等把被将对从到以为中上下个这那也就都而之其并且但若如则即于由向给让" +
		"我你他她它们您啊吗呢吧呀哦么什怎哪谁每各该此些所已还再又很更最请要会能可想需用" {
		cjkStop[r] = true
	}
}

// cjkCtx carries the dictionary through the analyzer; seg, when set, is told each dictionary
// segment (its key term and headword index) for translation.
type cjkCtx struct {
	d    *cedict.Dict
	seg  func(key string, head int)
	loan func(word string) // each katakana or hangul word (translit.go)
}

// appendCJK appends the terms of one spaceless Han/Kana word.
func appendCJK(out []string, w string, c *cjkCtx) []string {
	if !knobs.noKanaSplit && hasKana(w) {
		// Japanese: kanji, katakana and hiragana runs are analysed apart. Hiragana is mostly
		// grammar (particles, verb endings: を, して, ください) and is dropped; a katakana run is
		// one word (a loanword), kept whole and matched by sound (translit.go); kanji runs go on
		// as Chinese text does.
		start, cls := 0, kanaClass(first(w))
		for i, r := range w {
			if k := kanaClass(r); k != cls {
				out = appendKanaRun(out, w[start:i], cls, c)
				start, cls = i, k
			}
		}
		return appendKanaRun(out, w[start:], cls, c)
	}
	return appendHan(out, w, c)
}

const (
	kanaHan = iota
	kanaHira
	kanaKata
)

func kanaClass(r rune) int {
	switch {
	case isKatakana(r):
		return kanaKata
	case r >= 0x3041 && r <= 0x309F:
		return kanaHira
	}
	return kanaHan
}

func hasKana(w string) bool {
	for _, r := range w {
		if kanaClass(r) != kanaHan {
			return true
		}
	}
	return false
}

func appendKanaRun(out []string, run string, cls int, c *cjkCtx) []string {
	switch cls {
	case kanaHira:
		return out
	case kanaKata:
		if c != nil && c.loan != nil {
			c.loan(run)
		}
		if utf8.RuneCountInString(run) < 2 {
			return out
		}
		return append(out, run)
	}
	return appendHan(out, run, c)
}

// appendHan appends the terms of a run of Han characters (or, with knobs.noKanaSplit, any
// Han/Kana run).
func appendHan(out []string, w string, c *cjkCtx) []string {
	if knobs.noKanaSplit && c != nil && c.loan != nil {
		loanRuns(w, c.loan)
	}
	if c == nil || c.d == nil || knobs.noCedict {
		return appendBigrams(out, w)
	}
	d := c.d
	for _, r := range w {
		if d.Variant(r) != r {
			var b strings.Builder
			b.Grow(len(w))
			for _, r := range w {
				b.WriteRune(d.Variant(r))
			}
			w = b.String()
			break
		}
	}
	out = appendBigrams(out, w)
	// Forward longest match over the headwords, on the string's bytes (no allocation per try).
	var obuf [129]int32
	off := obuf[:0]
	for i := range w {
		off = append(off, int32(i))
	}
	off = append(off, int32(len(w)))
	nr := len(off) - 1
	for i := 0; i < nr; {
		found, head := 0, -1
		if i+1 < nr {
			r1, _ := utf8.DecodeRuneInString(w[off[i]:])
			r2, _ := utf8.DecodeRuneInString(w[off[i+1]:])
			for n := min(d.MaxLen2(r1, r2), nr-i); n >= 2; n-- {
				if h := d.Find(w[off[i]:off[i+n]]); h >= 0 {
					found, head = n, h
					break
				}
			}
		}
		if found == 0 {
			if h := d.Find(w[off[i]:off[i+1]]); h >= 0 {
				found, head = 1, h
			}
		}
		if found == 0 {
			i++
			continue
		}
		key := w[off[i]:off[i+found]]
		if found >= 3 && !knobs.noSegWords {
			out = append(out, key)
		}
		// A character inside a longer run that is no word with its neighbours is translated
		// only when it is the whole run: 作 of 作成 is not "worker" (round two, dev).
		if c.seg != nil && !knobs.noTranslate && (found > 1 || nr == 1 && !cjkStop[first(key)]) {
			c.seg(key, head)
		}
		i += found
	}
	return out
}

// translations turns a headword's English words into index terms (the analyzer's: stemmed,
// stopwords dropped, phrases such as "log in" folded), deduplicated; cache (per index build or
// per query) keeps each headword's.
func translations(d *cedict.Dict, head int, cache map[int][]string) []string {
	if t, ok := cache[head]; ok {
		return t
	}
	var out []string
	for _, t := range analyzeWords(d.English(head, nil), nil) {
		dup := false
		for _, x := range out {
			if x == t {
				dup = true
				break
			}
		}
		if !dup && utf8.RuneCountInString(t) > 1 {
			out = append(out, t)
		}
	}
	if cache != nil {
		cache[head] = out
	}
	return out
}
