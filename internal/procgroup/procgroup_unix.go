//go:build unix

package procgroup

import (
	"os/exec"
	"syscall"
)

// KillOnCancel makes cmd, not yet started, the leader of a new process group and makes its
// cancellation (exec.CommandContext's context ending, or a call of cmd.Cancel) kill that whole
// group with SIGKILL, so children and grandchildren die with it. A group that is already gone
// is not an error.
func KillOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		// The group id is the leader's pid (Setpgid with Pgid 0).
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if err == syscall.ESRCH {
			return nil
		}
		return err
	}
}
