//go:build unix

package cli

import (
	"os/exec"

	"github.com/codemode-go/codemode/internal/procgroup"
)

// killGroupOnCancel starts a client tool program in a process group of its own and makes
// cancellation (timeout, Ctrl-C, the run's end) kill the whole group, so what the program
// started dies with it.
func killGroupOnCancel(cmd *exec.Cmd) { procgroup.KillOnCancel(cmd) }
