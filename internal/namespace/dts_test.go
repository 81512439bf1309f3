package namespace

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	esbuild "github.com/evanw/esbuild/pkg/api"

	"github.com/codemode-go/codemode/api"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestDTSGolden(t *testing.T) { // N5: a namespace's declarations, typed from its tools; valid TypeScript
	ns := api.Namespace{ID: "git", GlobalName: "Git", RequiredToolNames: []string{"git_log", "git_show"},
		CreateScope: func(context.Context, api.NamespaceContext) (any, error) {
			return map[string]any{
				"log":     api.NamespaceTool("git_log", nil),
				"history": map[string]any{"show": api.NamespaceTool("git_show", func(a []json.RawMessage) (json.RawMessage, error) { return a[0], nil })},
				"limits":  map[string]any{"maxCommits": 500, "odd-key": true},
			}, nil
		}}
	s, err := Build(context.Background(), &Entry{PluginID: "git", NS: ns}, api.NamespaceContext{})
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]ToolInfo{
		"git_log": {ID: "native:git:git_log", Description: "List commits, newest first. */ not a comment end",
			Input:  []byte(`{"type":"object","properties":{"limit":{"type":"integer","minimum":1},"path":{"type":"string"}},"additionalProperties":false}`),
			Output: []byte(`{"type":"object","properties":{"commits":{"type":"array","items":{"type":"object","properties":{"hash":{"type":"string"}},"required":["hash"],"additionalProperties":false}},"truncated":{"type":"boolean"}},"required":["commits","truncated"],"additionalProperties":false}`)},
		"git_show": {ID: "native:git:git_show", Description: "One commit."},
	}
	got := DTS(s, func(name string) (ToolInfo, bool) { ti, ok := tools[name]; return ti, ok })
	if res := esbuild.Transform(got, esbuild.TransformOptions{Loader: esbuild.LoaderTS}); len(res.Errors) > 0 {
		t.Fatalf("not TypeScript: %s\n%s", res.Errors[0].Text, got)
	}
	path := filepath.Join("testdata", "git.d.ts.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Fatalf("differs from %s (run with -update):\n%s", path, got)
	}
}
