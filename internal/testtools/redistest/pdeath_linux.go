package redistest

import (
	"os/exec"
	"syscall"
)

// setParentDeath kills the server if the test binary dies without stopping it (a panic, a
// timeout): a private instance must not outlive its tests.
func setParentDeath(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
