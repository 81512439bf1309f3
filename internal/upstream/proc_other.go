//go:build !unix

package upstream

import (
	"os"
	"os/exec"
)

func setProcAttr(*exec.Cmd) {}

// killGroup kills the server process only: no process groups here.
func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
