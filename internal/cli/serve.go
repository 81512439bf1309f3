package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/admission"
	"github.com/codemode-go/codemode/internal/gateway"
	"github.com/codemode-go/codemode/internal/server"
	"github.com/codemode-go/codemode/internal/trajectory"
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
	var err error
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return configError(stderr, err)
	}
	var lst listenSpec
	if *addr != "" {
		if lst, err = listenConfig(*addr, cfg.Serve.HTTP); err != nil {
			fmt.Fprintln(stderr, "codemode serve:", err)
			return exitUsage
		}
	}
	log := stderrLogger(stderr)
	if os.Getenv("GOMEMLIMIT") == "" {
		// The admission budget bounds VMs; this makes the collector keep the process near it.
		debug.SetMemoryLimit(admission.GoMemoryLimit(admission.Derive(cfg)))
	}
	relay := &server.TrajectoryRelay{}
	sinks := []api.Trajectory{relay}
	if cfg.Serve.Trajectory != "" {
		w, err := trajectory.Open(cfg.Serve.Trajectory, cfg.Serve.TrajectoryLimits)
		if err != nil {
			fmt.Fprintln(stderr, "codemode serve: serve.trajectory:", err)
			return exitUsage
		}
		defer w.Close()
		sinks = append(sinks, w)
	}
	g, err := gateway.Open(ctx, cfg, gateway.Options{Logger: log, Trajectory: trajectory.Multi(sinks...)})
	if err != nil {
		fmt.Fprintln(stderr, "codemode serve:", err)
		return exitFailed
	}
	defer g.Close()
	if err := g.RT.Err(); err != nil && cfg.Tools.CodeMode.Enabled {
		// Fail closed: the server still starts, exposes exec/wait, and every exec reports
		// runtime_unavailable. Say so loudly.
		log.Error("code mode runtime unavailable: every exec will fail", "err", err)
	}
	if *cfgPath != "" {
		go reloadOnHUP(ctx, *cfgPath, g, log)
	}
	server.Version = versionString()
	srv := server.NewWithOptions(g, server.Options{Logger: log, Admission: g.AdmissionStats})
	relay.Set(srv.Trajectory())
	defer srv.Close()
	if *addr == "" {
		fmt.Fprintln(stderr, startLine(srv, "MCP on stdio"))
		if isTerminal(stdin) {
			fmt.Fprint(stderr, stdioHint)
		}
		err := srv.Run(ctx, server.StdioTransport(stdin, stdout))
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			fmt.Fprintln(stderr, "codemode serve:", err)
			return exitFailed
		}
		return exitOK
	}
	ln, err := net.Listen("tcp", lst.addr)
	if err != nil {
		fmt.Fprintln(stderr, "codemode serve:", err)
		return exitUsage
	}
	calls := &inFlight{}
	hs := &http.Server{
		Handler:           calls.wrap(srv.HTTPHandler(ctx, lst.opts)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	auth := "no token: loopback only"
	if lst.opts.Token != "" {
		auth = "bearer token required"
	}
	fmt.Fprintln(stderr, startLine(srv, fmt.Sprintf("MCP over streamable HTTP at http://%s/mcp (%s; also /healthz /readyz /metrics)", ln.Addr(), auth)))
	if !lst.opts.Loopback {
		log.Warn("serving on a non-loopback address over plain HTTP: the token travels in clear text; put a TLS proxy in front")
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		<-ctx.Done()
		drain(srv, hs, calls, g, cfg, log)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "codemode serve:", err)
		return exitFailed
	}
	<-drained
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

type listenSpec struct {
	addr string
	opts server.HTTPOptions
}

// listenConfig decides where and how to listen. A bare port means loopback. A non-loopback
// address (including ":PORT", every interface) is refused unless a bearer token is configured
// (serve.http.token or CODEMODE_TOKEN).
func listenConfig(addr string, hc config.ServeHTTP) (listenSpec, error) {
	if isDigits(addr) {
		addr = "127.0.0.1:" + addr
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return listenSpec{}, fmt.Errorf("--http %q: expected PORT, HOST:PORT or :PORT", addr)
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		loopback = ip.IsLoopback()
	}
	token := hc.Token
	if token == "" {
		if token = os.Getenv(config.TokenEnv); token != "" {
			if msg := config.CheckToken(token); msg != "" {
				return listenSpec{}, fmt.Errorf("%s: %s", config.TokenEnv, msg)
			}
		}
	}
	if !loopback && token == "" {
		where := host
		if where == "" {
			where = "every interface"
		}
		return listenSpec{}, fmt.Errorf("refusing to serve on %s (%s) without a token: anyone who can reach it could run code and call every tool. "+
			"Set serve.http.token in the config or %s (at least 16 characters, e.g. `openssl rand -hex 32`), or bind a loopback address such as 127.0.0.1:PORT",
			addr, where, config.TokenEnv)
	}
	return listenSpec{addr: addr, opts: server.HTTPOptions{
		Token: token, AllowedOrigins: hc.AllowedOrigins, AllowedHosts: hc.AllowedHosts, Loopback: loopback,
		SessionIdleTimeout: hc.SessionIdleTimeout(), MaxSessions: hc.MaxSessions,
	}}, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
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
func startLine(srv *server.Server, where string) string {
	r := srv.Readiness()
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
