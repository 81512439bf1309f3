package git

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/contract"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// fixture is a real repository built with go-git: several authors, a branch merged back, tags,
// a rename, a binary file, a large file, and a dirty worktree.
type fixture struct {
	t    *testing.T
	dir  string // worktree root
	repo *gogit.Repository
	wt   *gogit.Worktree
	// commits by label
	c map[string]plumbing.Hash
	// now is the clock of the next commit
	now time.Time
}

var (
	alice = object.Signature{Name: "Alice Liddell", Email: "alice@example.com"}
	bob   = object.Signature{Name: "Bob Builder", Email: "bob@example.com"}
	carol = object.Signature{Name: "Carol Danvers", Email: "carol@example.com"}
)

func newRepo(t *testing.T) *fixture {
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
	return &fixture{t: t, dir: dir, repo: r, wt: wt, c: map[string]plumbing.Hash{},
		now: time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)}
}

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) add(paths ...string) {
	f.t.Helper()
	for _, p := range paths {
		if _, err := f.wt.Add(p); err != nil {
			f.t.Fatalf("add %s: %v", p, err)
		}
	}
}

func (f *fixture) remove(p string) {
	f.t.Helper()
	if _, err := f.wt.Remove(p); err != nil {
		f.t.Fatalf("rm %s: %v", p, err)
	}
}

// commit commits the index as who, a day after the previous commit.
func (f *fixture) commit(label, msg string, who object.Signature, parents ...plumbing.Hash) plumbing.Hash {
	f.t.Helper()
	f.now = f.now.Add(24 * time.Hour)
	sig := who
	sig.When = f.now
	opts := &gogit.CommitOptions{Author: &sig, Committer: &sig, AllowEmptyCommits: true}
	if len(parents) > 0 {
		head, err := f.repo.Head()
		if err != nil {
			f.t.Fatal(err)
		}
		opts.Parents = append([]plumbing.Hash{head.Hash()}, parents...)
	}
	h, err := f.wt.Commit(msg, opts)
	if err != nil {
		f.t.Fatalf("commit %s: %v", label, err)
	}
	f.c[label] = h
	return h
}

func (f *fixture) checkout(branch string, create bool) {
	f.t.Helper()
	err := f.wt.Checkout(&gogit.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(branch), Create: create, Force: true})
	if err != nil {
		f.t.Fatalf("checkout %s: %v", branch, err)
	}
}

// binaryData is a small file with NUL bytes.
var binaryData = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + strings.Repeat("\x00\x01", 50)

// mainGo is the program the history edits.
const mainGo = `package main

import "fmt"

func main() {
	fmt.Println("hello")
}
`

