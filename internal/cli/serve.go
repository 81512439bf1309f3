package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/codemode-go/codemode/internal/gateway"
	"github.com/codemode-go/codemode/internal/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runServe runs the MCP gateway: on stdin/stdout by default, or streamable HTTP with --http.
func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("serve", stderr)
	cfgPath := fs.String("config", "", "configuration file (JSON5); default: the embedded default")
	addr := fs.String("http", "", "serve MCP over streamable HTTP on this address (e.g. 127.0.0.1:8765) instead of stdio")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "codemode serve: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return configError(stderr, err)
	}
	log := stderrLogger(stderr)
	g, err := gateway.Open(ctx, cfg, gateway.Options{Logger: log})
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
	server.Version = versionString()
	srv := server.New(g, log)
	if *addr == "" {
		err := srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			fmt.Fprintln(stderr, "codemode serve:", err)
			return exitFailed
		}
		return exitOK
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "codemode serve:", err)
		return exitUsage
	}
	hs := &http.Server{Handler: srv.Handler(ctx), ReadHeaderTimeout: 10 * time.Second}
	log.Warn("serving MCP over streamable HTTP", "addr", ln.Addr().String())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "codemode serve:", err)
		return exitFailed
	}
	return exitOK
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
