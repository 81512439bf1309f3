package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// command is one subcommand's flags with the help and error conventions every subcommand shares:
//
//   - `codemode NAME -h` (or --help, or `codemode help NAME`) prints "usage: codemode NAME …",
//     what the command does and its flags to stdout, and exits 0;
//   - a bad flag or argument prints "codemode NAME: <what is wrong>", the usage line and a pointer
//     to -h to stderr, and exits 2.
//
// Flags take one or two dashes (Go's flag package); help shows them with two.
type command struct {
	fs             *flag.FlagSet
	name, synopsis string
	about          string
	stdout, stderr io.Writer
}

func newCommand(name, synopsis, about string, stdout, stderr io.Writer) *command {
	fs := flag.NewFlagSet("codemode "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by parse, help by help
	fs.Usage = func() {}
	return &command{fs: fs, name: name, synopsis: synopsis, about: strings.TrimSpace(about), stdout: stdout, stderr: stderr}
}

// parse parses flags interspersed with positional arguments. When done is true the caller
// returns code at once: help was printed (0) or the arguments are wrong (2).
func (c *command) parse(args []string) (pos []string, code int, done bool) {
	pos, err := parseInterspersed(c.fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.help(c.stdout)
		return nil, exitOK, true
	case err != nil:
		return nil, c.usageError("%s", err), true
	}
	return pos, 0, false
}

// usageError reports wrong arguments and returns the usage exit status.
func (c *command) usageError(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "codemode %s: %s\n", c.name, fmt.Sprintf(format, args...))
	fmt.Fprintf(c.stderr, "usage: codemode %s %s\nrun 'codemode %s --help' for more\n", c.name, c.synopsis, c.name)
	return exitUsage
}

// help prints the usage line, the description and the flags.
func (c *command) help(w io.Writer) {
	fmt.Fprintf(w, "usage: codemode %s %s\n", c.name, c.synopsis)
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", c.about)
	}
	first := true
	c.fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprintln(w, "\nflags:")
			first = false
		}
		arg, usage := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		if arg != "" {
			head += " " + strings.ToUpper(arg)
		}
		line := head
		if len(head) < 24 {
			line += strings.Repeat(" ", 24-len(head))
		} else {
			line += "\n" + strings.Repeat(" ", 24)
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(w, "%s%s\n", line, wrap(usage, 24, 100))
	})
}

// wrap breaks text into lines of at most width columns, indenting every line after the first by
// indent spaces (the first starts at column indent already).
func wrap(text string, indent, width int) string {
	var b strings.Builder
	col := indent
	for i, word := range strings.Fields(text) {
		if i > 0 {
			if col+1+len([]rune(word)) > width {
				b.WriteString("\n" + strings.Repeat(" ", indent))
				col = indent
			} else {
				b.WriteByte(' ')
				col++
			}
		}
		b.WriteString(word)
		col += len([]rune(word))
	}
	return b.String()
}
