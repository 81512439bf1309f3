//go:build !unix

package builtin

import "os/exec"

// startProcessGroup is a no-op where process groups do not exist; cancellation kills the shell
// only (exec.CommandContext's default).
func startProcessGroup(*exec.Cmd) {}
