//go:build unix

package redistest

import (
	"os/exec"
	"syscall"
)

func terminate(cmd *exec.Cmd) error { return cmd.Process.Signal(syscall.SIGTERM) }
func pause(cmd *exec.Cmd)           { _ = cmd.Process.Signal(syscall.SIGSTOP) }
func resume(cmd *exec.Cmd)          { _ = cmd.Process.Signal(syscall.SIGCONT) }
