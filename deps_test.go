package codemode

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A program that uses only the root package links no store backend, MCP SDK, model provider,
// metrics or git stack: each lives behind the package that needs it (issue 24). It can still
// name a Redis run store in its configuration, and OpenRunStore then says which package to
// import.
func TestLibraryLinksOnlyWhatItUses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "libonly")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/libonly").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	for _, mod := range []string{
		"github.com/redis/go-redis", "github.com/modelcontextprotocol/go-sdk", "github.com/openai/openai-go",
		"github.com/anthropics/anthropic-sdk-go", "github.com/prometheus/client_golang", "github.com/go-git/go-git",
		"go.opentelemetry.io", "github.com/coder/websocket",
	} {
		if strings.Contains(string(out), "\tdep\t"+mod) {
			t.Errorf("a root-package-only program links %s", mod)
		}
	}
	if run, err := exec.Command(bin).CombinedOutput(); err != nil {
		t.Errorf("libonly: %v\n%s", err, run)
	}
}
