package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// gitRepo creates a repository with two commits (README.md, then notes.txt) with go-git and
// returns its worktree: the workspace of the §20 run, so the git plugin has a history to read.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	r, err := gogit.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, f := range []struct{ path, content, msg string }{
		{"README.md", "# e2e\nThe workspace of the end-to-end test.\n", "Add the README"},
		{"notes.txt", "first note\n", "Add notes"},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.path), []byte(f.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(f.path); err != nil {
			t.Fatal(err)
		}
		sig := &object.Signature{Name: "E2E Tester", Email: "e2e@example.com", When: when.Add(time.Duration(i) * time.Hour)}
		if _, err := wt.Commit(f.msg, &gogit.CommitOptions{Author: sig, Committer: sig}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// workspace is a plain directory with a README.
func workspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# plain workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
