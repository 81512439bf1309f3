// Package cli implements the codemode command: serve (the MCP gateway), exec (run a cell),
// tools (print the model-facing tool list), bench and version. Main returns the exit status so
// the whole CLI is testable in-process.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/quickjs"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// Version is the codemode version, set at link time (-ldflags "-X .../cli.Version=v1.2.3").
var Version = ""

const usage = `codemode — code mode for LLM agents: the model writes a program, the sandbox calls the tools.

usage: codemode COMMAND [flags] [arguments]

commands:
  serve [--config FILE] [--http ADDR]       run the MCP gateway: on stdin/stdout, or streamable
                                            HTTP at http://ADDR/mcp with --http
  exec  [--config FILE] [--language javascript|typescript] [--no-wait] (--code CODE | FILE | -)
                                            run one cell; print each result as a JSON line
  wait  [--config FILE] RUNID               resume a run another process left waiting in the
                                            shared run store (runStore.redis)
  agent [--config FILE] --base-url URL --model NAME [--provider openai|anthropic] … PROMPT
                                            run an agent loop against a model
  tools [--config FILE]                     print the model-facing tool list as JSON
  trace [--full] FILE                       print a trajectory (JSON Lines) as a tree
  bench [--json] [--config FILE]            measure the sandbox (min/median/max)
  bench search [--catalog FILE] [--queries FILES]
                                            score tools.search / MCP.$search on real MCP tools
  version                                   print the version and the pinned QuickJS package
  help [COMMAND]                            print this, or a command's flags and details

Without --config, the embedded default configuration is used (code mode on, the built-in tools,
no MCP servers). 'codemode COMMAND --help' shows every flag of a command.
`

// Main runs the CLI and returns the exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "codemode: no command given\n\n"+usage)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "exec":
		return runExec(ctx, rest, stdin, stdout, stderr)
	case "wait":
		return runWait(ctx, rest, stdout, stderr)
	case "tools":
		return runTools(ctx, rest, stdout, stderr)
	case "serve":
		return runServe(ctx, rest, stdin, stdout, stderr)
	case "agent":
		return runAgent(ctx, rest, stdin, stdout, stderr)
	case "trace":
		return runTrace(ctx, rest, stdin, stdout, stderr)
	case "bench":
		return runBench(ctx, rest, stdout, stderr)
	case "version", "--version", "-v":
		if len(rest) > 0 && (rest[0] == "-h" || rest[0] == "--help") {
			return Main([]string{"help", "version"}, stdin, stdout, stderr)
		}
		fmt.Fprintln(stdout, versionString())
		return exitOK
	case "help", "--help", "-h":
		if len(rest) > 0 && rest[0] != "help" && rest[0] != "--help" && rest[0] != "-h" {
			if rest[0] == "version" {
				fmt.Fprintln(stdout, "usage: codemode version\n\nPrints the codemode version and the pinned QuickJS package.")
				return exitOK
			}
			return Main(append(rest[:len(rest):len(rest)], "--help"), stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "codemode: unknown command %q\nrun 'codemode help' for the list of commands\n", cmd)
		return exitUsage
	}
}

func versionString() string {
	v := Version
	if v == "" {
		v = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	p := quickjs.Pinned()
	return fmt.Sprintf("codemode %s (QuickJS: npm %s@%s)", v, p.Package, p.Version)
}

// parseInterspersed parses flags that may appear before or after positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// loadConfig reads --config or the embedded default.
func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		return config.Default(), nil
	}
	return config.Load(path)
}

// withoutAuditLog is cfg for the commands that are not the gateway serving: serve.trajectory is
// the server's audit log, written by `codemode serve` only.
func withoutAuditLog(cfg *config.Config) *config.Config {
	if cfg.Serve.Trajectory == "" {
		return cfg
	}
	c := *cfg
	c.Serve.Trajectory = ""
	return &c
}

func configError(stderr io.Writer, err error) int {
	var list config.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Fprintln(stderr, "codemode:", e.Error())
		}
		return exitUsage
	}
	fmt.Fprintln(stderr, "codemode:", strings.TrimPrefix(err.Error(), "config: "))
	return exitUsage
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// stderrLogger logs warnings and errors as text to stderr (stdout belongs to results/protocol).
func stderrLogger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CODEMODE_DEBUG") {
			level = slog.LevelDebug // any targeted debug switch turns logging up
		}
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
