package search

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// issue 23, round 2: figures on the fresh sets of testdata/i23r2 (written before any round-two
// ranking change). Dev halves only, unless SEARCHEVAL_HELDOUT=1; the held-out halves are scored
// once, at the end.

type r2Sets struct {
	base, ml         []Doc
	baseKeys, mlKeys []string
	queries, tasks   []i23Query
	servers          []Server
}

func loadR2(tb testing.TB) *r2Sets {
	r1 := loadI23(tb)
	var more struct{ Tools []i23Tool }
	readJSON(tb, filepath.Join("testdata", "i23r2", "catalog-overlay.json"), &more)
	docs, keys := i23Docs(more.Tools)
	s := &r2Sets{base: r1.base, baseKeys: r1.baseKeys}
	s.ml = append(slices.Clone(r1.ml), docs...)
	s.mlKeys = append(slices.Clone(r1.mlKeys), keys...)
	readJSON(tb, filepath.Join("testdata", "i23r2", "queries.json"), &s.queries)
	readJSON(tb, filepath.Join("testdata", "i23r2", "tasks.json"), &s.tasks)
	var srv map[string]struct{ ServerInfo string }
	readJSON(tb, filepath.Join("testdata", "i23r2", "servers.json"), &srv)
	s.servers = slices.Clone(r1.servers)
	names := make([]string, 0, len(srv))
	for k := range srv {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		name, _, _ := strings.Cut(srv[k].ServerInfo, " ")
		s.servers = append(s.servers, Server{Group: k, Name: name})
	}
	return s
}

// r2Figures are the three targets' measures and their neighbours: short queries (R@5, MRR, and
// R@5 per kind) and tasks (need@5, need@10, all@10; need@10 per language group).
type r2Figures struct {
	r5, mrr, direct5, para5, amb5 float64
	need5, need10, all10          float64
	needZH, needJA, needEN        float64 // need@10: Chinese, Japanese, English-over-Chinese tasks
	needOther                     float64 // need@10: the other languages
	missed                        []string
}

func (s *r2Sets) eval(split string, opts Options, verbose bool) r2Figures {
	var f r2Figures
	ix := NewIndexWith(s.base, opts)
	kinds := map[string][2]float64{}
	var n float64
	for _, q := range s.queries {
		if q.Split != split {
			continue
		}
		rank := 0
		for i, h := range ix.Search(q.Query, MaxLimit) {
			if slices.Contains(q.Relevant, s.baseKeys[h.Doc]) {
				rank = i + 1
				break
			}
		}
		n++
		k := kinds[q.Kind]
		k[1]++
		if rank > 0 {
			f.mrr += 1 / float64(rank)
			if rank <= 5 {
				f.r5++
				k[0]++
			}
		}
		kinds[q.Kind] = k
		if verbose && (rank == 0 || rank > 5) {
			f.missed = append(f.missed, fmt.Sprintf("%s %-10s rank %2d  %q", q.ID, q.Kind, rank, q.Query))
		}
	}
	f.r5, f.mrr = f.r5/n, f.mrr/n
	ratio := func(k string) float64 { return kinds[k][0] / max(kinds[k][1], 1) }
	f.direct5, f.para5, f.amb5 = ratio("direct"), ratio("paraphrase"), ratio("ambiguous")

	ml := NewIndexWith(s.ml, opts)
	groups := map[string][2]float64{}
	var nt float64
	for _, q := range s.tasks {
		if q.Split != split {
			continue
		}
		hits := ml.Search(q.Query, 10)
		met := func(k int) float64 {
			c := 0
			for _, need := range q.Relevant {
				for _, alt := range strings.Split(need, "|") {
					found := false
					for i := 0; i < k && i < len(hits); i++ {
						if s.mlKeys[hits[i].Doc] == alt {
							found = true
						}
					}
					if found {
						c++
						break
					}
				}
			}
			return float64(c) / float64(len(q.Relevant))
		}
		nt++
		f.need5 += met(5)
		m10 := met(10)
		f.need10 += m10
		if m10 == 1 {
			f.all10++
		}
		g := q.Lang
		if g != "zh" && g != "ja" && g != "en" {
			g = "other"
		}
		v := groups[g]
		v[0] += m10
		v[1]++
		groups[g] = v
		if verbose && m10 < 1 {
			var got []string
			for _, h := range hits {
				got = append(got, s.mlKeys[h.Doc])
			}
			f.missed = append(f.missed, fmt.Sprintf("%s %s need@10 %.2f  %s\n      needs %v\n      got   %v", q.ID, q.Lang, m10, q.Query, q.Relevant, got))
		}
	}
	f.need5, f.need10, f.all10 = f.need5/nt, f.need10/nt, f.all10/nt
	g := func(k string) float64 { return groups[k][0] / max(groups[k][1], 1) }
	f.needZH, f.needJA, f.needEN, f.needOther = g("zh"), g("ja"), g("en"), g("other")
	return f
}

