//go:build !unix

package redistest

import "os/exec"

func terminate(cmd *exec.Cmd) error { return cmd.Process.Kill() }
func pause(*exec.Cmd)               {}
func resume(*exec.Cmd)              {}
