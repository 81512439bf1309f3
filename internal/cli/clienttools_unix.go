//go:build unix

package cli

import (
	"os/exec"
	"syscall"
)

// killGroupOnCancel starts a client tool program in a process group of its own and makes
// cancellation (timeout, Ctrl-C, the run's end) kill the whole group, so what the program
// started dies with it.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if err == syscall.ESRCH {
			return nil
		}
		return err
	}
}
