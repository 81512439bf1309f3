//go:build unix

package procgroup

import (
	"bufio"
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether a process with pid still exists (signal 0 checks without sending).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// waitGone waits, within a generous bound, for pid to disappear.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startShell starts `sh -c` with a background grandchild that prints its pid and sleeps.
func startShell(t *testing.T, ctx context.Context) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "sh", "-c", "sleep 300 & echo $!; wait")
	KillOnCancel(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return cmd, pid
}

func TestKillOnCancel(t *testing.T) {
	tests := []struct {
		name   string
		cancel func(cmd *exec.Cmd, cancelCtx context.CancelFunc) error
	}{
		{"context cancelled", func(_ *exec.Cmd, cancel context.CancelFunc) error { cancel(); return nil }},
		{"Cancel called", func(cmd *exec.Cmd, _ context.CancelFunc) error { return cmd.Cancel() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cmd, grandchild := startShell(t, ctx)
			if !alive(grandchild) {
				t.Fatalf("grandchild %d is not running", grandchild)
			}
			if err := tc.cancel(cmd, cancel); err != nil {
				t.Fatalf("cancel: %v", err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) && !errors.Is(err, context.Canceled) {
				t.Fatalf("Wait = %v, want the shell killed", err)
			}
			waitGone(t, grandchild)
		})
	}
}

func TestKillOnCancelAfterExit(t *testing.T) {
	cmd := exec.CommandContext(context.Background(), "true")
	KillOnCancel(cmd)
	if err := cmd.Cancel(); err != nil {
		t.Fatalf("Cancel before Start = %v", err)
	}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Cancel(); err != nil {
		t.Fatalf("Cancel after the group is gone = %v, want nil (ESRCH ignored)", err)
	}
	if cmd.SysProcAttr == nil || !cmd.SysProcAttr.Setpgid {
		t.Fatal("the command was not started in a process group of its own")
	}
}
