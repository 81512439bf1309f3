package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/gateway"
	"github.com/codemode-go/codemode/internal/admission"
)

// runServe runs the MCP gateway: on stdin/stdout by default, or streamable HTTP with --http.
func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := newCommand("serve", "[--config FILE] [--http ADDR]", `
Runs the MCP gateway: code mode (exec, wait and the direct-only tools) in front of the
configuration's MCP servers, plugins and built-in tools. By default it speaks MCP on stdin and
stdout — start it from an MCP client's configuration (command "codemode", args ["serve"]);
stdout carries nothing but MCP messages, logs go to stderr. With --http it serves streamable
HTTP at http://ADDR/mcp (with /healthz, /readyz and /metrics): a loopback address needs no
token, any other needs serve.http.token or CODEMODE_TOKEN.`, stdout, stderr)
	cfgPath := c.fs.String("config", "", "configuration `FILE` (JSON5); default: the embedded default")
	addr := c.fs.String("http", "", "serve MCP over streamable HTTP at `ADDR`/mcp instead of stdio: PORT (loopback), HOST:PORT, or :PORT (all interfaces; needs a token)")
	pos, status, done := c.parse(args)
	if done {
		return status
	}
	if len(pos) > 0 {
		return c.usageError("unexpected argument %q", pos[0])
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return configError(stderr, err)
	}
	log := stderrLogger(stderr)
	if os.Getenv("GOMEMLIMIT") == "" {
		// The admission budget bounds VMs; this makes the collector keep the process near it.
		debug.SetMemoryLimit(admission.GoMemoryLimit(admission.Derive(cfg)))
	}
	g, err := gateway.Open(ctx, cfg, gateway.Options{Logger: log, Version: versionString()})
	if err != nil {
		fmt.Fprintln(stderr, "codemode serve:", err)
		if strings.HasPrefix(err.Error(), "serve.") {
			return exitUsage // a serve setting that cannot be used: the file's to fix
		}
		return exitFailed
	}
	defer g.Close()
	if err := g.Runtime().Err(); err != nil && cfg.Tools.CodeMode.Enabled {
		// Fail closed: the server still starts, exposes exec/wait, and every exec reports
		// runtime_unavailable. Say so loudly.
		log.Error("code mode runtime unavailable: every exec will fail", "err", err)
	}
	if *cfgPath != "" {
		go reloadOnHUP(ctx, *cfgPath, g, log)
	}
	if *addr == "" {
		fmt.Fprintln(stderr, startLine(g, "MCP on stdio"))
		if isTerminal(stdin) {
			fmt.Fprint(stderr, stdioHint)
		}
		err := g.ServeStdio(ctx, stdin, stdout)
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "codemode serve:", err)
			return exitFailed
		}
		return exitOK
	}
	l, err := g.Listen(ctx, *addr)
	if err != nil {
		fmt.Fprintln(stderr, "codemode serve:", err)
		return exitUsage
	}
	fmt.Fprintln(stderr, startLine(g, fmt.Sprintf("MCP over streamable HTTP at %s (%s; also /healthz /readyz /metrics)", l.URL(), l.Auth())))
	if err := l.Serve(ctx); err != nil {
		fmt.Fprintln(stderr, "codemode serve:", err)
		return exitFailed
	}
	return exitOK
}

// reloadOnHUP re-reads the configuration file on SIGHUP and applies what can change while serving:
// the plugins (added, disabled, removed; clients get tools/list_changed). Other settings need a
// restart, and a file that no longer parses changes nothing.
func reloadOnHUP(ctx context.Context, path string, g *gateway.Gateway, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			cfg, err := config.Load(path)
			if err != nil {
				log.Error("SIGHUP: configuration not reloaded", "err", err)
				continue
			}
			changes, err := g.ReloadPlugins(ctx, cfg)
			if err != nil {
				log.Error("SIGHUP: plugins reloaded with errors", "changes", changes, "err", err)
				continue
			}
			log.Warn("SIGHUP: plugins reloaded (other settings apply after a restart)", "changes", changes)
		}
	}
}

// stdioHint is what a person who started `codemode serve` in a terminal reads next: the server
// waits for an MCP client on stdin, which is not them.
const stdioHint = `codemode serve: this is an MCP server speaking JSON-RPC on stdin/stdout; it waits for an MCP client.
  Connect one by starting codemode from the client's configuration, for example:
    {"mcpServers": {"codemode": {"command": "codemode", "args": ["serve"]}}}
  or serve HTTP instead: codemode serve --http 8765 (then http://127.0.0.1:8765/mcp).
  To try a cell by hand: codemode exec --code 'return ALL_TOOLS.map(t => t.id)'. Ctrl-D or Ctrl-C stops.
`

// startLine is the one line on stderr that says what is served and where: the transport, the
// tool count and each upstream's state.
func startLine(g *gateway.Gateway, where string) string {
	r := g.Readiness()
	var b strings.Builder
	fmt.Fprintf(&b, "codemode serve: %s — %d tools", where, r.Tools)
	if r.Runtime == "unavailable" {
		b.WriteString(", code mode runtime UNAVAILABLE")
	}
	if len(r.Servers) > 0 {
		b.WriteString("; upstreams:")
		for _, u := range r.Servers {
			fmt.Fprintf(&b, " %s=%s", u.Name, u.State)
			if u.State == "ready" {
				fmt.Fprintf(&b, "(%d tools)", u.Tools)
			}
		}
	}
	return b.String()
}
