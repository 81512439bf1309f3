package search

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestAblation switches parts of the ranking off one at a time and logs
// recall@5 and MRR on the evaluation set (go test -v -run TestAblation), to
// show what each part is worth. It asserts only that the full ranking beats
// plain BM25 over name and description. (A small evaluator lives here because
// package searcheval imports this one.)
func TestAblation(t *testing.T) {
	type tool struct {
		Server, Name, Title, Description string
		InputSchema                      struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"inputSchema"`
		Annotations struct{ Title string } `json:"annotations"`
	}
	type query struct {
		Query, Kind, Split string
		Relevant           []string
	}
	var tools []tool
	var queries []query
	for _, f := range []string{"catalog.json", "queries.json", "queries-dev.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "catalog.json" {
			err = json.Unmarshal(b, &tools)
		} else {
			var qs []query
			err = json.Unmarshal(b, &qs)
			queries = append(queries, qs...)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	docs := func(mcp bool) ([]Doc, []string) {
		ds := make([]Doc, len(tools))
		keys := make([]string, len(tools))
		for i, tl := range tools {
			var params []string
			for p := range tl.InputSchema.Properties {
				params = append(params, p)
			}
			sort.Strings(params)
			ds[i] = Doc{ID: "native:" + tl.Server + ":" + tl.Name, Name: tl.Name, Description: tl.Description, Params: params, Group: tl.Server}
			if mcp {
				ds[i].ID = "mcp:" + tl.Server + ":" + tl.Name
				ds[i].Title = cmpOr(tl.Title, tl.Annotations.Title)
			}
			keys[i] = tl.Server + "/" + tl.Name
		}
		return ds, keys
	}
	type score struct{ r5, mrr, r5Test, mrrTest float64 }
	eval := func(mcp bool) score {
		ds, keys := docs(mcp)
		ix := NewIndex(ds)
		var s score
		var n, nTest float64
		for _, q := range queries {
			rank := rankOf(ix.Search(q.Query, MaxLimit), keys, q.Relevant)
			var r5, rr float64
			if rank > 0 {
				rr = 1 / float64(rank)
				if rank <= 5 {
					r5 = 1
				}
			}
			n++
			s.r5 += r5
			s.mrr += rr
			if q.Split == "test" {
				nTest++
				s.r5Test += r5
				s.mrrTest += rr
			}
		}
		return score{s.r5 / n, s.mrr / n, s.r5Test / nTest, s.mrrTest / nTest}
	}

	saved := knobs
	defer func() { knobs = saved }()
	configs := []struct {
		name string
		set  func()
	}{
		{"full ranking", func() {}},
		{"- synonyms", func() { knobs.noSynonyms = true }},
		{"- stemming", func() { knobs.noStem = true }},
		{"- camelCase splitting", func() { knobs.noCamel = true }},
		{"- abbreviations, phrases", func() { knobs.noAbbrev = true }},
		{"- compound splitting", func() { knobs.noCompound = true }},
		{"- exact-name short-circuit", func() { knobs.noExact = true }},
		{"- field weights (name+desc)", func() { knobs.plainFields = true }},
		{"plain BM25 name+description", func() {
			knobs.noSynonyms, knobs.noStem, knobs.noCamel, knobs.noAbbrev = true, true, true, true
			knobs.noCompound, knobs.noExact, knobs.plainFields = true, true, true
		}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-30s %27s   %27s\n", "", "native: R@5  MRR (test split)", "mcp: R@5  MRR (test split)")
	var full, plain score
	for _, c := range configs {
		knobs = saved
		c.set()
		nat, mcp := eval(false), eval(true)
		fmt.Fprintf(&b, "%-30s %.3f %.3f (%.3f %.3f)   %.3f %.3f (%.3f %.3f)\n", c.name,
			nat.r5, nat.mrr, nat.r5Test, nat.mrrTest, mcp.r5, mcp.mrr, mcp.r5Test, mcp.mrrTest)
		switch c.name {
		case "full ranking":
			full = mcp
		case "plain BM25 name+description":
			plain = mcp
		}
	}
	t.Log("\n" + b.String())
	if full.r5 <= plain.r5 || full.mrr <= plain.mrr {
		t.Errorf("the full ranking (%+v) does not beat plain BM25 (%+v)", full, plain)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
