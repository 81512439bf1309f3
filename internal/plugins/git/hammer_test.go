package git

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codemode-go/codemode/api"
)

// TestHammer calls every tool from many goroutines at once: go-git's storage is not safe for
// concurrent use, so each call must have its own (run with -race).
func TestHammer(t *testing.T) {
	f := historyRepo(t)
	tools := pluginTools(t, Options{Workspace: f.dir})
	inputs := map[string]string{
		"git_log":      `{"stat": true}`,
		"git_diff":     `{"from": "v1.0"}`,
		"git_show":     `{"rev": "HEAD~2"}`,
		"git_blame":    `{"path": "src/app.go"}`,
		"git_status":   `{}`,
		"git_branches": `{}`,
	}
	want := map[string]string{}
	for name, in := range inputs {
		res, err := tools[name].Execute(context.Background(), &api.Call{Input: json.RawMessage(in)})
		if err != nil {
			t.Fatal(err)
		}
		want[name] = string(res.Details)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 6 {
				name := []string{"git_log", "git_diff", "git_show", "git_blame", "git_status", "git_branches"}[(g+i)%6]
				res, err := tools[name].Execute(context.Background(), &api.Call{Input: json.RawMessage(inputs[name])})
				if err != nil {
					t.Error(err)
					return
				}
				if string(res.Details) != want[name] {
					t.Errorf("%s: concurrent result differs", name)
				}
			}
		})
	}
	wg.Wait()
}

// FuzzRepoPath: whatever the input, a path is refused or lands inside the workspace's scope
// without a `..` segment.
func FuzzRepoPath(f *testing.F) {
	for _, s := range []string{"", ".", "..", "a/../..", "/etc", "a/b", "./a//b/", "a\x00", "../ws/x", "sub/../../ws"} {
		f.Add(s)
	}
	root := f.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(ws, "up")); err != nil {
		f.Fatal(err)
	}
	l := &layout{wsAbs: ws, wsReal: ws, worktree: root, scope: "ws"}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := l.repoPath("t", p)
		if err != nil {
			return
		}
		if !inScope("ws", got) || strings.Contains("/"+got+"/", "/../") || strings.HasPrefix(got, "ws/up/") || got == "ws/up" {
			t.Fatalf("repoPath(%q) = %q", p, got)
		}
	})
}

// FuzzParseSince: the date parser never panics and accepts only what it documents.
func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"2024-01-02", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05+02:00", "yesterday", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := parseSince(s); err == nil && len(s) < 10 {
			t.Fatalf("parseSince(%q) accepted", s)
		}
	})
}
