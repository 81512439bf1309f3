// Package searcheval measures the tool-search ranking (package search) on a real
// MCP tool catalog and a labelled query set: recall@1/@5/@10 and MRR by query
// kind and split, for the two ways code mode searches a catalog, plus per-query
// latency. `codemode bench search` and the quality-gate test call it.
package searcheval

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/codemode-go/codemode/internal/search"
)

// Mode is how the catalog is presented to the index.
type Mode string

const (
	// ModeNative is what tools.search sees for native (core/plugin) tools: id
	// native:<server>:<tool>, the tool name, description and parameter names,
	// grouped by server (the plugin id). No title.
	ModeNative Mode = "native"
	// ModeMCP is what MCP.$search sees: server name, tool name, title (the
	// tool's title or annotations.title), description and parameter names.
	ModeMCP Mode = "mcp"
)

// CatalogTool is one entry of catalog.json (a tools/list result, unedited).
type CatalogTool struct {
	Server       string          `json:"server"`
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
}

// Annotations are the MCP tool annotations the evaluation uses.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
}

// Key is the tool's key in query files: "server/tool".
func (t CatalogTool) Key() string { return t.Server + "/" + t.Name }

// Params returns the top-level input property names, sorted.
func (t CatalogTool) Params() []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(t.InputSchema) == 0 || json.Unmarshal(t.InputSchema, &s) != nil {
		return nil
	}
	out := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Query is one labelled query. A query scores at k if any Relevant tool
// ("server/tool") is in the top k; MRR uses the first relevant hit.
type Query struct {
	ID       string   `json:"id"`
	Query    string   `json:"query"`
	Kind     string   `json:"kind"`  // direct | paraphrase | ambiguous
	Split    string   `json:"split"` // dev | test
	Relevant []string `json:"relevant"`
}

// LoadCatalog reads a catalog.json.
func LoadCatalog(path string) ([]CatalogTool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tools []CatalogTool
	if err := json.Unmarshal(b, &tools); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tools, nil
}

