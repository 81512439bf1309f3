package search

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
)

var smallDocs = []Doc{
	{ID: "mcp:github:create_issue", Name: "create_issue", Description: "Create a new issue in a GitHub repository", Params: []string{"owner", "repo", "title", "body"}, Group: "github"},
	{ID: "mcp:gitlab:create_issue", Name: "create_issue", Description: "Create a new issue in a GitLab project", Group: "gitlab"},
	{ID: "mcp:github:list_issues", Name: "list_issues", Description: "List issues in a GitHub repository", Params: []string{"owner", "repo", "state"}, Group: "github"},
	{ID: "mcp:playwright:browser_take_screenshot", Name: "browser_take_screenshot", Title: "Take a screenshot", Description: "Take a screenshot of the current page.", Group: "playwright"},
	{ID: "mcp:filesystem:read_text_file", Name: "read_text_file", Title: "Read Text File", Description: "Read the complete contents of a file as text.", Params: []string{"path"}, Group: "filesystem"},
	{ID: "mcp:filesystem:list_directory", Name: "list_directory", Description: "Get a detailed listing of all files and directories in a specified path.", Params: []string{"path"}, Group: "filesystem"},
	{ID: "native:core:read", Name: "read", Description: "Read a file from the workspace.", Params: []string{"path"}, Group: "core"},
	{ID: "mcp:notion:API-get-user", Name: "API-get-user", Title: "Get User", Description: "Notion | Retrieve a user", Group: "notion"},
	{ID: "mcp:thinking:sequentialthinking", Name: "sequentialthinking", Description: "Sequential problem solving through thinking steps.", Group: "thinking"},
	{ID: "mcp:memory:delete_entities", Name: "delete_entities", Description: "Delete entities from the knowledge graph", Group: "memory"},
}

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func TestEmptyQueryAndLimits(t *testing.T) {
	ix := NewIndex(smallDocs)
	for _, q := range []string{"", " ", "\t\n "} {
		if got := ix.Search(q, 10); got != nil {
			t.Errorf("Search(%q) = %v, want nil", q, got)
		}
	}
	for _, l := range []int{0, -1} {
		if got := ix.Search("issue", l); len(got) != 0 {
			t.Errorf("limit %d: %d hits, want none", l, len(got))
		}
	}
	if got := ix.Search("the of a", 10); len(got) != 0 {
		t.Errorf("stopword-only query: %v", ids(got))
	}
	if got := ix.Search("issue", 1); len(got) != 1 {
		t.Errorf("limit 1: %d hits", len(got))
	}
	// A huge limit returns every match and allocates by matches, not by limit.
	if got := ix.Search("issue", 1<<40); len(got) != 3 {
		t.Errorf("huge limit: %v", ids(got))
	}
	if got := NewIndex(nil).Search("issue", 5); got != nil {
		t.Errorf("empty index: %v", got)
	}
	// Nothing matches: empty, not an error.
	if got := ix.Search("zyzzyva", 5); len(got) != 0 {
		t.Errorf("no match: %v", ids(got))
	}
}

func TestEffectiveLimit(t *testing.T) {
	tests := []struct{ req, def, max, want int }{
		{0, 8, 50, 8},
		{-3, 8, 50, 8},
		{5, 8, 50, 5},
		{80, 8, 50, 50},
		{0, 80, 50, 50}, // the default is clamped too
		{20, 8, 10, 10},
		{0, 0, 0, DefaultLimit}, // invalid config falls back to the defaults
		{100, 8, 500, MaxLimit},
	}
	for _, tt := range tests {
		if got := EffectiveLimit(tt.req, tt.def, tt.max); got != tt.want {
			t.Errorf("EffectiveLimit(%d, %d, %d) = %d, want %d", tt.req, tt.def, tt.max, got, tt.want)
		}
	}
}

