package git

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/codemode-go/codemode/api"
	gogit "github.com/go-git/go-git/v5"
)

// TestPathConfinement: every path input stays inside the workspace (`..`, absolute paths
// elsewhere and escaping symlinks are refused) — for every tool that takes one.
func TestPathConfinement(t *testing.T) {
	f := historyRepo(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(f.dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src", filepath.Join(f.dir, "inside")); err != nil {
		t.Fatal(err)
	}
	tools := pluginTools(t, Options{Workspace: f.dir})
	paths := []struct {
		path, want string
	}{
		{"../x", "is outside the workspace"},
		{"src/../../x", "is outside the workspace"},
		{"/etc/passwd", "is outside the workspace"},
		{outside, "is outside the workspace"},
		{"escape", "resolves outside the workspace (through a symlink)"},
		{"escape/secret.txt", "resolves outside the workspace (through a symlink)"},
		{"escape/missing/deeper", "resolves outside the workspace (through a symlink)"},
		{"a\x00b", "contains a NUL byte"},
		{strings.Repeat("a/", 3000), "limit 4096"},
	}
	for _, name := range []string{"git_log", "git_diff", "git_show", "git_blame", "git_status"} {
		for _, tc := range paths {
			t.Run(name+"/"+tc.path[:min(len(tc.path), 20)], func(t *testing.T) {
				got := callErr(t, tools[name], map[string]any{"path": tc.path})
				if !strings.Contains(got, tc.want) || !strings.HasPrefix(got, name+": ") {
					t.Errorf("error %q, want %q", got, tc.want)
				}
			})
		}
	}

	t.Run("inside symlink and absolute paths are fine", func(t *testing.T) {
		for _, p := range []string{filepath.Join(f.dir, "src"), f.dir, "."} {
			var d logDetails
			mustCall(t, tools["git_log"], map[string]any{"path": p}, &d)
			if len(d.Commits) == 0 {
				t.Errorf("%s: no commits", p)
			}
		}
		// Paths are tree paths, as in git: a symlink inside the workspace is accepted but
		// not resolved (git log -- inside lists no commits either).
		var d logDetails
		mustCall(t, tools["git_log"], map[string]any{"path": "inside"}, &d)
	})
}

// TestWorkspaceSubdirectory: a workspace below the worktree root sees only its subtree, with
// paths relative to itself.
func TestWorkspaceSubdirectory(t *testing.T) {
	f := historyRepo(t)
	f.write("src/untracked.go", "package main\n")
	tools := pluginTools(t, Options{Workspace: filepath.Join(f.dir, "src")})

	var log logDetails
	mustCall(t, tools["git_log"], map[string]any{"stat": true}, &log)
	var subjects []string
	for _, c := range log.Commits {
		subjects = append(subjects, c.Subject)
		for _, fc := range c.Files {
			if strings.HasPrefix(fc.Path, "src/") || fc.Path == "README.md" || strings.Contains(fc.OldPath, "/") {
				t.Errorf("%s: path %q %q not relative to the workspace", c.Subject, fc.Path, fc.OldPath)
			}
		}
	}
	if !slices.Equal(subjects, []string{"Rename main.go to app.go", "Greet the world", "Initial commit"}) {
		t.Errorf("subjects = %q", subjects)
	}

	var st statusDetails
	mustCall(t, tools["git_status"], nil, &st)
	if len(st.Staged)+len(st.Unstaged) != 0 || !slices.Equal(st.Untracked, []string{"untracked.go"}) {
		t.Errorf("status = %+v", st)
	}

	var diff diffDetails
	mustCall(t, tools["git_diff"], map[string]any{"from": "v1.0", "to": "HEAD"}, &diff)
	if len(diff.Files) != 1 || diff.Files[0].Path != "app.go" || diff.Files[0].OldPath != "main.go" {
		t.Errorf("diff = %+v", diff.Files)
	}

	var show showDetails
	mustCall(t, tools["git_show"], map[string]any{"rev": "v1.1"}, &show)
	if len(show.Files) != 0 {
		t.Errorf("show lists files outside the workspace: %+v", show.Files)
	}

	var blame blameDetails
	mustCall(t, tools["git_blame"], map[string]any{"path": "app.go"}, &blame)
	if blame.Path != "app.go" || blame.TotalLines != 9 {
		t.Errorf("blame = %+v", blame)
	}
	if got := callErr(t, tools["git_blame"], map[string]any{"path": "../README.md"}); !strings.Contains(got, "outside the workspace") {
		t.Errorf("blame outside: %s", got)
	}
}

func TestNotARepository(t *testing.T) {
	dir := t.TempDir()
	p := Plugin(Options{Workspace: dir})
	if err := p.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v (a workspace without a repository is not a start error)", err)
	}
	for _, tool := range p.Tools {
		input := map[string]any{}
		if tool.Name == "git_blame" {
			input["path"] = "a.txt"
		}
		got := callErr(t, tool, input)
		want := tool.Name + ": the workspace " + dir + " is not inside a git repository"
		if !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, want prefix %q", tool.Name, got, want)
		}
	}
	// A .git written into the workspace later does not redirect the tools (the layout is
	// fixed when first located).
	other := newRepo(t)
	other.write("a.txt", "a\n")
	other.add("a.txt")
	other.commit("c1", "elsewhere", alice)
	if err := os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: "+filepath.Join(other.dir, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := callErr(t, p.Tools[1], nil); !strings.Contains(got, "is not inside a git repository") {
		t.Errorf("after writing .git: %s", got)
	}

	t.Run("missing workspace", func(t *testing.T) {
		p := Plugin(Options{Workspace: filepath.Join(dir, "missing")})
		if err := p.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "no such file or directory") {
			t.Errorf("Start = %v", err)
		}
	})
	t.Run("broken .git file", func(t *testing.T) {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, ".git"), []byte("nonsense"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Plugin(Options{Workspace: d}).Start(context.Background()); err == nil || !strings.Contains(err.Error(), "without a `gitdir:` line") {
			t.Errorf("Start = %v", err)
		}
	})
}