// LoadQueries reads a query file. Queries without a split are "dev".
func LoadQueries(path string) ([]Query, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var qs []Query
	if err := json.Unmarshal(b, &qs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range qs {
		if qs[i].Split == "" {
			qs[i].Split = "dev"
		}
		if qs[i].Query == "" || len(qs[i].Relevant) == 0 {
			return nil, fmt.Errorf("%s: query %q: empty query or no relevant tools", path, qs[i].ID)
		}
	}
	return qs, nil
}

// Docs converts the catalog into index documents for mode.
func Docs(tools []CatalogTool, mode Mode) []search.Doc {
	docs := make([]search.Doc, len(tools))
	for i, t := range tools {
		names, pdocs := search.SchemaParams(t.InputSchema)
		d := search.Doc{
			Name:        t.Name,
			Description: t.Description,
			Params:      names,
			ParamDocs:   pdocs,
			Group:       t.Server,
		}
		switch mode {
		case ModeMCP:
			d.ID = "mcp:" + t.Server + ":" + t.Name
			d.Title = t.Title
			if d.Title == "" && t.Annotations != nil {
				d.Title = t.Annotations.Title
			}
		default:
			d.ID = "native:" + t.Server + ":" + t.Name
		}
		docs[i] = d
	}
	return docs
}

// Metrics are retrieval figures over N queries.
type Metrics struct {
	N        int
	Recall1  float64
	Recall5  float64
	Recall10 float64
	MRR      float64
}

// Row is one line of the report: a split ("all", "dev", "test") and a kind
// ("all", "direct", "paraphrase", "ambiguous").
type Row struct {
	Split, Kind string
	Metrics
}

// Latency is per-query search time in microseconds over the query set.
type Latency struct {
	Tools    int
	MedianUS float64
	P99US    float64
}

// Miss is a query with no relevant tool in the top 5.
type Miss struct {
	ID, Query, Kind, Split string
	Expected               []string
	Got                    []string // top 3, "server/tool"
	Rank                   int      // rank of the first relevant tool, 0 if not in the top 50
}

// Report is the result of Evaluate.
type Report struct {
	Mode    Mode
	Tools   int
	Queries int
	Rows    []Row
	Latency []Latency // at the catalog size and at a 1,000-tool replicated catalog
	Misses  []Miss
}

// Metric returns the row for split and kind ("all" for any).
func (r Report) Metric(split, kind string) Metrics {
	for _, row := range r.Rows {
		if row.Split == split && row.Kind == kind {
			return row.Metrics
		}
	}
	return Metrics{}
}

const evalDepth = search.MaxLimit

// Evaluate ranks every query against the catalog in mode and reports the
// figures. Queries naming tools absent from the catalog count as misses.
func Evaluate(tools []CatalogTool, queries []Query, mode Mode) Report {
	docs := Docs(tools, mode)
	ix := search.NewIndex(docs)
	key := make([]string, len(tools))
	for i, t := range tools {
		key[i] = t.Key()
	}

	type acc struct {
		n, r1, r5, r10 int
		rr             float64
	}
	accs := map[[2]string]*acc{}
	add := func(split, kind string, rank int) {
		for _, s := range []string{"all", split} {
			for _, k := range []string{"all", kind} {
				a := accs[[2]string{s, k}]
				if a == nil {
					a = &acc{}
					accs[[2]string{s, k}] = a
				}
				a.n++
				if rank >= 1 {
					a.rr += 1 / float64(rank)
					if rank <= 1 {
						a.r1++
					}
					if rank <= 5 {
						a.r5++
					}
					if rank <= 10 {
						a.r10++
					}
				}
			}
		}
	}

	rep := Report{Mode: mode, Tools: len(tools), Queries: len(queries)}
	for _, q := range queries {
		hits := ix.Search(q.Query, evalDepth)
		rank := 0
		for i, h := range hits {
			if slices.Contains(q.Relevant, key[h.Doc]) {
				rank = i + 1
				break
			}
		}
		add(q.Split, q.Kind, rank)
		if rank == 0 || rank > 5 {
			m := Miss{ID: q.ID, Query: q.Query, Kind: q.Kind, Split: q.Split, Expected: q.Relevant, Rank: rank}
			for i := 0; i < len(hits) && i < 3; i++ {
				m.Got = append(m.Got, key[hits[i].Doc])
			}
			rep.Misses = append(rep.Misses, m)
		}
	}
	for _, s := range []string{"all", "dev", "test"} {
		for _, k := range []string{"all", "direct", "paraphrase", "ambiguous"} {
			a := accs[[2]string{s, k}]
			if a == nil || a.n == 0 {
				continue
			}
			n := float64(a.n)
			rep.Rows = append(rep.Rows, Row{Split: s, Kind: k, Metrics: Metrics{
				N: a.n, Recall1: float64(a.r1) / n, Recall5: float64(a.r5) / n,
				Recall10: float64(a.r10) / n, MRR: a.rr / n,
			}})
		}
	}
	rep.Latency = append(rep.Latency, measure(ix, queries))
	big := Replicate(docs, 1000)
	rep.Latency = append(rep.Latency, measure(search.NewIndex(big), queries))
	return rep
}

// Replicate returns a catalog of exactly n documents: docs, followed by copies
// of docs under renamed groups ("github~2"), as another deployment of the same
// servers would look.
func Replicate(docs []search.Doc, n int) []search.Doc {
	out := make([]search.Doc, 0, n)
	for copyN := 1; len(out) < n && len(docs) > 0; copyN++ {
		for _, d := range docs {
			if len(out) == n {
				break
			}
			if copyN > 1 {
				suffix := fmt.Sprintf("~%d", copyN)
				d.Group += suffix
				d.ID += suffix
			}
			out = append(out, d)
		}
	}
	return out
}

// measure times each query (search.DefaultLimit results): each query runs
// several times and its median is kept, so a descheduled or GC-hit call on a
// busy machine does not count as the query's cost; the report is the median
// and p99 of those per-query figures.
func measure(ix *search.Index, queries []Query) Latency {
	const rounds = 15
	if len(queries) == 0 {
		return Latency{Tools: ix.Len()}
	}
	per := make([]float64, len(queries))
	runs := make([]float64, rounds)
	for _, q := range queries { // warm up
		ix.Search(q.Query, search.DefaultLimit)
	}
	for i, q := range queries {
		for r := range runs {
			start := time.Now()
			ix.Search(q.Query, search.DefaultLimit)
			runs[r] = float64(time.Since(start).Nanoseconds()) / 1e3
		}
		sort.Float64s(runs)
		per[i] = runs[rounds/2]
	}
	sort.Float64s(per)
	p99 := per[min(len(per)-1, int(float64(len(per))*0.99))]
	return Latency{Tools: ix.Len(), MedianUS: per[len(per)/2], P99US: p99}
}

// Run is the whole benchmark as `codemode bench search` runs it: load the
// catalog and the query files, evaluate both modes, write the tables to w. It
// returns the reports for callers that gate on them.
func Run(w io.Writer, catalogPath string, queryPaths ...string) ([]Report, error) {
	tools, err := LoadCatalog(catalogPath)
	if err != nil {
		return nil, err
	}
	var qs []Query
	for _, p := range queryPaths {
		q, err := LoadQueries(p)
		if err != nil {
			return nil, err
		}
		qs = append(qs, q...)
	}
	var reports []Report
	for i, mode := range []Mode{ModeNative, ModeMCP} {
		r := Evaluate(tools, qs, mode)
		if i > 0 {
			fmt.Fprintln(w)
		}
		r.WriteText(w)
		reports = append(reports, r)
	}
	return reports, nil
}

// WriteText writes the report as a table.
func (r Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "mode %s: %d tools, %d queries\n", r.Mode, r.Tools, r.Queries)
	fmt.Fprintf(w, "%-6s %-11s %4s %6s %6s %6s %6s\n", "split", "kind", "n", "R@1", "R@5", "R@10", "MRR")
	for _, row := range r.Rows {
		fmt.Fprintf(w, "%-6s %-11s %4d %6.3f %6.3f %6.3f %6.3f\n",
			row.Split, row.Kind, row.N, row.Recall1, row.Recall5, row.Recall10, row.MRR)
	}
	for _, l := range r.Latency {
		fmt.Fprintf(w, "latency at %d tools: median %.1f µs, p99 %.1f µs per query\n", l.Tools, l.MedianUS, l.P99US)
	}
	if len(r.Misses) > 0 {
		fmt.Fprintf(w, "misses (no relevant tool in the top 5): %d\n", len(r.Misses))
		for _, m := range r.Misses {
			rank := "-"
			if m.Rank > 0 {
				rank = fmt.Sprint(m.Rank)
			}
			fmt.Fprintf(w, "  %s [%s/%s] %q rank %s\n    want %s\n    got  %s\n",
				m.ID, m.Split, m.Kind, m.Query, rank, strings.Join(m.Expected, ", "), strings.Join(m.Got, ", "))
		}
	}
}
