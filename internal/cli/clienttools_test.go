package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
)

func shTool(t *testing.T, script string, timeoutMs int, procs *clientPrograms) *api.Tool {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("client tool tests use sh")
	}
	return commandTool(clientToolDef{Name: "t", Command: []string{"sh", "-c", script}, TimeoutMs: timeoutMs}, procs)
}

// updates collects the progress updates of a call.
type updates struct {
	mu    sync.Mutex
	texts []string
}

func (u *updates) add(b api.ContentBlock) {
	u.mu.Lock()
	u.texts = append(u.texts, b.Text)
	u.mu.Unlock()
}

func TestClientToolResults(t *testing.T) {
	cases := []struct {
		name, script string
		input        string
		text         string // the result's text
		details      string // "" when none
		isError      bool
		err          string // a Go error instead of a result
	}{
		{"stdin to stdout", `cat`, `{"a":1}`, `{"a":1}`, `{"a":1}`, false, ""},
		{"plain text has no details", `echo hello`, `{}`, "hello", "", false, ""},
		{"non-zero exit is an error result with stderr", `echo oops >&2; exit 3`, `{}`, "t exited with status 3: oops", "", true, ""},
		{"non-zero exit without stderr shows stdout", `echo partial; exit 1`, `{}`, "t exited with status 1: partial", "", true, ""},
		{"missing program", `exec /nonexistent/program`, `{}`, "t exited with status 127", "", true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := shTool(t, c.script, 0, nil).Execute(context.Background(), &api.Call{Input: json.RawMessage(c.input)})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Content[0].Text, c.text) || string(res.Details) != c.details || res.IsError != c.isError {
				t.Fatalf("%+v details %s", res, res.Details)
			}
		})
	}
}

func TestClientToolProgress(t *testing.T) { // E1: stderr lines are progress updates
	long := strings.Repeat("é", clientToolMaxUpdateBytes) // 2 bytes a rune: cut mid-line on a rune boundary
	cases := []struct {
		name, script string
		want         []string
	}{
		{"lines", `echo one >&2; printf 'two\n\nthree' >&2; echo '{}'`, []string{"one", "two", "three"}},
		{"long line clipped", fmt.Sprintf(`printf '%s\nnext\n' >&2`, long), []string{strings.Repeat("é", clientToolMaxUpdateBytes/2) + "…", "next"}},
		{"bounded count", `i=0; while [ $i -lt 400 ]; do echo "line $i" >&2; i=$((i+1)); done`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var u updates
			if _, err := shTool(t, c.script, 0, nil).Execute(context.Background(), &api.Call{Input: json.RawMessage(`{}`), Update: u.add}); err != nil {
				t.Fatal(err)
			}
			if c.want == nil {
				if len(u.texts) != clientToolMaxUpdates || !strings.HasSuffix(u.texts[len(u.texts)-1], "(further progress of this call is not shown)") {
					t.Fatalf("%d updates, last %q", len(u.texts), u.texts[len(u.texts)-1])
				}
				return
			}
			if strings.Join(u.texts, "|") != strings.Join(c.want, "|") {
				t.Fatalf("updates %q, want %q", u.texts, c.want)
			}
		})
	}
}

// TestClientToolCancelKillsGroup: cancelling a call (Ctrl-C, the run's end) or its timeout
// kills the program and what it started, and the call returns at once.
func TestClientToolCancelKillsGroup(t *testing.T) {
	for _, how := range []string{"cancel", "timeout"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "child.pid")
			procs := &clientPrograms{}
			timeout := 0
			if how == "timeout" {
				timeout = 300
			}
			tool := shTool(t, fmt.Sprintf(`sleep 30 & echo $! > %s; wait`, pidFile), timeout, procs)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := tool.Execute(ctx, &api.Call{Input: json.RawMessage(`{}`)})
				done <- err
			}()
			var pid int
			for deadline := time.Now().Add(10 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				b, _ := os.ReadFile(pidFile)
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			}
			if pid == 0 {
				t.Fatal("the program never started its child")
			}
			if how == "cancel" {
				cancel()
			}
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "did not finish") {
					t.Fatalf("err %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the call did not return after it was cancelled")
			}
			if d := time.Since(start); d > 8*time.Second {
				t.Fatalf("took %s", d)
			}
			if !procs.wait(5*time.Second, false) {
				t.Fatal("the program was not reaped")
			}
			// The grandchild was killed with its group (it may linger as a zombie of init
			// for a moment: poll).
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if err := syscall.Kill(pid, 0); err == syscall.ESRCH || zombie(pid) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the program's child %d survived", pid)
				}
			}
		})
	}
}

// zombie reports whether pid is a process that has exited but was not reaped yet.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func TestLoadClientTools(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, file, err string
	}{
		{"ok", `[{name: "a", command: ["cat"]}, {name: "b-2", command: ["cat"], timeoutMs: 5}]`, ""},
		{"bad name", `[{name: "no spaces", command: ["cat"]}]`, "must be 1–64 letters"},
		{"twice", `[{name: "a", command: ["cat"]}, {name: "a", command: ["cat"]}]`, "defined twice"},
		{"no command", `[{name: "a"}]`, "has no command"},
		{"schema not an object", `[{name: "a", command: ["cat"], inputSchema: "{"}]`, "must be a JSON Schema object"},
		{"schema null", `[{name: "a", command: ["cat"], inputSchema: null}]`, "must be a JSON Schema object"},
		{"timeout range", `[{name: "a", command: ["cat"], timeoutMs: 700000}]`, "timeoutMs must be"},
		{"not a list", `{name: "a"}`, "client-tools.json5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "client-tools.json5")
			os.WriteFile(p, []byte(c.file), 0o644)
			tools, err := loadClientTools(p, nil)
			if c.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				for _, tl := range tools {
					if tl.ID() != "client:cli:"+tl.Name {
						t.Fatalf("id %s", tl.ID())
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("err %v, want %q", err, c.err)
			}
		})
	}
}