// TestLinkedWorktree: a worktree whose .git is a file pointing into another repository's
// worktrees directory (git worktree add), the layout of this very checkout.
// The objects are packed and big.txt (2 MiB) is above go-git's large-object threshold, so
// its content is streamed from the pack of the common directory.
func TestLinkedWorktree(t *testing.T) {
	f := newRepo(t)
	f.buildHistory(2 << 20)
	if err := f.repo.RepackObjects(&gogit.RepackConfig{}); err != nil {
		t.Fatal(err)
	}
	gitDir := filepath.Join(f.dir, ".git")
	wtGit := filepath.Join(gitDir, "worktrees", "linked")
	linked := filepath.Join(t.TempDir(), "linked")
	for _, d := range []string{wtGit, linked} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(wtGit, "HEAD"):      "ref: refs/heads/feature\n",
		filepath.Join(wtGit, "commondir"): "../..\n",
		filepath.Join(wtGit, "gitdir"):    filepath.Join(linked, ".git") + "\n",
		filepath.Join(linked, ".git"):     "gitdir: " + wtGit + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tools := pluginTools(t, Options{Workspace: linked})
	var d branchesDetails
	mustCall(t, tools["git_branches"], nil, &d)
	if d.Current != "feature" || d.Head != f.c["c3f"].String() {
		t.Errorf("linked worktree: current %q head %s", d.Current, d.Head)
	}
	var log logDetails
	mustCall(t, tools["git_log"], map[string]any{"stat": true, "rev": "v1.0", "limit": 1}, &log)
	if fs := log.Commits[0].Files; len(fs) != 2 || fs[0].Path != "big.txt" || fs[0].Additions != (2<<20)/17+1 {
		t.Errorf("big.txt stat: %+v", fs)
	}
}

