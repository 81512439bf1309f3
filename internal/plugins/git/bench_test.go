package git

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/codemode-go/codemode/api"
)

// thisRepo returns the root of the checkout this package is built from, or skips.
func thisRepo(b *testing.B) string {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		b.Skip("not a git checkout")
	}
	return root
}

func benchTool(b *testing.B, name, input string) {
	p := Plugin(Options{Workspace: thisRepo(b)})
	if err := p.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	var tool *api.Tool
	for _, t := range p.Tools {
		if t.Name == name {
			tool = t
		}
	}
	call := &api.Call{Input: json.RawMessage(input)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Execute(context.Background(), call); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLog100 is git_log with limit 100 on this repository: opening the repository for
// the call and walking 100 commits.
func BenchmarkLog100(b *testing.B) { benchTool(b, "git_log", `{"limit": 100}`) }

// BenchmarkLog50Stat is git_log with limit 50 and per-file line counts.
func BenchmarkLog50Stat(b *testing.B) { benchTool(b, "git_log", `{"limit": 50, "stat": true}`) }

// BenchmarkStatus is git_status on this repository's worktree.
func BenchmarkStatus(b *testing.B) { benchTool(b, "git_status", `{}`) }
