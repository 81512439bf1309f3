package cli

import (
	"context"
	"fmt"
	"io"
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "codemode bench: not available yet")
	return exitFailed
}
