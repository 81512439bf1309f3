package search_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/internal/search"
	"github.com/codemode-go/codemode/internal/search/searcheval"
)

var update = flag.Bool("update", false, "rewrite testdata/rankings.golden")

var goldenQueries = []string{
	"list open pull requests",
	"take a screenshot of the page",
	"store a fact about the user",
	"rename a file",
	"create_issue",
	"run a sql query",
	"assign the ticket to Sarah",
	"deploy an edge function",
	"k8s pod logs",
	"search the web for recent news",
	"refund a payment",
	"getHTTPResponse",
}

func loadCatalog(tb testing.TB) []searcheval.CatalogTool {
	tb.Helper()
	tools, err := searcheval.LoadCatalog(filepath.Join("testdata", "catalog.json"))
	if err != nil {
		tb.Fatal(err)
	}
	return tools
}

// TestGoldenRankings pins the top 5 of a few queries on the real catalog in
// both modes, so ranking changes show up in review. Run with -update to accept
// a change.
func TestGoldenRankings(t *testing.T) {
	tools := loadCatalog(t)
	var b strings.Builder
	for _, mode := range []searcheval.Mode{searcheval.ModeNative, searcheval.ModeMCP} {
		ix := search.NewIndex(searcheval.Docs(tools, mode))
		for _, q := range goldenQueries {
			fmt.Fprintf(&b, "[%s] %s\n", mode, q)
			for i, h := range ix.Search(q, 5) {
				fmt.Fprintf(&b, "  %d %s\n", i+1, h.ID)
			}
		}
	}
	path := filepath.Join("testdata", "rankings.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("rankings changed (go test ./internal/search -run TestGoldenRankings -update to accept):\n%s", diff(string(want), got))
	}
}

func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %s\n  got  %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

func benchQueries(tb testing.TB) []string {
	qs, err := searcheval.LoadQueries(filepath.Join("testdata", "queries.json"))
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Query
	}
	return out
}

// BenchmarkSearch1000 is one query (cycling through the evaluation queries)
// against a 1,000-tool catalog: the real 667 tools plus replicas.
func BenchmarkSearch1000(b *testing.B) {
	docs := searcheval.Replicate(searcheval.Docs(loadCatalog(b), searcheval.ModeMCP), 1000)
	ix := search.NewIndex(docs)
	qs := benchQueries(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		ix.Search(qs[i%len(qs)], search.DefaultLimit)
	}
}

// BenchmarkNewIndex builds the index of the 1,000-tool catalog.
func BenchmarkNewIndex(b *testing.B) {
	docs := searcheval.Replicate(searcheval.Docs(loadCatalog(b), searcheval.ModeMCP), 1000)
	b.ReportAllocs()
	for b.Loop() {
		search.NewIndex(docs)
	}
}
