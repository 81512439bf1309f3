package git

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/catalog"
	"github.com/codemode-go/codemode/internal/contract"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func TestPluginMetadata(t *testing.T) {
	p := Plugin(Options{Workspace: t.TempDir()})
	if p.ID != "git" || p.Start == nil {
		t.Fatalf("plugin id %q, start %v", p.ID, p.Start != nil)
	}
	want := []string{"git_status", "git_log", "git_diff", "git_show", "git_blame", "git_branches"}
	var names []string
	for _, tool := range p.Tools {
		names = append(names, tool.Name)
		t.Run(tool.Name, func(t *testing.T) {
			if tool.ID() != "native:git:"+tool.Name || !tool.ReadOnly || tool.Execute == nil {
				t.Errorf("id %s, read-only %v", tool.ID(), tool.ReadOnly)
			}
			if tool.Description == "" || tool.Label == "" || len(tool.Description) > 300 {
				t.Errorf("description %q, label %q", tool.Description, tool.Label)
			}
			for _, which := range []struct {
				kind string
				raw  json.RawMessage
			}{{"in", tool.InputSchema}, {"out", tool.OutputSchema}} {
				if _, err := contract.Compile(tool.ID(), which.raw); err != nil {
					t.Errorf("%s schema: %v", which.kind, err)
				}
				assertClosed(t, which.kind, which.raw)
			}
		})
	}
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
	// Every namespace method names one of the tools (the lead's wiring relies on it).
	for method, tool := range Namespace.Methods {
		if !slices.Contains(want, tool) {
			t.Errorf("Namespace.Methods[%s] = %s, not a tool", method, tool)
		}
	}
	if Namespace.GlobalName != "Git" || Namespace.Description == "" || Namespace.Prompt == "" {
		t.Errorf("namespace %+v", Namespace)
	}
}

// assertClosed checks that every object layer of a schema says additionalProperties: false
// (O3): only then does the quick index show the complete output hint.
func assertClosed(t *testing.T, kind string, raw json.RawMessage) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(string, any)
	walk = func(at string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		if m["type"] == "object" && m["additionalProperties"] != false {
			t.Errorf("%s schema %s: object without additionalProperties:false", kind, at)
		}
		if props, ok := m["properties"].(map[string]any); ok {
			for name, p := range props {
				walk(at+"."+name, p)
			}
		}
		if items, ok := m["items"]; ok {
			walk(at+"[]", items)
		}
	}
	walk("$", v)
}

// TestQuickIndexHints pins the lines the quick index shows for the plugin's tools (Q1–Q3):
// each must carry a complete output hint, never `-> ?`.
func TestQuickIndexHints(t *testing.T) {
	p := Plugin(Options{Workspace: t.TempDir()})
	tools := make([]*api.Tool, len(p.Tools))
	for i, tool := range p.Tools {
		c := *tool
		tools[i] = &c
	}
	qi := catalog.Build(tools).QuickIndex()
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(qi), "\n") {
		if strings.Contains(line, "native:git:") {
			lines = append(lines, line)
			if strings.Contains(line, "-> ?") {
				t.Errorf("no complete output hint: %s", line)
			}
		}
	}
	if len(lines) != len(p.Tools) {
		t.Fatalf("quick index has %d git lines, want %d:\n%s", len(lines), len(p.Tools), qi)
	}
	got := strings.Join(lines, "\n") + "\n"
	golden := filepath.Join("testdata", "quickindex.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("quick index lines changed (run with -update if intended)\n--- got\n%s--- want\n%s", got, want)
	}
}
