package wordnet

import (
	"encoding/binary"
	"sort"
	"strings"
)

// Lexicon is a parsed index: immutable, safe for concurrent use. Words are
// kept in one string with offsets, relations as the encoded bytes with
// offsets, so a lexicon of ~60,000 words costs a few hundred kilobytes beyond
// its bytes and lookups are a binary search.
type Lexicon struct {
	text  string   // all words, concatenated
	woff  []uint32 // word i is text[woff[i]:woff[i+1]]
	rel   []byte   // encoded relations
	roff  []uint32 // word i's relations start at rel[roff[i]]
	bytes int
}

// Related is one word related to a looked-up lemma.
type Related struct {
	Word string
	Kind int // Synonym, Derived or Broader
}

// Parse reads an index made by Derive. It checks the structure fully (a
// cached or embedded file was verified by sha256 already; this is the second
// line against a corrupt one).
func Parse(b []byte) (*Lexicon, error) {
	if len(b) < len(magic) || string(b[:len(magic)]) != magic {
		return nil, errCorrupt
	}
	p := b[len(magic):]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	n, ok := next()
	if !ok || n > 1<<22 {
		return nil, errCorrupt
	}
	lx := &Lexicon{woff: make([]uint32, 0, n+1), roff: make([]uint32, 0, n), bytes: len(b)}
	var sb strings.Builder
	prev := ""
	for i := uint64(0); i < n; i++ {
		s, ok1 := next()
		l, ok2 := next()
		if !ok1 || !ok2 || s > uint64(len(prev)) || l > maxLemma || l > uint64(len(p)) {
			return nil, errCorrupt
		}
		w := prev[:s] + string(p[:l])
		p = p[l:]
		if i > 0 && w <= prev {
			return nil, errCorrupt
		}
		lx.woff = append(lx.woff, uint32(sb.Len()))
		sb.WriteString(w)
		prev = w
	}
	lx.woff = append(lx.woff, uint32(sb.Len()))
	lx.text = sb.String()
	lx.rel = p
	at := 0
	for i := uint64(0); i < n; i++ {
		lx.roff = append(lx.roff, uint32(at))
		c, m := binary.Uvarint(p[at:])
		if m <= 0 || c > n {
			return nil, errCorrupt
		}
		at += m
		for j := uint64(0); j < c; j++ {
			v, m := binary.Uvarint(p[at:])
			if m <= 0 || v>>2 >= n || v&3 >= numKinds {
				return nil, errCorrupt
			}
			at += m
		}
	}
	if at != len(p) {
		return nil, errCorrupt
	}
	return lx, nil
}

// Len is the number of words.
func (lx *Lexicon) Len() int { return len(lx.roff) }

// Size is the encoded size in bytes.
func (lx *Lexicon) Size() int { return lx.bytes }

func (lx *Lexicon) word(i int) string { return lx.text[lx.woff[i]:lx.woff[i+1]] }

func (lx *Lexicon) find(w string) int {
	i := sort.Search(lx.Len(), func(i int) bool { return lx.word(i) >= w })
	if i < lx.Len() && lx.word(i) == w {
		return i
	}
	return -1
}

// Has reports whether w is a lemma of the lexicon.
func (lx *Lexicon) Has(w string) bool { return lx.find(w) >= 0 }

// Lookup appends the words related to lemma w (exactly as listed) to out.
func (lx *Lexicon) Lookup(w string, out []Related) []Related {
	i := lx.find(w)
	if i < 0 {
		return out
	}
	p := lx.rel[lx.roff[i]:]
	c, m := binary.Uvarint(p)
	p = p[m:]
	for j := uint64(0); j < c; j++ {
		v, m := binary.Uvarint(p)
		p = p[m:]
		out = append(out, Related{Word: lx.word(int(v >> 2)), Kind: int(v & 3)})
	}
	return out
}

// detachment are WordNet's morphological rules (morphy's "detachment" lists,
// all parts of speech together): suffix → replacement.
var detachment = [][2]string{
	{"s", ""}, {"ses", "s"}, {"xes", "x"}, {"zes", "z"}, {"ches", "ch"}, {"shes", "sh"},
	{"men", "man"}, {"ies", "y"}, {"es", "e"}, {"es", ""}, {"ed", "e"}, {"ed", ""},
	{"ing", "e"}, {"ing", ""}, {"er", ""}, {"est", ""}, {"er", "e"}, {"est", "e"},
}

// Lemmas appends the lemmas of the inflected word w (lowercase) that the
// lexicon knows: w itself, else its base forms by WordNet's detachment rules
// ("files" → file, "created" → create, "running" → run via "runn"→ no, "run"
// by undoubling).
func (lx *Lexicon) Lemmas(w string, out []string) []string {
	if lx.Has(w) {
		return append(out, w)
	}
	for _, d := range detachment {
		if !strings.HasSuffix(w, d[0]) || len(w)-len(d[0]) < 2 {
			continue
		}
		base := w[:len(w)-len(d[0])] + d[1]
		if lx.Has(base) && !contains(out, base) {
			out = append(out, base)
		}
		// Doubled consonants: "running" → "runn" → "run", "stopped" → "stop".
		if d[1] == "" && len(base) >= 3 && base[len(base)-1] == base[len(base)-2] {
			if b := base[:len(base)-1]; lx.Has(b) && !contains(out, b) {
				out = append(out, b)
			}
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