func TestExactNameShortCircuit(t *testing.T) {
	ix := NewIndex(smallDocs)
	tests := []struct {
		q    string
		want []string // expected prefix of the results
	}{
		{"read", []string{"native:core:read"}},
		{"READ", []string{"native:core:read"}},
		{"create_issue", []string{"mcp:github:create_issue", "mcp:gitlab:create_issue"}},
		{"createIssue", []string{"mcp:github:create_issue", "mcp:gitlab:create_issue"}},
		{"mcp:gitlab:create_issue", []string{"mcp:gitlab:create_issue"}},
		{"gitlab/create_issue", []string{"mcp:gitlab:create_issue"}},
		{"api-get-user", []string{"mcp:notion:API-get-user"}},
		{"API_GET_USER", []string{"mcp:notion:API-get-user"}},
		{"browser.take.screenshot", []string{"mcp:playwright:browser_take_screenshot"}},
		{"sequential thinking", []string{"mcp:thinking:sequentialthinking"}},
	}
	for _, tt := range tests {
		got := ids(ix.Search(tt.q, 5))
		if len(got) < len(tt.want) || !reflect.DeepEqual(got[:len(tt.want)], tt.want) {
			t.Errorf("Search(%q) = %v, want prefix %v", tt.q, got, tt.want)
		}
	}
	// The short-circuit respects the filter.
	onlyGitlab := func(d int) bool { return smallDocs[d].Group == "gitlab" }
	if got := ids(ix.SearchFilter("create_issue", 5, onlyGitlab)); !reflect.DeepEqual(got, []string{"mcp:gitlab:create_issue"}) {
		t.Errorf("filtered exact: %v", got)
	}
	// An exact hit is not repeated among the ranked ones, and the limit holds.
	got := ix.Search("read", 3)
	if len(got) != 3 {
		t.Fatalf("limit: %v", ids(got))
	}
	seen := map[string]bool{}
	for _, h := range got {
		if seen[h.ID] {
			t.Errorf("duplicate %s in %v", h.ID, ids(got))
		}
		seen[h.ID] = true
	}
}

func TestTiesByDocOrder(t *testing.T) {
	var docs []Doc
	for i := range 30 {
		docs = append(docs, Doc{ID: fmt.Sprintf("t%02d", i), Name: "twin_tool", Description: "Identical description."})
	}
	docs = append(docs, Doc{ID: "other", Name: "other", Description: "unrelated"})
	ix := NewIndex(docs)
	for _, limit := range []int{1, 5, 29, 30, 50} {
		got := ix.Search("twin", limit)
		if len(got) != min(limit, 30) {
			t.Fatalf("limit %d: %d hits", limit, len(got))
		}
		for i, h := range got {
			if h.Doc != i || h.ID != fmt.Sprintf("t%02d", i) {
				t.Fatalf("limit %d: hit %d is %s (doc %d), want doc order", limit, i, h.ID, h.Doc)
			}
			if h.Score != got[0].Score {
				t.Fatalf("limit %d: tie scores differ: %v vs %v", limit, h.Score, got[0].Score)
			}
		}
	}
	// Repeated searches are identical.
	a, b := ix.Search("twin tool", 10), ix.Search("twin tool", 10)
	if !reflect.DeepEqual(a, b) {
		t.Error("search is not deterministic")
	}
}

func TestRankingBasics(t *testing.T) {
	ix := NewIndex(smallDocs)
	top := func(q string) string {
		h := ix.Search(q, 1)
		if len(h) == 0 {
			return ""
		}
		return h[0].ID
	}
	tests := []struct{ q, want string }{
		{"take a screenshot of the page", "mcp:playwright:browser_take_screenshot"},
		{"capture the screen", "mcp:playwright:browser_take_screenshot"}, // synonyms only
		{"list issues on github", "mcp:github:list_issues"},
		{"open a ticket on gitlab", "mcp:gitlab:create_issue"},
		{"show folder contents", "mcp:filesystem:list_directory"},
		{"forget an entity", "mcp:memory:delete_entities"},
		{"sequential", "mcp:thinking:sequentialthinking"},
	}
	for _, tt := range tests {
		if got := top(tt.q); got != tt.want {
			t.Errorf("top(%q) = %s, want %s (all: %v)", tt.q, got, tt.want, ids(ix.Search(tt.q, 5)))
		}
	}
	// A literal match beats a synonym-only match.
	docs := []Doc{
		{ID: "syn", Name: "fetch_record"},
		{ID: "lit", Name: "get_record"},
	}
	if got := ids(NewIndex(docs).Search("get record", 2)); !reflect.DeepEqual(got, []string{"lit", "syn"}) {
		t.Errorf("literal vs synonym: %v", got)
	}
	// Synonyms never stack: for each query term a tool keeps the best of the
	// term and its synonyms, so naming both "get" and "fetch" scores exactly the
	// better of the two (all names have the same length here).
	docs = []Doc{
		{ID: "both", Name: "get_fetch"},
		{ID: "get", Name: "get_zzz"},
		{ID: "fetch", Name: "fetch_zzz"},
	}
	score := map[string]float64{}
	for _, h := range NewIndex(docs).Search("get", 3) {
		score[h.ID] = h.Score
	}
	if want := max(score["get"], score["fetch"]); math.Abs(score["both"]-want) > 1e-9 || score["fetch"] == 0 {
		t.Errorf("synonym stacking: %v", score)
	}
}

