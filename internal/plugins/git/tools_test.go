package git

import (
	"slices"
	"strings"
	"testing"

	gogit "github.com/go-git/go-git/v5"
)

// historyRepo builds the standard history with a big.txt larger than the diff bound used by
// the tools it returns (MaxBlobBytes 64 KiB), and a dirty worktree.
func historyRepo(t *testing.T) *fixture {
	t.Helper()
	f := newRepo(t)
	f.buildHistory(100 << 10)
	f.dirty()
	return f
}

func TestLog(t *testing.T) {
	f := historyRepo(t)
	tools := pluginTools(t, Options{Workspace: f.dir, MaxBlobBytes: 64 << 10})
	log := tools["git_log"]
	subjects := func(d logDetails) []string {
		var s []string
		for _, c := range d.Commits {
			s = append(s, c.Subject)
		}
		return s
	}
	tests := []struct {
		name      string
		input     map[string]any
		want      []string
		truncated bool
	}{
		{"all", map[string]any{}, []string{"Update the binary", "Merge branch 'feature'", "Rename main.go to app.go", "Add a feature", "Greet the world", "Initial commit"}, false},
		{"limit", map[string]any{"limit": 2}, []string{"Update the binary", "Merge branch 'feature'"}, true},
		{"skip", map[string]any{"limit": 2, "skip": 4}, []string{"Greet the world", "Initial commit"}, false},
		{"path file", map[string]any{"path": "README.md"}, []string{"Add a feature", "Initial commit"}, false},
		{"path dir", map[string]any{"path": "src"}, []string{"Rename main.go to app.go", "Greet the world", "Initial commit"}, false},
		{"path deleted file", map[string]any{"path": "src/main.go"}, []string{"Rename main.go to app.go", "Greet the world", "Initial commit"}, false},
		{"author", map[string]any{"author": "CAROL"}, []string{"Update the binary", "Add a feature"}, false},
		{"author email", map[string]any{"author": "bob@"}, []string{"Merge branch 'feature'", "Greet the world"}, false},
		{"since", map[string]any{"since": "2024-01-05"}, []string{"Update the binary", "Merge branch 'feature'", "Rename main.go to app.go"}, false},
		{"since rfc3339", map[string]any{"since": "2024-01-06T10:00:00Z"}, []string{"Update the binary", "Merge branch 'feature'"}, false},
		{"rev branch", map[string]any{"rev": "feature"}, []string{"Add a feature", "Greet the world", "Initial commit"}, false},
		{"rev tag", map[string]any{"rev": "v1.0"}, []string{"Greet the world", "Initial commit"}, false},
		{"rev annotated tag", map[string]any{"rev": "v1.1", "limit": 1}, []string{"Merge branch 'feature'"}, true},
		{"rev HEAD~n", map[string]any{"rev": "HEAD~2", "limit": 1}, []string{"Rename main.go to app.go"}, true},
		{"rev merge parent", map[string]any{"rev": "HEAD~1^2"}, []string{"Add a feature", "Greet the world", "Initial commit"}, false},
		{"rev short hash", map[string]any{"rev": f.c["c2"].String()[:7]}, []string{"Greet the world", "Initial commit"}, false},
		{"rev full hash", map[string]any{"rev": f.c["c1"].String()}, []string{"Initial commit"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d logDetails
			mustCall(t, log, tc.input, &d)
			if got := subjects(d); !slices.Equal(got, tc.want) {
				t.Errorf("subjects = %q, want %q", got, tc.want)
			}
			if d.Truncated != tc.truncated {
				t.Errorf("truncated = %v", d.Truncated)
			}
		})
	}

	t.Run("fields", func(t *testing.T) {
		var d logDetails
		res := mustCall(t, log, map[string]any{"limit": 6}, &d)
		first := d.Commits[5]
		if first.Hash != f.c["c1"].String() || first.Author != "Alice Liddell" || first.Email != "alice@example.com" ||
			first.Date != "2024-01-02T10:00:00Z" || first.Files != nil {
			t.Errorf("first commit = %+v", first)
		}
		if !strings.Contains(res.Content[0].Text, f.c["c1"].String()[:12]+" 2024-01-02 Alice Liddell  Initial commit") {
			t.Errorf("text:\n%s", res.Content[0].Text)
		}
	})

	t.Run("stat", func(t *testing.T) {
		var d logDetails
		mustCall(t, log, map[string]any{"stat": true}, &d)
		files := map[string][]statFile{}
		for _, c := range d.Commits {
			for _, f := range c.Files {
				files[c.Subject] = append(files[c.Subject], *f)
			}
		}
		want := map[string][]statFile{
			"Initial commit": {
				{Path: ".gitignore", Status: "added", Additions: 1},
				{Path: "README.md", Status: "added", Additions: 3},
				{Path: "data.bin", Status: "added", Binary: true},
				{Path: "src/main.go", Status: "added", Additions: 7},
			},
			"Greet the world": {
				{Path: "big.txt", Status: "added"}, // larger than MaxBlobBytes: no counts
				{Path: "src/main.go", Status: "modified", Additions: 3, Deletions: 1},
			},
			"Add a feature": {
				{Path: "README.md", Status: "modified", Additions: 2},
				{Path: "feature.go", Status: "added", Additions: 3},
			},
			"Rename main.go to app.go": {
				{Path: "src/app.go", OldPath: "src/main.go", Status: "renamed", Additions: 1, Deletions: 1},
			},
			// The merge lists no files, as git log --stat.
			"Update the binary": {
				{Path: "data.bin", Status: "modified", Binary: true},
			},
		}
		for subj, w := range want {
			if !slices.Equal(files[subj], w) {
				t.Errorf("%s: files = %+v, want %+v", subj, files[subj], w)
			}
		}
		if len(files) != len(want) {
			t.Errorf("commits with files: %d, want %d", len(files), len(want))
		}
	})
}

