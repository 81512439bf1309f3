//go:build unix

package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
)

func TestExec(t *testing.T) {
	e := newEnv(t)
	e.write("sub/f.txt", "x")
	t.Setenv("BUILTIN_TEST_VAR", "inherited")
	tests := []struct {
		name  string
		input map[string]any
		want  map[string]any
	}{
		{"echo", map[string]any{"command": "echo hi"}, map[string]any{"exitCode": 0.0, "stdout": "hi\n", "stderr": "", "timedOut": false, "truncated": false}},
		{"exit code and stderr", map[string]any{"command": "echo oops >&2; exit 3"}, map[string]any{"exitCode": 3.0, "stdout": "", "stderr": "oops\n"}},
		{"cwd", map[string]any{"command": "ls", "cwd": "sub"}, map[string]any{"stdout": "f.txt\n"}},
		{"workspace is the default cwd", map[string]any{"command": "ls"}, map[string]any{"stdout": "sub\n"}},
		{"environment", map[string]any{"command": "echo $BUILTIN_TEST_VAR"}, map[string]any{"stdout": "inherited\n"}},
		{"no stdin", map[string]any{"command": "cat"}, map[string]any{"stdout": "", "exitCode": 0.0}},
		{"output cap", map[string]any{"command": "head -c 200000 /dev/zero | tr '\\0' x; echo done >&2"},
			map[string]any{"truncated": true, "stderr": "done\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := e.mustCall("exec", tc.input)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %#v, want %#v", k, got[k], v)
				}
			}
			if tc.name == "output cap" && len(got["stdout"].(string)) != execMaxOutput {
				t.Errorf("stdout %d bytes", len(got["stdout"].(string)))
			}
		})
	}
	res, _ := e.call("exec", map[string]any{"command": "echo out; echo err >&2; exit 1"})
	if txt := res.Content[0].Text; !strings.HasPrefix(txt, "out\n[stderr]\nerr\n[exit code 1, ") {
		t.Errorf("text %q", txt)
	}
	if got := e.callErr("exec", map[string]any{"command": "true", "cwd": "sub/f.txt"}); !strings.Contains(got, "cwd sub/f.txt is not a directory") {
		t.Errorf("%q", got)
	}
	if got := e.callErr("exec", map[string]any{"command": "true", "cwd": "nope"}); !strings.Contains(got, "exec: nope: no such file") {
		t.Errorf("%q", got)
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return !os.IsNotExist(err)
	}
	// Field 3, after "pid (comm)", is the state.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d survived", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestExecTimeoutKillsProcessGroup(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	got := e.mustCall("exec", map[string]any{"command": "sleep 30 & echo $!; wait", "timeoutMs": 300})
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
	if got["timedOut"] != true || got["exitCode"] != -1.0 {
		t.Errorf("details %v", got)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(got["stdout"].(string)))
	if err != nil {
		t.Fatalf("stdout %q", got["stdout"])
	}
	waitDead(t, pid)

	// A background child that keeps the output pipe open does not hold the call beyond the
	// timeout either.
	start = time.Now()
	got = e.mustCall("exec", map[string]any{"command": "sleep 30 & echo $!", "timeoutMs": 10000})
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("took %v", d)
	}
	if got["exitCode"] != 0.0 {
		t.Errorf("details %v", got)
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(got["stdout"].(string))); err == nil {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func TestExecCancelKillsProcessGroup(t *testing.T) {
	e := newEnv(t)
	pidFile := filepath.Join(e.dir, "pid")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		input, _ := json.Marshal(map[string]any{"command": "sleep 30 & echo $! > pid; wait"})
		_, err := e.tools["exec"].Execute(ctx, &api.Call{Input: input})
		done <- err
	}()
	var pid int
	for deadline := time.Now().Add(5 * time.Second); ; {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "cancelled") {
			t.Errorf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("exec did not return after cancellation")
	}
	waitDead(t, pid)
}
