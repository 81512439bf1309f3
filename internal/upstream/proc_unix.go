//go:build unix && !linux

package upstream

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the server in its own process group so Close can kill it with everything it
// started. Only Linux has a parent-death signal.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