// TestBounds: outputs are bounded and say so with truncated.
func TestBounds(t *testing.T) {
	f := newRepo(t)
	var lines strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&lines, "line %d\n", i)
	}
	for i := range 5 {
		f.write(fmt.Sprintf("f%d.txt", i), lines.String())
	}
	f.write("huge.txt", strings.Repeat("x", 5<<20)) // over the default 4 MiB blob bound
	f.add("f0.txt", "f1.txt", "f2.txt", "f3.txt", "f4.txt", "huge.txt")
	f.commit("c1", "many lines", alice)
	for i := range 5 {
		f.write(fmt.Sprintf("f%d.txt", i), strings.ReplaceAll(lines.String(), "line", "LINE"))
	}
	f.write("huge.txt", strings.Repeat("y", 5<<20))
	f.add("f0.txt", "f1.txt", "f2.txt", "f3.txt", "f4.txt", "huge.txt")
	f.commit("c2", "change them all", bob)

	t.Run("per-file patch bytes", func(t *testing.T) {
		var d diffDetails
		mustCall(t, pluginTools(t, Options{Workspace: f.dir})["git_diff"], map[string]any{"from": "HEAD~1", "to": "HEAD", "path": "f0.txt", "maxBytes": 1000}, &d)
		fc := d.Files[0]
		if !fc.Truncated || fc.Patch == nil || len(*fc.Patch) > 1000 || !strings.HasSuffix(*fc.Patch, "\n") || fc.Additions != 2000 || fc.Deletions != 2000 || !d.Truncated {
			t.Errorf("f0.txt: truncated %v, %d patch bytes, +%d -%d", fc.Truncated, len(*fc.Patch), fc.Additions, fc.Deletions)
		}
	})
	t.Run("total patch bytes", func(t *testing.T) {
		var d diffDetails
		mustCall(t, pluginTools(t, Options{Workspace: f.dir, MaxTotalPatchBytes: 50 << 10})["git_diff"], map[string]any{"from": "HEAD~1", "to": "HEAD"}, &d)
		total, withPatch := 0, 0
		for _, fc := range d.Files {
			if fc.Patch != nil {
				total += len(*fc.Patch)
				withPatch++
			}
		}
		if total > 50<<10 || withPatch == len(d.Files) || !d.Truncated {
			t.Errorf("%d bytes in %d of %d patches", total, withPatch, len(d.Files))
		}
	})
	t.Run("files per diff", func(t *testing.T) {
		var d diffDetails
		mustCall(t, pluginTools(t, Options{Workspace: f.dir, MaxFiles: 2})["git_diff"], map[string]any{"from": "HEAD~1", "to": "HEAD"}, &d)
		if len(d.Files) != 2 || !d.Truncated {
			t.Errorf("%d files, truncated %v", len(d.Files), d.Truncated)
		}
	})
	t.Run("large file at the default bound", func(t *testing.T) {
		var d diffDetails
		mustCall(t, pluginTools(t, Options{Workspace: f.dir})["git_diff"], map[string]any{"from": "HEAD~1", "to": "HEAD", "path": "huge.txt"}, &d)
		if fc := d.Files[0]; !fc.Truncated || fc.Patch != nil || fc.Additions != 0 {
			t.Errorf("huge.txt = %+v", fc)
		}
		blame := pluginTools(t, Options{Workspace: f.dir})["git_blame"]
		if got := callErr(t, blame, map[string]any{"path": "huge.txt"}); !strings.Contains(got, "(limit 4194304)") {
			t.Errorf("blame huge.txt: %s", got)
		}
	})
	t.Run("blame lines", func(t *testing.T) {
		var lines strings.Builder
		for i := range maxBlameLines + 10 {
			fmt.Fprintf(&lines, "%d\n", i)
		}
		g := newRepo(t)
		g.write("long.txt", lines.String())
		g.add("long.txt")
		g.commit("c1", "long", alice)
		blame := pluginTools(t, Options{Workspace: g.dir})["git_blame"]
		var d blameDetails
		mustCall(t, blame, map[string]any{"path": "long.txt"}, &d)
		if len(d.Lines) != maxBlameLines || !d.Truncated || d.TotalLines != maxBlameLines+10 {
			t.Errorf("%d lines, truncated %v, total %d", len(d.Lines), d.Truncated, d.TotalLines)
		}
		mustCall(t, blame, map[string]any{"path": "long.txt", "startLine": maxBlameLines + 1}, &d)
		if len(d.Lines) != 10 || d.Truncated || d.Lines[9].Text != fmt.Sprint(maxBlameLines+9) {
			t.Errorf("second page: %d lines, truncated %v", len(d.Lines), d.Truncated)
		}
	})
	t.Run("hostile commit metadata", func(t *testing.T) {
		g := newRepo(t)
		who := alice
		who.Name = strings.Repeat("é", 10<<10)
		g.commit("c1", strings.Repeat("s", 200<<10)+"\n\n"+strings.Repeat("b", 200<<10), who)
		tools := pluginTools(t, Options{Workspace: g.dir})
		var log logDetails
		mustCall(t, tools["git_log"], nil, &log)
		if c := log.Commits[0]; len(c.Subject) != maxSubjectBytes || len(c.Author) > maxIdentBytes || !utf8.ValidString(c.Author) {
			t.Errorf("subject %d bytes, author %d bytes", len(c.Subject), len(c.Author))
		}
		var show showDetails
		mustCall(t, tools["git_show"], nil, &show)
		if len(show.Message) != maxMessageBytes {
			t.Errorf("message %d bytes", len(show.Message))
		}
	})
	t.Run("commits", func(t *testing.T) {
		g := newRepo(t)
		for i := range maxLogLimit + 5 {
			g.commit(fmt.Sprint(i), fmt.Sprintf("commit %d", i), alice)
		}
		var d logDetails
		mustCall(t, pluginTools(t, Options{Workspace: g.dir})["git_log"], map[string]any{"limit": maxLogLimit}, &d)
		if len(d.Commits) != maxLogLimit || !d.Truncated || d.Commits[0].Subject != fmt.Sprintf("commit %d", maxLogLimit+4) {
			t.Errorf("%d commits, truncated %v", len(d.Commits), d.Truncated)
		}
	})
}