// r2Stages are the round-two methods, cumulative, each switched on by clearing its knob. The
// first row is the search as round one shipped it.
func r2Stages() []stage {
	off := func(fs ...*bool) func() {
		return func() {
			for _, f := range fs {
				*f = true
			}
		}
	}
	k := &knobs
	return []stage{
		{"round one, diversity off", off(&k.noParamDocs, &k.noCedict, &k.noCognates, &k.noLoanwords, &k.noKanaSplit), withServers2},
		{"+ parameter descriptions", off(&k.noCedict, &k.noCognates, &k.noLoanwords, &k.noKanaSplit), withServers2},
		{"+ CC-CEDICT variants, bigrams only", off(&k.noSegWords, &k.noTranslate, &k.noCognates, &k.noLoanwords, &k.noKanaSplit), withServers2},
		{"+ dictionary words (3+ chars)", off(&k.noTranslate, &k.noCognates, &k.noLoanwords, &k.noKanaSplit), withServers2},
		{"+ translation", off(&k.noCognates, &k.noLoanwords, &k.noKanaSplit), withServers2},
		{"  (translation, bigrams only)", off(&k.noSegWords, &k.noCognates, &k.noLoanwords, &k.noKanaSplit), withServers2},
		{"+ cognates", off(&k.noLoanwords, &k.noKanaSplit), withServers2},
		{"+ loanwords (katakana, hangul)", off(&k.noKanaSplit), withServers2},
		{"+ Japanese script runs (shipped)", off(), withServers2},
	}
}

func withServers2(s *i23Sets) Options { return Options{Servers: s.servers} }

func TestIssue23Round2(t *testing.T) {
	s := loadR2(t)
	split := "dev"
	if os.Getenv("SEARCHEVAL_HELDOUT") == "1" {
		split = "test"
	}
	verbose := os.Getenv("SEARCHEVAL_VERBOSE") == "1" && split == "dev"
	saved := knobs
	defer func() { knobs = saved }()
	var b strings.Builder
	fmt.Fprintf(&b, "split %s. short: R@5 MRR | direct para amb R@5.  tasks: need@5 need@10 all@10 | need@10 zh ja en-over-zh other\n", split)
	var last r2Figures
	for _, c := range r2Stages() {
		knobs = saved
		c.set()
		last = s.eval(split, Options{Servers: s.servers}, verbose)
		fmt.Fprintf(&b, "%-34s %.3f %.3f | %.3f %.3f %.3f   %.3f %.3f %.3f | %.3f %.3f %.3f %.3f\n", c.name,
			last.r5, last.mrr, last.direct5, last.para5, last.amb5, last.need5, last.need10, last.all10,
			last.needZH, last.needJA, last.needEN, last.needOther)
	}
	if verbose {
		b.WriteString("misses of the last stage:\n" + strings.Join(last.missed, "\n") + "\n")
	}
	t.Log("\n" + b.String())
}
