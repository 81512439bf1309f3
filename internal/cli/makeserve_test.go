package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `make serve` is an MCP server on stdout from its first byte: make's own command lines, the
// engine fetch and the build report on stderr only, so a strict client that reads stdout
// line by line as JSON-RPC does not fail on line 1 (issue 24).
func TestMakeServeStdoutIsJSONRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make serve (builds the binary)")
	}
	makePath, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make not installed")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// From the checkout, as the README says (with -C, make itself prints "Entering directory"
	// on stdout before it reads the Makefile: `make -s -C DIR serve` is the quiet form).
	cmd := exec.Command(makePath, "BIN="+filepath.Join(t.TempDir(), "codemode"), "serve")
	cmd.Dir = root
	// As a person types it in a shell: not as a sub-make of `make test` (CI), whose MAKELEVEL
	// and MAKEFLAGS would make this make print "Entering directory" on stdout.
	cmd.Env = withoutMakeEnv(os.Environ())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	send := func(s string) {
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"make-test","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)

	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Generous: on a cold machine this includes compiling the binary.
	deadline := time.After(10 * time.Minute)
	seen := map[string]bool{}
	for !seen["1"] || !seen["2"] {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("stdout closed before both responses; stderr:\n%s", stderr.String())
			}
			var msg struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Result  json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.JSONRPC != "2.0" {
				t.Fatalf("stdout line is not JSON-RPC: %q\nstderr:\n%s", line, stderr.String())
			}
			seen[string(msg.ID)] = msg.Result != nil
			if string(msg.ID) == "2" && !strings.Contains(string(msg.Result), `"name":"exec"`) {
				t.Errorf("tools/list has no exec: %s", msg.Result)
			}
		case <-deadline:
			t.Fatalf("no responses from make serve; stderr:\n%s", stderr.String())
		}
	}
	_ = stdin.Close()
	for line := range lines {
		t.Errorf("stdout after the responses: %q", line)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("make serve after stdin EOF: %v; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "codemode serve: MCP on stdio") {
		t.Errorf("stderr does not say what is served:\n%s", stderr.String())
	}
}

// withoutMakeEnv drops the variables a parent make passes to its children.
func withoutMakeEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES":
			continue
		}
		out = append(out, kv)
	}
	return out
}
