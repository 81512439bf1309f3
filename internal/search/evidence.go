package search

import (
	"slices"
	"sort"
	"strings"
)

// Query concepts, server evidence and explanations (issue 23 items 3 and 5).

// A concept is one distinct query term and the ways a tool can match it: the
// literal term, hand-written synonyms and WordNet expansions, each with a
// weight. A tool scores the best of them (they never stack).
type concept struct {
	word string // the query word, for explanations
	alts []alt
}

type alt struct {
	tm   *term
	name string // the indexed term ("" for the literal)
	w    float64
}

// concepts builds the query's concepts from s.terms and s.exp.
func (ix *Index) concepts(s *scratch) []concept {
	out := s.concepts[:0]
	// The query word each term came from, for explanations ("shipments", not "shipment").
	orig := map[string]string{}
	var one [1]string
	for _, w := range s.words {
		if !isASCII(w) && spaceless(w) {
			continue // a bigram explains itself
		}
		one[0] = w
		for _, t := range analyzeWords(one[:], nil) {
			if _, ok := orig[t]; !ok {
				orig[t] = w
			}
		}
	}
	for qi, qt := range s.terms {
		if slices.Contains(s.terms[:qi], qt) {
			continue // a repeated query word counts once
		}
		c := concept{word: qt}
		if w, ok := orig[qt]; ok {
			c.word = w
		}
		sw := synonymWeight
		if lit := ix.terms[qt]; lit != nil {
			c.alts = append(c.alts, alt{tm: lit, w: 1})
		} else {
			// The catalog never uses the query's word: its synonyms are the
			// catalog's words for the same thing.
			sw = synonymAbsentWeight
		}
		if !knobs.noSynonyms {
			for _, syn := range synonyms[qt] {
				if tm := ix.terms[syn]; tm != nil {
					c.alts = append(c.alts, alt{tm: tm, name: syn, w: sw})
				}
			}
		}
		// Across languages (cjk.go): an English word meets a Chinese tool through the tool's
		// translated terms; a Chinese word meets English tools through its own translations.
		if !knobs.noTranslate {
			if tm := ix.terms["~"+qt]; tm != nil {
				c.alts = append(c.alts, alt{tm: tm, name: "~", w: transDocWeight})
			}
			for _, e := range s.trans[qt] {
				if tm := ix.terms[e]; tm != nil {
					c.alts = append(c.alts, alt{tm: tm, name: "→" + e, w: transQueryWeight})
				}
				if tm := ix.terms["~"+e]; tm != nil {
					c.alts = append(c.alts, alt{tm: tm, name: "→" + e, w: transQueryWeight * transDocWeight})
				}
			}
		}
		absent := ix.terms[qt] == nil
		if absent && !knobs.noCognates {
			for _, t := range ix.cognates(qt) {
				c.alts = append(c.alts, alt{tm: ix.terms[t], name: t, w: cognateWeight})
			}
		}
		for _, e := range s.exp[qt] {
			w := e.w
			if absent {
				w = min(w*wordnetAbsentFactor, wordnetMax)
			}
			c.alts = append(c.alts, alt{tm: ix.terms[e.term], name: e.term, w: w})
		}
		if len(c.alts) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Translated matches weigh below literal ones (chosen on the round-two dev split): a query's own
// translation (Chinese → English) counts transQueryWeight of a literal match, a tool's
// translated terms transDocWeight.
var (
	transQueryWeight = 0.5
	transDocWeight   = 0.7
)

// serverWeight scales a server's BM25 score (over its name, title,
// description and instructions) into a lift for each of its tools that
// matched the query (chosen on the dev split).
var serverWeight = 0.5

// serverLift scores the query against the server documents: lift per server.
func (ix *Index) serverLift(query string, s *scratch) []float64 {
	if ix.servers == nil || knobs.noServers {
		return nil
	}
	hits := ix.servers.Search(query, ix.servers.Len())
	if len(hits) == 0 {
		return nil
	}
	lift := make([]float64, ix.servers.Len())
	for _, h := range hits {
		lift[h.Doc] = serverWeight * h.Score
	}
	return lift
}

func (ix *Index) liftOf(lift []float64, doc int) float64 {
	if lift == nil {
		return 0
	}
	if g := ix.group[doc]; g >= 0 {
		return lift[g]
	}
	return 0
}

// contributions returns, for doc, each concept's best weighted BM25 value
// (the terms it matched) and how it matched.
func (ix *Index) contributions(doc int32, cs []concept, out []float64, how []string) ([]float64, []string) {
	out, how = out[:0], how[:0]
	for _, c := range cs {
		best, name := 0.0, ""
		for _, a := range c.alts {
			i, ok := sort.Find(len(a.tm.postings), func(i int) int { return int(doc - a.tm.postings[i].doc) })
			if !ok {
				continue
			}
			tf := float64(a.tm.postings[i].tf)
			if v := a.w * a.tm.idf * (k1 + 1) * tf / (tf + k1); v > best {
				best, name = v, a.name
			}
		}
		out = append(out, best)
		how = append(how, name)
	}
	return out, how
}

// finish cuts to limit and fills IDs and explanations.
func (ix *Index) finish(s *scratch, hits []Hit, lift []float64, limit int) []Hit {
	if len(hits) > limit {
		hits = hits[:limit]
	}
	out := make([]Hit, len(hits))
	for i, h := range hits {
		contrib, how := ix.contributions(int32(h.Doc), s.concepts, nil, nil)
		h.ID = ix.docs[h.Doc].ID
		h.ServerMatch = ix.liftOf(lift, h.Doc) > 0
		h.Matched = explain(s.concepts, contrib, how)
		out[i] = h
	}
	return out
}

// maxExplained bounds the words in one explanation.
const maxExplained = 6

// explain lists the matched concepts, strongest first.
func explain(cs []concept, contrib []float64, how []string) []string {
	idx := make([]int, 0, len(cs))
	for i := range cs {
		if i < len(contrib) && contrib[i] > 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return contrib[idx[a]] > contrib[idx[b]] })
	if len(idx) > maxExplained {
		idx = idx[:maxExplained]
	}
	var out []string
	for _, i := range idx {
		w := cs[i].word
		switch h := how[i]; {
		case h == "":
		case h == "~": // the tool's text, translated, has the word
			w += " (translated)"
		case strings.HasPrefix(h, "→"): // the word, translated, is in the tool's text
			w += h + " (translated)"
		default:
			w += "≈" + h
		}
		out = append(out, w)
	}
	return out
}

// Why renders a hit's explanation in a few words: "matched weather, walk≈path;
// server amap matches the query" (group names the hit's server).
func (h Hit) Why(group string) string {
	var b strings.Builder
	if len(h.Matched) > 0 {
		b.WriteString("matched ")
		b.WriteString(strings.Join(h.Matched, ", "))
	}
	if h.ServerMatch && group != "" {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString("server " + group + " matches the query")
	}
	if b.Len() == 0 {
		return "exact name"
	}
	return b.String()
}
