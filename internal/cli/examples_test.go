package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/gateway"
)

// Every file a README command names (--config, --client-tools, a cell file) is shipped in the
// repository and loads (issue 24: the README's examples work with the configs they name).
func TestREADMECommandsNameShippedFiles(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmdLine := regexp.MustCompile(`(?m)^\s*(?:bin/)?codemode (?:[^\n\\]|\\.)*(?:\\\n(?:[^\n\\]|\\.)*)*`)
	fileArg := regexp.MustCompile(`(--config|--client-tools)\s+(\S+)|\s(examples/\S+\.(?:js|ts))`)
	found := 0
	for _, line := range cmdLine.FindAllString(string(readme), -1) {
		for _, m := range fileArg.FindAllStringSubmatch(line, -1) {
			flag, path := m[1], m[2]
			if m[3] != "" {
				path = m[3]
			}
			if !strings.HasPrefix(path, "examples/") {
				t.Errorf("README command names %s %s, which the repository does not ship (use a file under examples/):\n%s", flag, path, line)
				continue
			}
			found++
			full := filepath.Join("../..", path)
			switch flag {
			case "--config":
				if _, err := config.Load(full); err != nil {
					t.Errorf("%s: %v", path, err)
				}
			case "--client-tools":
				if _, err := loadClientTools(full, nil); err != nil {
					t.Errorf("%s: %v", path, err)
				}
			default:
				if _, err := os.Stat(full); err != nil {
					t.Errorf("README names %s: %v", path, err)
				}
			}
		}
	}
	if found < 3 {
		t.Fatalf("found only %d example files in the README's commands; the pattern no longer matches", found)
	}
}

// The shipped client tools run: their programs read the JSON input on stdin and their JSON
// output becomes the value a cell gets.
func TestShippedClientTools(t *testing.T) {
	if testing.Short() {
		t.Skip("starts programs")
	}
	tools, err := loadClientTools("../../examples/client-tools.json5", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g, err := gateway.Open(ctx, config.Default(), gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s := g.Surface(api.RunContext{AgentID: "examples", SessionKey: "t"}, tools)
	res := s.Handle(ctx, "c1", "exec", json.RawMessage(`{"code":"const now = await tools.utc_now({}); const wc = await tools.word_count({text: 'one two\\nthree'}); return {year: now.iso.slice(0, 2), unix: typeof now.unix, wc}"}`)).Exec
	if res.Status != api.StatusCompleted {
		t.Fatalf("%s: %s", res.Status, res.Error)
	}
	if got, want := string(res.Value), `{"year":"20","unix":"number","wc":{"lines":2,"words":3,"bytes":13}}`; got != want {
		t.Errorf("value = %s, want %s", got, want)
	}
}

// The shipped git configuration reaches the repository this test runs in.
func TestShippedGitConfig(t *testing.T) {
	code, out, errOut := run(t, "", "exec", "--config", "../../examples/git.json5", "--code", "return (await Git.log({limit: 1})).commits.length")
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(out, `"value":1`) {
		t.Errorf("output %s", out)
	}
}
