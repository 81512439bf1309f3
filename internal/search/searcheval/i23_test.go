package searcheval

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/codemode-go/codemode/internal/search"
)

// Issue 23's evaluation sets (testdata/i23/README.md). Only the dev halves are
// printed unless SEARCHEVAL_HELDOUT=1: the held-out halves are scored once, at
// the end of a change, never looked at while tuning.
var (
	i23Dir      = filepath.Join("..", "testdata", "i23")
	i23Queries  = filepath.Join(i23Dir, "queries-25.json")
	i23Tasks    = filepath.Join(i23Dir, "tasks-ml.json")
	i23Overlay  = filepath.Join(i23Dir, "catalog-ml-overlay.json")
	showHeldOut = os.Getenv("SEARCHEVAL_HELDOUT") == "1"
)

// visible hides the held-out half and the "all" rows that include it.
func visible(split string) bool { return showHeldOut || split == "dev" }

// TestIssue23Figures logs the figures of both issue-23 sets (go test -v -run
// TestIssue23Figures ./internal/search/searcheval).
func TestIssue23Figures(t *testing.T) {
	tools, err := LoadCatalog(catalogPath)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := LoadQueries(i23Queries)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{ModeNative, ModeMCP} {
		r := Evaluate(tools, qs, mode)
		var rows []Row
		for _, row := range r.Rows {
			if visible(row.Split) {
				rows = append(rows, row)
			}
		}
		r.Rows = rows
		var misses []Miss
		for _, m := range r.Misses {
			if visible(m.Split) {
				misses = append(misses, m)
			}
		}
		r.Misses = misses
		var buf bytes.Buffer
		r.WriteText(&buf)
		t.Log("\n" + buf.String())
	}
	ml, err := LoadMultilingual(catalogPath, i23Overlay)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := LoadTasks(i23Tasks)
	if err != nil {
		t.Fatal(err)
	}
	ix := search.NewIndex(Docs(ml, ModeMCP))
	rows := EvaluateTasks(ml, tasks, ix.Search)
	var vis []TaskRow
	for _, r := range rows {
		if visible(r.Split) {
			vis = append(vis, r)
		}
	}
	var buf bytes.Buffer
	WriteTaskText(&buf, "long multilingual tasks (mcp mode)", vis)
	t.Log("\n" + buf.String())
}
