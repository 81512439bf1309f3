package searcheval

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/internal/search"
)

var (
	catalogPath = filepath.Join("..", "testdata", "catalog.json")
	queryPaths  = []string{
		filepath.Join("..", "testdata", "queries.json"),     // ours: dev and test halves
		filepath.Join("..", "testdata", "queries-dev.json"), // the 40 shared examples (dev)
	}
)

// TestQualityGate fails when the ranking falls below recall@5 0.90 or MRR 0.75
// on the full evaluation set in either mode. It is a quality gate, not a timing
// assertion: latency is reported (go test -v), never checked.
func TestQualityGate(t *testing.T) {
	var buf bytes.Buffer
	reports, err := Run(&buf, catalogPath, queryPaths...)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + buf.String())
	if len(reports) != 2 {
		t.Fatalf("%d reports", len(reports))
	}
	for _, r := range reports {
		if r.Queries < 150 {
			t.Errorf("mode %s: only %d queries", r.Mode, r.Queries)
		}
		all := r.Metric("all", "all")
		if all.N != r.Queries {
			t.Errorf("mode %s: %d queries scored of %d", r.Mode, all.N, r.Queries)
		}
		if all.Recall5 < 0.90 || all.MRR < 0.75 {
			t.Errorf("mode %s: recall@5 %.3f (want >= 0.90), MRR %.3f (want >= 0.75)", r.Mode, all.Recall5, all.MRR)
		}
	}
}

// TestQuerySet checks the labelled data: every relevant tool exists, ids are
// unique, kinds and splits are known, and every server is covered.
func TestQuerySet(t *testing.T) {
	tools, err := LoadCatalog(catalogPath)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	servers := map[string]bool{}
	for _, tl := range tools {
		known[tl.Key()] = true
		servers[tl.Server] = true
	}
	covered := map[string]bool{}
	ids := map[string]bool{}
	kinds := map[string]int{}
	splits := map[string]int{}
	for _, p := range queryPaths {
		qs, err := LoadQueries(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if ids[q.ID] {
				t.Errorf("duplicate id %s", q.ID)
			}
			ids[q.ID] = true
			kinds[q.Kind]++
			splits[q.Split]++
			for _, r := range q.Relevant {
				if !known[r] {
					t.Errorf("%s: unknown tool %s", q.ID, r)
				}
				covered[strings.SplitN(r, "/", 2)[0]] = true
			}
		}
	}
	for k := range kinds {
		if k != "direct" && k != "paraphrase" && k != "ambiguous" {
			t.Errorf("unknown kind %q", k)
		}
	}
	for s := range splits {
		if s != "dev" && s != "test" {
			t.Errorf("unknown split %q", s)
		}
	}
	if splits["test"] < 100 {
		t.Errorf("only %d held-out test queries", splits["test"])
	}
	for s := range servers {
		if !covered[s] {
			t.Errorf("server %s has no query", s)
		}
	}
}

func TestDocsModes(t *testing.T) {
	tools := []CatalogTool{{
		Server: "github", Name: "create_issue", Description: "Create an issue",
		InputSchema: []byte(`{"type":"object","properties":{"title":{},"body":{},"owner":{}}}`),
		Annotations: &Annotations{Title: "Create issue"},
	}, {
		Server: "x", Name: "y", Title: "Own title", InputSchema: []byte(`not json`),
	}}
	n := Docs(tools, ModeNative)
	if n[0].ID != "native:github:create_issue" || n[0].Title != "" || n[0].Group != "github" ||
		strings.Join(n[0].Params, ",") != "body,owner,title" {
		t.Errorf("native: %+v", n[0])
	}
	m := Docs(tools, ModeMCP)
	if m[0].ID != "mcp:github:create_issue" || m[0].Title != "Create issue" || m[1].Title != "Own title" || m[1].Params != nil {
		t.Errorf("mcp: %+v", m)
	}
}

func TestReplicate(t *testing.T) {
	docs := []search.Doc{{ID: "a", Group: "g"}, {ID: "b", Group: "g"}, {ID: "c", Group: "h"}}
	r := Replicate(docs, 7)
	if len(r) != 7 {
		t.Fatalf("%d docs", len(r))
	}
	seen := map[string]bool{}
	for _, d := range r {
		if seen[d.ID] {
			t.Errorf("duplicate id %s", d.ID)
		}
		seen[d.ID] = true
	}
	if r[3].ID != "a~2" || r[3].Group != "g~2" || docs[0].ID != "a" {
		t.Errorf("replica: %+v (original %+v)", r[3], docs[0])
	}
	if len(Replicate(docs, 2)) != 2 || len(Replicate(nil, 5)) != 0 {
		t.Error("bounds")
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := LoadCatalog(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("missing catalog: no error")
	}
	if _, err := LoadCatalog(write("bad.json", "{")); err == nil {
		t.Error("bad catalog: no error")
	}
	if _, err := LoadQueries(write("q.json", `[{"id":"x","query":"","relevant":["a/b"]}]`)); err == nil {
		t.Error("empty query: no error")
	}
	qs, err := LoadQueries(write("q2.json", `[{"id":"x","query":"q","kind":"direct","relevant":["a/b"]}]`))
	if err != nil || qs[0].Split != "dev" {
		t.Errorf("default split: %v %v", qs, err)
	}
	// A query naming a tool the catalog lacks is a miss, not a crash.
	r := Evaluate([]CatalogTool{{Server: "s", Name: "t", Description: "thing"}}, qs, ModeMCP)
	if m := r.Metric("all", "all"); m.N != 1 || m.Recall10 != 0 || len(r.Misses) != 1 {
		t.Errorf("report: %+v", r)
	}
	var buf bytes.Buffer
	r.WriteText(&buf)
	if !strings.Contains(buf.String(), "misses") {
		t.Errorf("text: %s", buf.String())
	}
}