// TestWorktreeRename: a file moved in the index (git mv) shows as a rename in worktree diffs.
func TestWorktreeRename(t *testing.T) {
	f := newRepo(t)
	f.write("old.txt", "content\n")
	f.add("old.txt")
	f.commit("c1", "one", alice)
	if _, err := f.wt.Move("old.txt", "new.txt"); err != nil {
		t.Fatal(err)
	}
	var d diffDetails
	mustCall(t, pluginTools(t, Options{Workspace: f.dir})["git_diff"], nil, &d)
	if len(d.Files) != 1 || d.Files[0].Status != "renamed" || d.Files[0].OldPath != "old.txt" || d.Files[0].Path != "new.txt" {
		t.Errorf("files = %+v", d.Files)
	}
}

// TestCancellation: a cancelled context stops the walks with the context's error.
func TestCancellation(t *testing.T) {
	f := historyRepo(t)
	tools := pluginTools(t, Options{Workspace: f.dir})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	inputs := map[string]string{
		"git_log":      `{"stat": true}`,
		"git_diff":     `{"from": "HEAD~4", "to": "HEAD"}`,
		"git_show":     `{}`,
		"git_blame":    `{"path": "README.md"}`,
		"git_status":   `{}`,
		"git_branches": `{}`,
	}
	for name, input := range inputs {
		_, err := tools[name].Execute(ctx, &api.Call{Input: json.RawMessage(input)})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", name, err)
		}
	}
}