func TestSearchFilter(t *testing.T) {
	ix := NewIndex(smallDocs)
	onlyFS := func(d int) bool { return smallDocs[d].Group == "filesystem" }
	got := ix.SearchFilter("read a file", 10, onlyFS)
	if len(got) == 0 {
		t.Fatal("no hits")
	}
	for _, h := range got {
		if smallDocs[h.Doc].Group != "filesystem" {
			t.Errorf("filter leaked %s", h.ID)
		}
	}
	if got := ix.SearchFilter("read a file", 10, func(int) bool { return false }); len(got) != 0 {
		t.Errorf("keep-nothing filter: %v", ids(got))
	}
	if a, b := ix.SearchFilter("read a file", 10, nil), ix.Search("read a file", 10); !reflect.DeepEqual(a, b) {
		t.Error("nil filter differs from Search")
	}
}

func TestDescriptionBound(t *testing.T) {
	long := strings.Repeat("filler words here. ", 200) // > 2 KB
	docs := []Doc{
		{ID: "a", Name: "alpha", Description: long + " zebracorn"},
		{ID: "b", Name: "beta", Description: "zebracorn at the start. " + long},
	}
	got := ids(NewIndex(docs).Search("zebracorn", 5))
	if !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("got %v, want only the doc whose term is within the first 2 KB", got)
	}
	// Long descriptions do not buy rank with repetition beyond saturation:
	// the name still wins.
	docs = []Doc{
		{ID: "spam", Name: "misc", Description: strings.Repeat("screenshot ", 500)},
		{ID: "real", Name: "take_screenshot", Description: "Take a screenshot."},
	}
	if got := ids(NewIndex(docs).Search("screenshot", 2)); got[0] != "real" {
		t.Errorf("description spam won: %v", got)
	}
}

func TestHugeInputs(t *testing.T) {
	docs := []Doc{{ID: "x", Name: strings.Repeat("a", 100000), Title: strings.Repeat("Word ", 50000), Params: make([]string, 10000)}}
	ix := NewIndex(docs)
	ix.Search(strings.Repeat("b", 1<<20), 5)
	ix.Search(strings.Repeat("word ", 1<<18), 5)
}

// TestConcurrentSearch hammers one index from many goroutines; run with -race.
func TestConcurrentSearch(t *testing.T) {
	var docs []Doc
	for i := range 300 {
		d := smallDocs[i%len(smallDocs)]
		d.ID = fmt.Sprintf("%s#%d", d.ID, i)
		docs = append(docs, d)
	}
	ix := NewIndex(docs)
	queries := []string{"create an issue", "screenshot", "read file", "list directories", "get user", "create_issue", "knowledge graph", ""}
	want := make([][]Hit, len(queries))
	for i, q := range queries {
		want[i] = ix.Search(q, 8)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				qi := (g + i) % len(queries)
				var got []Hit
				if i%3 == 0 {
					got = ix.SearchFilter(queries[qi], 8, nil)
				} else {
					got = ix.Search(queries[qi], 8)
				}
				if !reflect.DeepEqual(got, want[qi]) {
					select {
					case errs <- fmt.Sprintf("goroutine %d: %q differs", g, queries[qi]):
					default:
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
