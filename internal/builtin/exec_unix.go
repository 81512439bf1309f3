//go:build unix

package builtin

import (
	"os/exec"
	"syscall"
)

// startProcessGroup makes the shell the leader of a new process group and makes cancellation
// (timeout or the caller's context) kill that whole group, so children and grandchildren the
// command started die with it.
func startProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		// The group id is the shell's pid (Setpgid with Pgid 0).
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if err == syscall.ESRCH {
			return nil
		}
		return err
	}
}
