//go:build !unix

package cli

import "os/exec"

// killGroupOnCancel is exec.CommandContext's default where process groups do not exist: the
// program itself is killed.
func killGroupOnCancel(*exec.Cmd) {}
