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
	fs := newFlags("trace", stderr)
	full := fs.Bool("full", false, "print inputs and results whole instead of one-line previews")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: codemode trace [--full] FILE   (- reads stdin)")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
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
