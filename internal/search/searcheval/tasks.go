package searcheval

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/codemode-go/codemode/internal/search"
)

// This file is the second evaluation of issue 23: long, multi-step task
// descriptions (several languages) over a multilingual catalog, scored by how
// many of the task's needs the top k covers. testdata/i23/README.md says how
// the data was made.

// Task is one long task description. Each entry of Needs is one tool the task
// needs; alternatives that would do as well are joined by "|"
// ("amap/maps_weather|baidu_map/map_weather").
type Task struct {
	ID    string   `json:"id"`
	Lang  string   `json:"lang"`
	Query string   `json:"query"`
	Split string   `json:"split"`
	Needs []string `json:"relevant"`
}

// LoadTasks reads a task file.
func LoadTasks(path string) ([]Task, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ts []Task
	if err := json.Unmarshal(b, &ts); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, t := range ts {
		if t.Query == "" || len(t.Needs) == 0 {
			return nil, fmt.Errorf("%s: task %q: empty query or no needs", path, t.ID)
		}
	}
	return ts, nil
}

// Overlay turns the 25-server catalog into the multilingual one: some servers'
// descriptions replaced by translations, and whole servers added.
type Overlay struct {
	Translated map[string]string `json:"translated"` // "server/tool" → description
	Tools      []CatalogTool     `json:"tools"`
}

// LoadMultilingual reads the base catalog and applies the overlay.
func LoadMultilingual(basePath, overlayPath string) ([]CatalogTool, error) {
	tools, err := LoadCatalog(basePath)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(overlayPath)
	if err != nil {
		return nil, err
	}
	var o Overlay
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("%s: %w", overlayPath, err)
	}
	seen := 0
	for i, t := range tools {
		if d, ok := o.Translated[t.Key()]; ok {
			tools[i].Description = d
			seen++
		}
	}
	if seen != len(o.Translated) {
		return nil, fmt.Errorf("%s: %d translations, %d tools found", overlayPath, len(o.Translated), seen)
	}
	return append(tools, o.Tools...), nil
}

// ServerMeta is what an MCP server says about itself in initialize.
type ServerMeta struct {
	Package      string `json:"package"`
	ServerInfo   string `json:"serverInfo"` // "name version"
	Title        string `json:"title,omitempty"`
	Description  string `json:"description,omitempty"`
	Instructions string `json:"instructions,omitempty"`
}

// LoadServers reads servers.json ("server id" → ServerMeta).
func LoadServers(path string) (map[string]ServerMeta, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]ServerMeta{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// TaskMetrics are need-coverage figures over N tasks: NeedR5 and NeedR10 are
// the mean fraction of a task's needs met in the top 5 / 10; AllR10 is the
// fraction of tasks whose needs are all met in the top 10.
type TaskMetrics struct {
	N                       int
	NeedR5, NeedR10, AllR10 float64
}

// TaskRow is one line of a task report: a split and a language ("all" for any).
type TaskRow struct {
	Split, Lang string
	TaskMetrics
}

// Searcher ranks a query; hits are positions in the catalog.
type Searcher func(query string, limit int) []search.Hit

// EvaluateTasks scores tasks against search over tools.
func EvaluateTasks(tools []CatalogTool, tasks []Task, s Searcher) []TaskRow {
	type acc struct {
		n          int
		r5, r10, a float64
	}
	accs := map[[2]string]*acc{}
	for _, t := range tasks {
		hits := s(t.Query, 10)
		keys := make([]string, len(hits))
		for i, h := range hits {
			keys[i] = tools[h.Doc].Key()
		}
		met := func(k int) int {
			n := 0
			for _, need := range t.Needs {
				for _, alt := range strings.Split(need, "|") {
					found := false
					for i := 0; i < k && i < len(keys); i++ {
						if keys[i] == alt {
							found = true
							break
						}
					}
					if found {
						n++
						break
					}
				}
			}
			return n
		}
		m5, m10 := met(5), met(10)
		for _, sp := range []string{"all", t.Split} {
			for _, lg := range []string{"all", t.Lang} {
				a := accs[[2]string{sp, lg}]
				if a == nil {
					a = &acc{}
					accs[[2]string{sp, lg}] = a
				}
				a.n++
				a.r5 += float64(m5) / float64(len(t.Needs))
				a.r10 += float64(m10) / float64(len(t.Needs))
				if m10 == len(t.Needs) {
					a.a++
				}
			}
		}
	}
	var rows []TaskRow
	keys := make([][2]string, 0, len(accs))
	for k := range accs {
		keys = append(keys, k)
	}
	order := map[string]int{"all": 0, "dev": 1, "test": 2}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return order[keys[i][0]] < order[keys[j][0]]
		}
		if (keys[i][1] == "all") != (keys[j][1] == "all") {
			return keys[i][1] == "all"
		}
		return keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		a := accs[k]
		n := float64(a.n)
		rows = append(rows, TaskRow{Split: k[0], Lang: k[1], TaskMetrics: TaskMetrics{N: a.n, NeedR5: a.r5 / n, NeedR10: a.r10 / n, AllR10: a.a / n}})
	}
	return rows
}

// TaskMetric returns the row for split and lang.
func TaskMetric(rows []TaskRow, split, lang string) TaskMetrics {
	for _, r := range rows {
		if r.Split == split && r.Lang == lang {
			return r.TaskMetrics
		}
	}
	return TaskMetrics{}
}

// WriteTaskText writes task rows as a table.
func WriteTaskText(w io.Writer, title string, rows []TaskRow) {
	fmt.Fprintf(w, "%s\n%-6s %-4s %4s %7s %7s %7s\n", title, "split", "lang", "n", "need@5", "need@10", "all@10")
	for _, r := range rows {
		fmt.Fprintf(w, "%-6s %-4s %4d %7.3f %7.3f %7.3f\n", r.Split, r.Lang, r.N, r.NeedR5, r.NeedR10, r.AllR10)
	}
}
