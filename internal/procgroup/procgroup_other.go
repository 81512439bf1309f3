//go:build !unix

package procgroup

import "os/exec"

// KillOnCancel leaves cmd as it is where process groups do not exist: cancellation kills the
// program only (exec.CommandContext's default).
func KillOnCancel(*exec.Cmd) {}
