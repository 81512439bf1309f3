package search

import (
	"github.com/codemode-go/codemode/internal/search/wordnet"
)

// WordNet expansion (issue 23 item 2): each query word is widened with the
// words WordNet relates to its lemma — synonyms, derivationally related forms
// and direct hypernyms of its most frequent senses — each weighted below the
// literal term, and, like the hand-written synonyms, a tool keeps only the
// best of a query word and its expansions (expansions never stack). Only the
// query is expanded: the index stays literal, so a tool's rank never depends
// on what WordNet thinks its words mean.

// wordnetWeight is how much an expansion counts relative to the literal query
// term, by relation (chosen on the dev split; RATIONALE.md has the figures).
var wordnetWeight = [3]float64{wordnet.Synonym: 0.3, wordnet.Derived: 0.5, wordnet.Broader: 0}

// wordnetAbsentFactor multiplies the weights when the catalog never uses the
// query's word (then the expansions are the only way in), up to wordnetMax.
const (
	wordnetAbsentFactor = 2.0
	wordnetMax          = 0.8
)

// maxExpansions bounds the expansion terms of one query word (query cost).
const maxExpansions = 32

type expansion struct {
	term string
	w    float64
}

// lexicon is the knowledge base the index uses at query time (nil: none).
var lexicon = wordnet.Default

// expandWordNet fills s.exp: query term → its WordNet expansions that the
// index contains.
func (ix *Index) expandWordNet(s *scratch) {
	clear(s.exp)
	if knobs.noWordNet {
		return
	}
	lx := lexicon()
	if lx == nil {
		return
	}
	for _, w := range s.words {
		if len(w) < 3 || !isASCIIAlpha(w) || stopwords[w] {
			continue
		}
		t := stem(w)
		if _, done := s.exp[t]; done {
			continue
		}
		var list []expansion
		s.lemmas = lx.Lemmas(w, s.lemmas[:0])
		for _, lemma := range s.lemmas {
			s.rel = lx.Lookup(lemma, s.rel[:0])
			for _, r := range s.rel {
				et := stem(r.Word)
				if et == t || stopwords[r.Word] {
					continue
				}
				if _, ok := ix.terms[et]; !ok {
					continue
				}
				wt := wordnetWeight[r.Kind]
				dup := false
				for i := range list {
					if list[i].term == et {
						list[i].w = max(list[i].w, wt)
						dup = true
						break
					}
				}
				if !dup && len(list) < maxExpansions {
					list = append(list, expansion{et, wt})
				}
			}
		}
		s.exp[t] = list
	}
}
