package cli

import (
	"context"
	"fmt"
	"io"
)

// runServe runs the MCP gateway on stdin/stdout.
func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "codemode serve: not available yet")
	return exitFailed
}