// buildHistory makes the standard history:
//
//	c1 alice  README.md, src/main.go, data.bin, .gitignore
//	c2 bob    src/main.go edited, big.txt (largeBytes) added         tag v1.0
//	  feature (carol): c3f README.md edited, feature.go added
//	c4 alice  src/main.go renamed to src/app.go (one line changed)
//	c5 bob    merge feature                                          tag v1.1 (annotated)
//	c6 carol  data.bin changed
func (f *fixture) buildHistory(largeBytes int) {
	f.t.Helper()
	f.write(".gitignore", "*.log\n")
	f.write("README.md", "# Demo\n\nA demo repository.\n")
	f.write("src/main.go", mainGo)
	f.write("data.bin", binaryData)
	f.add(".gitignore", "README.md", "src/main.go", "data.bin")
	f.commit("c1", "Initial commit\n\nThe first files.\n", alice)

	f.write("src/main.go", strings.Replace(mainGo, `"hello"`, `"hello, world"`, 1)+"\n// v2\n")
	f.write("big.txt", strings.Repeat("0123456789abcdef\n", largeBytes/17+1))
	f.add("src/main.go", "big.txt")
	f.commit("c2", "Greet the world", bob)
	if _, err := f.repo.CreateTag("v1.0", f.c["c2"], nil); err != nil {
		f.t.Fatal(err)
	}

	f.checkout("feature", true)
	f.write("README.md", "# Demo\n\nA demo repository.\n\nNow with features.\n")
	f.write("feature.go", "package main\n\nfunc feature() int { return 42 }\n")
	f.add("README.md", "feature.go")
	f.commit("c3f", "Add a feature", carol)

	f.checkout("master", false)
	if _, err := os.Stat(filepath.Join(f.dir, "feature.go")); err == nil {
		f.t.Fatal("checkout left feature.go behind")
	}
	content, err := os.ReadFile(filepath.Join(f.dir, "src/main.go"))
	if err != nil {
		f.t.Fatal(err)
	}
	f.remove("src/main.go")
	f.write("src/app.go", strings.Replace(string(content), "// v2", "// v3", 1))
	f.add("src/app.go")
	f.commit("c4", "Rename main.go to app.go", alice)

	f.write("README.md", "# Demo\n\nA demo repository.\n\nNow with features.\n")
	f.write("feature.go", "package main\n\nfunc feature() int { return 42 }\n")
	f.add("README.md", "feature.go")
	f.commit("c5", "Merge branch 'feature'", bob, f.c["c3f"])
	sig := bob
	sig.When = f.now
	if _, err := f.repo.CreateTag("v1.1", f.c["c5"], &gogit.CreateTagOptions{Tagger: &sig, Message: "Release 1.1"}); err != nil {
		f.t.Fatal(err)
	}

	f.write("data.bin", binaryData+"\x00more")
	f.add("data.bin")
	f.commit("c6", "Update the binary", carol)
}

// dirty leaves the worktree with an unstaged edit, a staged new file, an untracked file and
// an ignored one.
func (f *fixture) dirty() {
	f.t.Helper()
	f.write("README.md", "# Demo\n\nA demo repository, edited.\n\nNow with features.\n")
	f.write("staged.txt", "staged\n")
	f.add("staged.txt")
	f.write("notes.txt", "untracked\n")
	f.write("debug.log", "ignored\n")
}

// tools returns the plugin's tools by name for a workspace.
func pluginTools(t *testing.T, opts Options) map[string]*api.Tool {
	t.Helper()
	p := Plugin(opts)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := map[string]*api.Tool{}
	for _, tool := range p.Tools {
		m[tool.Name] = tool
	}
	return m
}

// call runs a tool and validates a successful result's details against the tool's output
// schema, as the dispatcher does (O4).
func call(t *testing.T, tool *api.Tool, input any) (*api.Result, error) {
	t.Helper()
	raw, ok := input.(string)
	if !ok {
		b, err := json.Marshal(input)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	res, err := tool.Execute(context.Background(), &api.Call{ToolID: tool.ID(), Input: json.RawMessage(raw)})
	if err != nil {
		return nil, err
	}
	if len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text == "" {
		t.Fatalf("%s: content is not one non-empty text block: %+v", tool.Name, res.Content)
	}
	s, err := contract.Compile(tool.ID(), tool.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(res.Details); err != nil {
		t.Fatalf("%s: details do not match the output schema: %v\n%s", tool.Name, err, res.Details)
	}
	return res, nil
}

// mustCall calls a tool that must succeed and decodes its details into out.
func mustCall(t *testing.T, tool *api.Tool, input any, out any) *api.Result {
	t.Helper()
	res, err := call(t, tool, input)
	if err != nil {
		t.Fatalf("%s(%v): %v", tool.Name, input, err)
	}
	dec := json.NewDecoder(bytes.NewReader(res.Details))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s: decoding details: %v\n%s", tool.Name, err, res.Details)
	}
	return res
}

// callErr calls a tool that must fail and returns the error text.
func callErr(t *testing.T, tool *api.Tool, input any) string {
	t.Helper()
	res, err := call(t, tool, input)
	if err == nil {
		t.Fatalf("%s(%v) succeeded: %s", tool.Name, input, res.Details)
	}
	return err.Error()
}
