package upstream

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the server in its own process group (so Close can kill it with everything it
// started) and asks the kernel to SIGKILL it if the gateway dies first. Pdeathsig fires when
// the OS thread that started the child exits, which the Go runtime does not do to idle threads;
// grandchildren are not covered by it, only by the group kill on Close.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
