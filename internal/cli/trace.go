package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/codemode-go/codemode/internal/trajectory"
)

// runTrace implements `codemode trace FILE`: a trajectory (JSON Lines, as written by
// `codemode agent --transcript` or serve.trajectory) printed as a tree per run.
func runTrace(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := newCommand("trace", "[--full] FILE", `
Prints a trajectory — the JSON Lines that codemode agent --transcript and serve.trajectory
write — as a tree per run: exec and wait, the nested calls under them, approvals and progress.
FILE - reads stdin.`, stdout, stderr)
	full := c.fs.Bool("full", false, "print the events whole, as JSON, instead of one-line previews")
	pos, status, done := c.parse(args)
	if done {
		return status
	}
	if len(pos) != 1 {
		return c.usageError("give one FILE (or - for stdin)")
	}
	var r io.Reader = stdin
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			fmt.Fprintln(stderr, "codemode trace:", err)
			return exitUsage
		}
		defer f.Close()
		r = f
	}
	events, bad, err := trajectory.Read(r)
	for _, b := range bad {
		fmt.Fprintln(stderr, "codemode trace: skipped", b)
	}
	if err != nil {
		fmt.Fprintln(stderr, "codemode trace:", err)
	}
	if len(events) == 0 {
		fmt.Fprintln(stderr, "codemode trace: no events")
		return exitFailed
	}
	trajectory.Render(stdout, events, trajectory.RenderOptions{Full: *full})
	if err != nil {
		return exitFailed
	}
	return exitOK
}
