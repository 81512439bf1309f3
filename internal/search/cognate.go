package search

import (
	"sort"
	"strings"
)

// Cognates (issue 23, round 2): a query word the catalog never uses, written in Latin letters,
// is often a cognate of an English word the catalog does use — Spanish diagrama, producto,
// proceso, documentación; French documentation, exemple; German Dokumentation, Migration. Such a
// word meets the catalog's terms that it starts with, or nearly (a shared prefix of at least
// cognatePrefix letters covering all but the last two letters of the catalog's term), at
// cognateWeight. English words the catalog lacks ("chargebacks" → charge) take the same path;
// the literal word is never there to compete, since only absent words are widened.

const (
	cognatePrefix = 5
	maxCognates   = 4
)

var cognateWeight = 0.5

// cognates returns the index terms that absent term t is a cognate of (at most maxCognates,
// longest shared prefix first).
func (ix *Index) cognates(t string) []string {
	if len(t) < cognatePrefix+1 || len(t) > maxCompound || !isASCIIAlpha(t) || stopwords[t] {
		return nil
	}
	ix.sortedOnce.Do(func() {
		for term := range ix.terms {
			if isASCIIAlpha(term) && len(term) >= cognatePrefix {
				ix.sorted = append(ix.sorted, term)
			}
		}
		sort.Strings(ix.sorted)
	})
	head := t[:cognatePrefix]
	var out []string
	var shared []int
	for i := sort.SearchStrings(ix.sorted, head); i < len(ix.sorted) && strings.HasPrefix(ix.sorted[i], head); i++ {
		c := ix.sorted[i]
		p := cognatePrefix
		for p < len(c) && p < len(t) && c[p] == t[p] {
			p++
		}
		if p < len(c)-2 {
			continue
		}
		out = append(out, c)
		shared = append(shared, p)
	}
	if len(out) > maxCognates {
		idx := make([]int, len(out))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return shared[idx[a]] > shared[idx[b]] })
		keep := make([]string, 0, maxCognates)
		for _, i := range idx[:maxCognates] {
			keep = append(keep, out[i])
		}
		out = keep
	}
	return out
}