func TestLogErrors(t *testing.T) {
	f := historyRepo(t)
	log := pluginTools(t, Options{Workspace: f.dir})["git_log"]
	tests := []struct {
		name  string
		input any
		want  string
	}{
		{"unknown rev", map[string]any{"rev": "nope"}, `git_log: unknown revision "nope"`},
		{"option-like rev", map[string]any{"rev": "--all"}, `git_log: "--all" is not a revision`},
		{"limit", map[string]any{"limit": 501}, "git_log: limit must be between 1 and 500, not 501"},
		{"since", map[string]any{"since": "yesterday"}, `git_log: since: "yesterday" is not a date`},
		{"unknown field", map[string]any{"count": 3}, `git_log: unknown field "count" (accepted: rev, path, limit, skip, since, author, stat)`},
		{"wrong type", map[string]any{"limit": "3"}, `git_log: field "limit" must be an integer, not string`},
		{"not an object", `[1]`, "git_log: input must be a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := callErr(t, log, tc.input); !strings.Contains(got, tc.want) {
				t.Errorf("error %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	f := historyRepo(t)
	tools := pluginTools(t, Options{Workspace: f.dir, MaxBlobBytes: 64 << 10})
	diff := tools["git_diff"]

	t.Run("revisions with rename", func(t *testing.T) {
		var d diffDetails
		res := mustCall(t, diff, map[string]any{"from": "v1.0", "to": "HEAD"}, &d)
		if d.From != f.c["c2"].String() || d.To != f.c["c6"].String() {
			t.Errorf("from %s to %s", d.From, d.To)
		}
		got := map[string]*fileChange{}
		for _, fc := range d.Files {
			got[fc.Path] = fc
		}
		if len(got) != 4 {
			t.Errorf("files: %+v", d.Files)
		}
		app := got["src/app.go"]
		if app == nil || app.Status != "renamed" || app.OldPath != "src/main.go" || app.Additions != 1 || app.Deletions != 1 ||
			app.Patch == nil || !strings.Contains(*app.Patch, "-// v2\n+// v3\n") || !strings.HasPrefix(*app.Patch, "@@ -") {
			t.Errorf("src/app.go = %+v", app)
		}
		bin := got["data.bin"]
		if bin == nil || !bin.Binary || bin.Patch != nil || bin.Status != "modified" {
			t.Errorf("data.bin = %+v", bin)
		}
		if fc := got["feature.go"]; fc == nil || fc.Status != "added" || fc.Additions != 3 || *fc.Patch != "@@ -0,0 +1,3 @@\n+package main\n+\n+func feature() int { return 42 }\n" {
			t.Errorf("feature.go = %+v", fc)
		}
		if fc := got["README.md"]; fc == nil || fc.Status != "modified" || fc.Additions != 2 {
			t.Errorf("README.md = %+v", fc)
		}
		if d.Truncated {
			t.Error("truncated")
		}
		text := res.Content[0].Text
		for _, want := range []string{"R src/main.go → src/app.go (+1 -1)", "M data.bin (binary)", "--- a/src/main.go\n+++ b/src/app.go\n@@"} {
			if !strings.Contains(text, want) {
				t.Errorf("text lacks %q:\n%s", want, text)
			}
		}
	})

	t.Run("large file", func(t *testing.T) {
		var d diffDetails
		mustCall(t, diff, map[string]any{"from": "HEAD~4", "to": "v1.0", "path": "big.txt"}, &d)
		if len(d.Files) != 1 || !d.Files[0].Truncated || d.Files[0].Patch != nil || d.Files[0].Additions != 0 || !d.Truncated {
			t.Errorf("big.txt: %+v", d.Files)
		}
	})

	t.Run("worktree", func(t *testing.T) {
		var d diffDetails
		mustCall(t, diff, map[string]any{}, &d)
		if d.To != "worktree" || d.From != f.c["c6"].String() {
			t.Errorf("from %s to %s", d.From, d.To)
		}
		// Tracked changes only: the unstaged README edit and the staged new file; not the
		// untracked or ignored files.
		var paths []string
		for _, fc := range d.Files {
			paths = append(paths, fc.Path+":"+fc.Status)
		}
		if !slices.Equal(paths, []string{"README.md:modified", "staged.txt:added"}) {
			t.Errorf("files = %v", paths)
		}
		if p := d.Files[0].Patch; p == nil || !strings.Contains(*p, "-A demo repository.\n+A demo repository, edited.\n") {
			t.Errorf("README patch = %v", p)
		}
	})

	t.Run("staged", func(t *testing.T) {
		var d diffDetails
		mustCall(t, diff, map[string]any{"staged": true}, &d)
		if d.To != "index" || len(d.Files) != 1 || d.Files[0].Path != "staged.txt" || d.Files[0].Additions != 1 {
			t.Errorf("staged diff = %+v", d.Files)
		}
	})

	t.Run("worktree from an older revision", func(t *testing.T) {
		var d diffDetails
		mustCall(t, diff, map[string]any{"from": "v1.0", "path": "src"}, &d)
		// Worktree diffs pair renames only when the content is unchanged.
		var got []string
		for _, fc := range d.Files {
			got = append(got, fc.Path+":"+fc.Status)
		}
		if !slices.Equal(got, []string{"src/app.go:added", "src/main.go:deleted"}) {
			t.Errorf("files = %v", got)
		}
	})

	t.Run("per-file bound", func(t *testing.T) {
		var d diffDetails
		mustCall(t, diff, map[string]any{"from": "HEAD~4", "to": "HEAD~3", "path": "src/main.go", "maxBytes": 256}, &d)
		fc := d.Files[0]
		if fc.Patch != nil && len(*fc.Patch) > 256 {
			t.Errorf("patch is %d bytes", len(*fc.Patch))
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			input map[string]any
			want  string
		}{
			{map[string]any{"staged": true, "to": "HEAD"}, "git_diff: staged compares with the index; leave out to"},
			{map[string]any{"from": "HEAD~99"}, `git_diff: unknown revision "HEAD~99"`},
			{map[string]any{"maxBytes": 10}, "git_diff: maxBytes must be between 256 and 1048576, not 10"},
		} {
			if got := callErr(t, diff, tc.input); !strings.Contains(got, tc.want) {
				t.Errorf("error %q, want %q", got, tc.want)
			}
		}
	})
}

func TestShow(t *testing.T) {
	f := historyRepo(t)
	show := pluginTools(t, Options{Workspace: f.dir})["git_show"]

	t.Run("commit", func(t *testing.T) {
		var d showDetails
		res := mustCall(t, show, map[string]any{"rev": "HEAD~4"}, &d)
		if d.Hash != f.c["c1"].String() || d.Author != "Alice Liddell" || d.Message != "Initial commit\n\nThe first files." {
			t.Errorf("show = %+v", d)
		}
		if len(d.Files) != 4 || d.Files[2].Path != "data.bin" || !d.Files[2].Binary {
			t.Errorf("files = %+v", d.Files)
		}
		if !strings.Contains(res.Content[0].Text, "Author: Alice Liddell <alice@example.com>") {
			t.Errorf("text:\n%s", res.Content[0].Text)
		}
	})

	t.Run("merge against the first parent", func(t *testing.T) {
		var d showDetails
		res := mustCall(t, show, map[string]any{"rev": "v1.1"}, &d)
		var paths []string
		for _, fc := range d.Files {
			paths = append(paths, fc.Path)
		}
		if d.Hash != f.c["c5"].String() || !slices.Equal(paths, []string{"README.md", "feature.go"}) {
			t.Errorf("merge: %s %v", d.Hash, paths)
		}
		if !strings.Contains(res.Content[0].Text, "Merge: "+f.c["c4"].String()+" "+f.c["c3f"].String()) {
			t.Errorf("text:\n%s", res.Content[0].Text)
		}
	})

	t.Run("path", func(t *testing.T) {
		var d showDetails
		mustCall(t, show, map[string]any{"rev": "HEAD~2", "path": "src"}, &d)
		if len(d.Files) != 1 || d.Files[0].Path != "src/app.go" || d.Files[0].OldPath != "src/main.go" {
			t.Errorf("files = %+v", d.Files)
		}
	})
}

func TestStatus(t *testing.T) {
	f := historyRepo(t)
	status := pluginTools(t, Options{Workspace: f.dir})["git_status"]
	var d statusDetails
	res := mustCall(t, status, map[string]any{}, &d)
	if d.Branch != "master" || d.Head != f.c["c6"].String() || d.Truncated {
		t.Errorf("branch %q head %s", d.Branch, d.Head)
	}
	if len(d.Staged) != 1 || *d.Staged[0] != (statusChange{"staged.txt", "added"}) {
		t.Errorf("staged = %+v", d.Staged)
	}
	if len(d.Unstaged) != 1 || *d.Unstaged[0] != (statusChange{"README.md", "modified"}) {
		t.Errorf("unstaged = %+v", d.Unstaged)
	}
	if !slices.Equal(d.Untracked, []string{"notes.txt"}) {
		t.Errorf("untracked = %v (debug.log is ignored)", d.Untracked)
	}
	if !strings.Contains(res.Content[0].Text, "On branch master at "+f.c["c6"].String()[:12]) {
		t.Errorf("text:\n%s", res.Content[0].Text)
	}

	t.Run("path", func(t *testing.T) {
		var d statusDetails
		mustCall(t, status, map[string]any{"path": "notes.txt"}, &d)
		if len(d.Staged)+len(d.Unstaged) != 0 || !slices.Equal(d.Untracked, []string{"notes.txt"}) {
			t.Errorf("status = %+v", d)
		}
	})

	t.Run("deleted and detached", func(t *testing.T) {
		f := newRepo(t)
		f.write("a.txt", "a\n")
		f.add("a.txt")
		f.commit("c1", "one", alice)
		f.write("b.txt", "b\n")
		f.add("b.txt")
		f.commit("c2", "two", bob)
		if err := f.wt.Checkout(&gogit.CheckoutOptions{Hash: f.c["c1"], Force: true}); err != nil {
			t.Fatal(err)
		}
		var d statusDetails
		mustCall(t, pluginTools(t, Options{Workspace: f.dir})["git_status"], nil, &d)
		if d.Branch != "" || d.Head != f.c["c1"].String() {
			t.Errorf("detached: %+v", d)
		}
	})

	t.Run("unborn", func(t *testing.T) {
		f := newRepo(t)
		f.write("a.txt", "a\n")
		f.add("a.txt")
		var d statusDetails
		res := mustCall(t, pluginTools(t, Options{Workspace: f.dir})["git_status"], nil, &d)
		if d.Branch != "master" || d.Head != "" || len(d.Staged) != 1 {
			t.Errorf("unborn: %+v", d)
		}
		if !strings.Contains(res.Content[0].Text, "no commits yet") {
			t.Errorf("text: %s", res.Content[0].Text)
		}
		if got := callErr(t, pluginTools(t, Options{Workspace: f.dir})["git_log"], nil); !strings.Contains(got, "no commits yet") {
			t.Errorf("log on an unborn branch: %s", got)
		}
	})
}

func TestBlame(t *testing.T) {
	f := historyRepo(t)
	blame := pluginTools(t, Options{Workspace: f.dir})["git_blame"]
	owners := func(d blameDetails) []string {
		var s []string
		for _, l := range d.Lines {
			s = append(s, l.Author)
		}
		return s
	}

	t.Run("merge brings the branch's lines", func(t *testing.T) {
		var d blameDetails
		res := mustCall(t, blame, map[string]any{"path": "README.md"}, &d)
		want := []string{"Alice Liddell", "Alice Liddell", "Alice Liddell", "Carol Danvers", "Carol Danvers"}
		if got := owners(d); !slices.Equal(got, want) {
			t.Errorf("owners = %q, want %q", got, want)
		}
		if d.TotalLines != 5 || d.Truncated || d.Lines[3].Text != "" || d.Lines[4].Text != "Now with features." || d.Lines[4].Hash != f.c["c3f"].String() {
			t.Errorf("lines = %+v", d.Lines)
		}
		if !strings.Contains(res.Content[0].Text, f.c["c3f"].String()[:8]+" (Carol Danvers 2024-01-04     5) Now with features.") {
			t.Errorf("text:\n%s", res.Content[0].Text)
		}
	})

	t.Run("across a rename", func(t *testing.T) {
		var d blameDetails
		mustCall(t, blame, map[string]any{"path": "src/app.go"}, &d)
		var got []string
		for _, l := range d.Lines {
			got = append(got, l.Hash[:7])
		}
		c1, c2, c4 := f.c["c1"].String()[:7], f.c["c2"].String()[:7], f.c["c4"].String()[:7]
		// Alice wrote the file, Bob changed the greeting and added the last lines, and the
		// rename changed the final comment.
		want := []string{c1, c1, c1, c1, c1, c2, c1, c2, c4}
		if !slices.Equal(got, want) {
			t.Errorf("owners = %v, want %v", got, want)
		}
	})

	t.Run("history of an older revision", func(t *testing.T) {
		var d blameDetails
		mustCall(t, blame, map[string]any{"path": "src/main.go", "rev": "v1.0"}, &d)
		var got []string
		for _, l := range d.Lines {
			got = append(got, l.Author[:3])
		}
		// Bob changed the greeting (line 6) and added the two last lines.
		want := []string{"Ali", "Ali", "Ali", "Ali", "Ali", "Bob", "Ali", "Bob", "Bob"}
		if !slices.Equal(got, want) {
			t.Errorf("owners = %v, want %v", got, want)
		}
	})

	t.Run("window", func(t *testing.T) {
		var d blameDetails
		mustCall(t, blame, map[string]any{"path": "README.md", "startLine": 4, "endLine": 4}, &d)
		if len(d.Lines) != 1 || d.Lines[0].Line != 4 || d.TotalLines != 5 {
			t.Errorf("window = %+v", d)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			input map[string]any
			want  string
		}{
			{map[string]any{}, "git_blame: path is required"},
			{map[string]any{"path": "nope.txt"}, "git_blame: nope.txt does not exist in"},
			{map[string]any{"path": "data.bin"}, "git_blame: the file is binary"},
			{map[string]any{"path": "src"}, "does not exist"},
			{map[string]any{"path": "README.md", "startLine": 99}, "git_blame: startLine 99 is past the end of README.md (5 lines)"},
			{map[string]any{"path": "README.md", "startLine": 3, "endLine": 2}, "endLine must be between 3"},
		} {
			if got := callErr(t, blame, tc.input); !strings.Contains(got, tc.want) {
				t.Errorf("%v: error %q, want %q", tc.input, got, tc.want)
			}
		}
	})
}

func TestBranches(t *testing.T) {
	f := historyRepo(t)
	var d branchesDetails
	res := mustCall(t, pluginTools(t, Options{Workspace: f.dir})["git_branches"], map[string]any{}, &d)
	if d.Current != "master" || d.Head != f.c["c6"].String() || d.Truncated {
		t.Errorf("current %q head %s", d.Current, d.Head)
	}
	var names []string
	for _, b := range d.Branches {
		names = append(names, b.Name)
	}
	if !slices.Equal(names, []string{"feature", "master"}) || d.Branches[0].Hash != f.c["c3f"].String() ||
		d.Branches[0].Subject != "Add a feature" || d.Branches[0].Date != "2024-01-04T10:00:00Z" {
		t.Errorf("branches = %+v", d.Branches)
	}
	if len(d.Tags) != 2 || *d.Tags[0] != (tag{"v1.0", f.c["c2"].String()}) || *d.Tags[1] != (tag{"v1.1", f.c["c5"].String()}) {
		t.Errorf("tags = %+v", d.Tags)
	}
	if !strings.Contains(res.Content[0].Text, "* master "+f.c["c6"].String()[:12]) {
		t.Errorf("text:\n%s", res.Content[0].Text)
	}
}
