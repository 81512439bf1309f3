package search

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Loanwords (issue 23, round 2): Japanese writes English loanwords in katakana (ファイル file,
// アップロード upload, スクレイピング scraping) and Korean in hangul (파일 file, 브라우저 browser,
// 리퀘스트 request); no dictionary is needed to meet them, only their sound. A katakana or
// hangul word is romanised and reduced to its consonant skeleton (vowels dropped, doubled
// consonants collapsed, l and r merged, f with p, v with b, z with s…); so is every English word
// of the catalog, with English spelling rules (ck → k, soft c → s, soft g → j, r after a vowel
// silent as in Japanese and Korean renderings). A loanword whose skeleton equals a catalog
// word's meets that word's term as a translation: スクレイピング → s k r p n g ← scraping.
// A word that starts with a vowel keeps a mark for it (upload: _p r d, login: r g n, align:
// _r g n). Skeletons of two consonants are ambiguous (f-r: file, fill, fire…), so they count only
// when at most two catalog words share them; one consonant never counts. Candidates are the
// catalog's words in alphabetical order (the same on the tool and the query side).

// kana romanises katakana (Hepburn, with the small kana of loanwords).
var kana = map[rune]string{}

func init() {
	rows := []struct{ chars, roman string }{
		{"アイウエオ", "a i u e o"}, {"カキクケコ", "ka ki ku ke ko"}, {"ガギグゲゴ", "ga gi gu ge go"},
		{"サシスセソ", "sa shi su se so"}, {"ザジズゼゾ", "za ji zu ze zo"}, {"タチツテト", "ta chi tsu te to"},
		{"ダヂヅデド", "da ji zu de do"}, {"ナニヌネノ", "na ni nu ne no"}, {"ハヒフヘホ", "ha hi fu he ho"},
		{"バビブベボ", "ba bi bu be bo"}, {"パピプペポ", "pa pi pu pe po"}, {"マミムメモ", "ma mi mu me mo"},
		{"ヤユヨ", "ya yu yo"}, {"ラリルレロ", "ra ri ru re ro"}, {"ワヲン", "wa o n"},
		{"ァィゥェォ", "a i u e o"}, {"ャュョ", "ya yu yo"}, {"ヴ", "vu"},
	}
	for _, r := range rows {
		rs := []rune(r.chars)
		for i, s := range strings.Fields(r.roman) {
			kana[rs[i]] = s
		}
	}
}

func isKatakana(r rune) bool { return r >= 0x30A1 && r <= 0x30FA || r == 0x30FC }

func isHangul(r rune) bool { return r >= 0xAC00 && r <= 0xD7A3 }

// romanKatakana romanises a katakana word: a small kana replaces the vowel before it
// (フ + ァ → fa, キ + ャ → kya), ッ doubles the next consonant (collapsed later anyway), ー
// lengthens (dropped with the vowels).
func romanKatakana(w string) string {
	var b strings.Builder
	var prev rune
	for _, r := range w {
		if r == 'ー' || r == 'ッ' {
			prev = r
			continue
		}
		s, ok := kana[r]
		if !ok {
			return ""
		}
		if strings.ContainsRune("ァィゥェォャュョ", r) && b.Len() > 0 {
			cur := b.String()
			if cur == "u" || strings.HasSuffix(cur, "u") && prev == 'ウ' {
				cur = strings.TrimSuffix(cur, "u") + "w" // ウィ wi, ウェ we, ウォ wo
			}
			cur = strings.TrimRight(cur, "aeiou")
			if strings.HasSuffix(cur, "y") && strings.ContainsRune("ァィゥェォ", r) {
				cur = strings.TrimSuffix(cur, "y")
			}
			if s[0] == 'y' && (strings.HasSuffix(cur, "sh") || strings.HasSuffix(cur, "ch") || strings.HasSuffix(cur, "j")) {
				s = s[1:]
			}
			b.Reset()
			b.WriteString(cur)
		}
		b.WriteString(s)
		prev = r
	}
	return b.String()
}

// hangul romanisation (Revised Romanisation, simplified for skeletons).
var (
	hInitial = strings.Fields("g kk n d tt r m b pp s ss - j jj ch k t p h")
	hMedial  = strings.Fields("a ae ya yae eo e yeo ye o wa wae oe yo u wo we wi yu eu ui i")
	hFinal   = append([]string{""}, strings.Fields("k k k n n n t l l l l l l l l m p p t t ng t t k t p t")...)
)

func romanHangul(w string) string {
	var b strings.Builder
	for _, r := range w {
		if !isHangul(r) {
			return ""
		}
		c := int(r - 0xAC00)
		i, m, f := c/(21*28), c%(21*28)/28, c%28
		if in := hInitial[i]; in != "-" {
			b.WriteString(in)
		}
		b.WriteString(hMedial[m])
		b.WriteString(hFinal[f])
	}
	return b.String()
}

// skeleton reduces romanised foreign text (english false) or an English word (english true) to
// consonant classes.
func skeleton(s string, english bool) string {
	var out []byte
	if s != "" && strings.IndexByte("aeiou", s[0]) >= 0 {
		out = append(out, '_') // a word that starts with a vowel: upload, object, アップロード
	}
	add := func(c byte) {
		if len(out) == 0 || out[len(out)-1] != c {
			out = append(out, c)
		}
	}
	vowel := func(c byte) bool { return strings.IndexByte("aeiouy", c) >= 0 }
	for i := 0; i < len(s); i++ {
		c := s[i]
		var next byte
		if i+1 < len(s) {
			next = s[i+1]
		}
		switch {
		case vowel(c) && !(c == 'y' && english && i == 0):
			continue
		case c == 'c' && next == 'h', c == 's' && next == 'h', c == 't' && next == 'h':
			if c == 'c' {
				add('C')
			} else {
				add('s')
			}
			i++
		case c == 'c' && next == 'k':
			add('k')
			i++
		case c == 'c':
			if english && (next == 'e' || next == 'i' || next == 'y') {
				add('s')
			} else {
				add('k')
			}
		case c == 'q':
			add('k')
		case c == 'x':
			add('k')
			add('s')
		case c == 'p' && next == 'h':
			add('p')
			i++
		case c == 'g' && english && (next == 'e' || next == 'i'):
			add('s') // soft g, in the j class (merged with s, below)
		case c == 'g' && english && next == 'h':
			i++ // silent
		case c == 'r' && english && i > 0 && vowel(s[i-1]) && !vowel(next):
			// non-rhotic: "server" → saabaa
		case c == 'l' || c == 'r':
			add('r')
		case c == 'f':
			add('p')
		case c == 'v':
			add('b')
		case c == 'z' || c == 'j':
			add('s') // Korean writes z as ㅈ (j); Japanese soft g as ジ (ji)
		case c == 'k' && next == 'k', c == 't' && next == 't', c == 'p' && next == 'p', c == 's' && next == 's', c == 'j' && next == 'j':
			add(c)
			i++
		case c == 'w' && english && i > 0 && vowel(s[i-1]):
			// "view", "new": a vowel glide
		case c == 'w' && !english && i > 0 && (s[i-1] == 'k' || s[i-1] == 'g'):
			// Korean 퀘 kwe, 쿼 kwo for English qu: k, as English q is
		case c == 'h' && english && i > 0:
			// silent after a consonant or vowel in loan renderings (github → gitto-habu keeps h at a word start only)
		default:
			if c >= 'a' && c <= 'z' {
				add(c)
			}
		}
	}
	return string(out)
}

// loanSkeleton is the skeleton of a katakana or hangul word ("" when it is neither or too short).
func loanSkeleton(w string) string {
	if utf8.RuneCountInString(w) < 2 {
		return ""
	}
	r, _ := utf8.DecodeRuneInString(w)
	var roman string
	switch {
	case isKatakana(r):
		roman = romanKatakana(w)
	case isHangul(r):
		roman = romanHangul(trimHangulEnding(w))
	}
	if roman == "" {
		return ""
	}
	return skeleton(roman, false)
}

// loanwords maps catalog-word skeletons to the terms of the words that have them (built once
// per index, on the first loanword).
func (ix *Index) loanTerms(sk string) []string {
	if len(strings.TrimPrefix(sk, "_")) < 2 || knobs.noLoanwords {
		return nil
	}
	ix.loanOnce.Do(func() {
		ix.loans = map[string][]string{}
		words := make([]string, 0, len(ix.vocab))
		for w := range ix.vocab {
			words = append(words, w)
		}
		sort.Strings(words) // deterministic
		for _, w := range words {
			if len(w) < 3 {
				continue
			}
			k := skeleton(w, true)
			t := stem(w)
			if len(k) < 2 || len(ix.loans[k]) >= 4 {
				continue
			}
			dup := false
			for _, x := range ix.loans[k] {
				dup = dup || x == t
			}
			if !dup {
				ix.loans[k] = append(ix.loans[k], t)
			}
		}
	})
	ts := ix.loans[sk]
	if len(strings.TrimPrefix(sk, "_")) <= 2 && len(ts) > 2 {
		return nil
	}
	return ts[:min(len(ts), 4)]
}

// hangulEndings are Korean particles and verb endings that follow a loanword (파일을 "the file",
// 클릭해 "click", 브라우저로 "with the browser"): the longest one is cut before the skeleton.
var hangulEndings = []string{"에서", "으로", "하고", "해서", "하여", "해", "을", "를", "이", "가", "은", "는", "에", "로", "의", "도", "와", "과", "한", "할", "된"}

func trimHangulEnding(w string) string {
	best := ""
	for _, e := range hangulEndings {
		if len(e) > len(best) && strings.HasSuffix(w, e) && utf8.RuneCountInString(w)-utf8.RuneCountInString(e) >= 2 {
			best = e
		}
	}
	return strings.TrimSuffix(w, best)
}

// loanRuns calls fn for each katakana run (of two or more characters) in a Han/Kana word.
func loanRuns(w string, fn func(string)) {
	start := -1
	for i, r := range w {
		if isKatakana(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			fn(w[start:i])
			start = -1
		}
	}
	if start >= 0 {
		fn(w[start:])
	}
}
