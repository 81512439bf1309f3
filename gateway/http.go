package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/httpauth"
	"github.com/codemode-go/codemode/internal/oauth"
	"github.com/codemode-go/codemode/internal/server"
)

// Listener is the gateway bound to an HTTP address, ready to serve (Listen, then Serve).
type Listener struct {
	g     *Gateway
	ln    net.Listener
	opts  server.HTTPOptions
	tls   *tls.Config // nil: plain HTTP
	hs    *http.Server
	calls *inFlight
}

// Listen binds the gateway to addr for streamable HTTP, as `codemode serve --http ADDR` does:
// PORT alone is a loopback port, HOST:PORT or :PORT (every interface) as given. The listener is
// guarded by the configuration's serve section: a non-loopback address is refused unless
// requests authenticate — serve.http.token (or $CODEMODE_TOKEN), serve.principals' tokens, or
// serve.oauth — and Host and Origin are checked against the allowed ones; connections are capped
// in all and per client address, with header, body and idle deadlines. With serve.http.tls it
// serves HTTPS with that certificate (read again when its files change). Serve it with Serve.
func (g *Gateway) Listen(ctx context.Context, addr string) (*Listener, error) {
	var tc *tls.Config
	if t := g.Config().Serve.HTTP.TLS; t != nil {
		files, err := loadCertFiles(*t)
		if err != nil {
			return nil, err
		}
		tc = files.tlsConfig()
	}
	return g.listen(ctx, addr, tc)
}

// ListenTLS is Listen over HTTPS: the listener terminates TLS itself with tlsConfig (which must
// give a certificate: Certificates or GetCertificate; HTTP/2 is offered unless NextProtos says
// otherwise), with every guard, cap and deadline of Listen. A plain-HTTP request to it gets 400.
func (g *Gateway) ListenTLS(ctx context.Context, addr string, tlsConfig *tls.Config) (*Listener, error) {
	if tlsConfig == nil || len(tlsConfig.Certificates) == 0 && tlsConfig.GetCertificate == nil && tlsConfig.GetConfigForClient == nil {
		return nil, errors.New("gateway: ListenTLS needs a tls.Config with a certificate (Certificates or GetCertificate)")
	}
	return g.listen(ctx, addr, tlsConfig.Clone())
}

func (g *Gateway) listen(ctx context.Context, addr string, tlsConfig *tls.Config) (*Listener, error) {
	cfg := g.Config()
	opts, addr, err := httpOptions(addr, cfg.Serve)
	if err != nil {
		return nil, err
	}
	if oc := cfg.Serve.OAuth; oc != nil {
		v, err := oauth.New(ctx, *oc, oauth.Options{Logger: g.log})
		if err != nil {
			return nil, fmt.Errorf("serve.oauth: %w", err)
		}
		opts.OAuth = v
	}
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	hc := cfg.Serve.HTTP
	l := &Listener{g: g, ln: server.LimitListener(tcp, hc.MaxConnections, hc.MaxConnectionsPerClient), opts: opts,
		tls: tlsConfig, calls: &inFlight{}}
	return l, nil
}

// Addr is the address the listener is bound to (with the port the system chose for ":0").
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// URL is the MCP endpoint: http://ADDR/mcp, or https:// for ListenTLS.
func (l *Listener) URL() string {
	if l.tls != nil {
		return "https://" + l.ln.Addr().String() + "/mcp"
	}
	return "http://" + l.ln.Addr().String() + "/mcp"
}

// Loopback reports whether the listener binds loopback addresses only.
func (l *Listener) Loopback() bool { return l.opts.Loopback }

// Auth says how requests authenticate, for a person reading the start line: "no token:
// loopback only", "bearer token required", the principals' tokens or the OAuth issuer.
func (l *Listener) Auth() string {
	switch {
	case l.opts.OAuth != nil:
		return fmt.Sprintf("OAuth access tokens from %s or %d principal tokens", l.opts.OAuth.Issuer(), len(l.opts.Principals))
	case len(l.opts.Principals) > 0:
		return fmt.Sprintf("%d principals' bearer tokens", len(l.opts.Principals))
	case l.opts.Token != "":
		return "bearer token required"
	}
	return "no token: loopback only"
}

// Serve serves MCP at /mcp, with /healthz, /readyz and /metrics beside it, until ctx is done;
// then it drains (see below) and returns nil. Any other error of the listener is returned.
//
// The drain is the graceful stop of a replica (SIGTERM):
//  1. /readyz turns 503 ("draining") at once, so a balancer routes new work elsewhere;
//  2. the listener stops accepting and idle connections close;
//  3. running execs and waits finish or suspend — each ends within timeoutMs, and a suspension's
//     record is written before its answer goes out;
//  4. the clients' event streams are closed (they reconnect, through the balancer, elsewhere);
//  5. the nested calls this process still runs for suspended runs finish and their results are
//     stored, so no other replica has to count them lost.
//
// The grace for all of it is 2 × timeoutMs + 5 s (an exec and a wait); what still runs after it
// is cut, and another replica takes it over (replay-safe calls reissued, others lost_on_replica).
// An orchestrator's own grace (Kubernetes terminationGracePeriodSeconds) must be longer.
func (l *Listener) Serve(ctx context.Context) error {
	if !l.opts.Loopback && l.tls == nil {
		l.g.log.Warn("serving on a non-loopback address over plain HTTP: the token travels in clear text; put a TLS proxy in front or use ListenTLS")
	}
	hc := l.g.Config().Serve.HTTP
	l.hs = &http.Server{
		Handler:           l.calls.wrap(l.g.srv.HTTPHandler(ctx, l.opts)),
		ReadHeaderTimeout: hc.ReadHeaderTimeout(),
		IdleTimeout:       hc.IdleTimeout(),
		MaxHeaderBytes:    64 << 10,
		// net/http's own complaints (TLS handshakes, bad requests it answers itself) go to the
		// debug log: a client's garbage is not the operator's warning.
		ErrorLog:  slog.NewLogLogger(l.g.log.Handler(), slog.LevelDebug),
		TLSConfig: l.tls,
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		<-ctx.Done()
		l.drain()
	}()
	serve := func() error { return l.hs.Serve(l.ln) }
	if l.tls != nil {
		serve = func() error { return l.hs.ServeTLS(l.ln, "", "") } // the certificate is in TLSConfig
	}
	if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-drained
	return nil
}

func (l *Listener) drain() {
	g, log := l.g, l.g.log
	g.srv.Drain()
	grace := 2*g.Config().Tools.CodeMode.Timeout() + 5*time.Second
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	log.Info("draining: finishing running execs and waits", "grace", grace)
	go func() { _ = l.hs.Shutdown(ctx) }() // stops accepting; returns when idle (streams never are)
	if n := l.calls.wait(ctx); n > 0 {
		log.Warn("draining: requests still running at the end of the grace period are cut", "requests", n)
	}
	_ = l.hs.Close() // the standing event streams
	if err := g.Runtime().Drain(ctx); err != nil {
		log.Warn("draining: nested calls of suspended runs cut", "err", err)
	}
	log.Info("drained", "took", time.Since(start).Round(time.Millisecond))
}

// httpOptions decides where and how to listen. A bare port means loopback. A non-loopback
// address (including ":PORT", every interface) is refused unless the listener authenticates:
// a bearer token (serve.http.token or CODEMODE_TOKEN), principals' tokens (resolved here from
// their {env} or {file}), or OAuth.
func httpOptions(addr string, serve config.Serve) (server.HTTPOptions, string, error) {
	hc := serve.HTTP
	if isDigits(addr) {
		addr = "127.0.0.1:" + addr
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return server.HTTPOptions{}, "", fmt.Errorf("--http %q: expected PORT, HOST:PORT or :PORT", addr)
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		loopback = ip.IsLoopback()
	}
	token := hc.Token
	if token == "" {
		if token = os.Getenv(httpauth.TokenEnv); token != "" {
			if msg := httpauth.CheckToken(token); msg != "" {
				return server.HTTPOptions{}, "", fmt.Errorf("%s: %s", httpauth.TokenEnv, msg)
			}
		}
	}
	var principals []server.PrincipalToken
	seen := map[string]string{}
	for _, p := range serve.Principals {
		if p.Token.IsZero() {
			continue // reached through serve.oauth only
		}
		v, err := p.Token.Resolve()
		if err == nil {
			if msg := httpauth.CheckToken(v); msg != "" {
				err = errors.New(msg)
			}
		}
		if err != nil {
			return server.HTTPOptions{}, "", fmt.Errorf("serve.principals %s: token (%s): %v", p.Name, p.Token, err)
		}
		if other, dup := seen[v]; dup || v == token {
			if !dup {
				other = "serve.http.token"
			}
			return server.HTTPOptions{}, "", fmt.Errorf("serve.principals %s: its token is also %s's: every principal needs a token of its own", p.Name, other)
		}
		seen[v] = p.Name
		principals = append(principals, server.PrincipalToken{Name: p.Name, Token: v})
	}
	if !loopback && token == "" && len(principals) == 0 && serve.OAuth == nil {
		where := host
		if where == "" {
			where = "every interface"
		}
		return server.HTTPOptions{}, "", fmt.Errorf("refusing to serve on %s (%s) without a token: anyone who can reach it could run code and call every tool. "+
			"Set serve.http.token in the config or %s (at least 16 characters, e.g. `openssl rand -hex 32`), give serve.principals their tokens, configure serve.oauth, or bind a loopback address such as 127.0.0.1:PORT",
			addr, where, httpauth.TokenEnv)
	}
	return server.HTTPOptions{
		Token: token, Principals: principals, AllowedOrigins: hc.AllowedOrigins, AllowedHosts: hc.AllowedHosts, Loopback: loopback,
		SessionIdleTimeout: hc.SessionIdleTimeout(), MaxSessions: hc.MaxSessions, MaxSessionsPerClient: hc.MaxSessionsPerClient,
		ReadBodyTimeout: hc.ReadBodyTimeout(),
	}, addr, nil
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

// inFlight counts the HTTP requests being handled, but for GETs: an MCP client's GET is its
// standing event stream, which lasts as long as the session, while a POST carries a call and
// ends with it.
type inFlight struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0 while someone waits
}

func (f *inFlight) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			h.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		f.n++
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.n--
			if f.n == 0 && f.zero != nil {
				close(f.zero)
				f.zero = nil
			}
			f.mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}

// wait returns when no request is in flight, or ctx ends (reporting how many still run).
func (f *inFlight) wait(ctx context.Context) int {
	for {
		f.mu.Lock()
		if f.n == 0 {
			f.mu.Unlock()
			return 0
		}
		if f.zero == nil {
			f.zero = make(chan struct{})
		}
		ch := f.zero
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.n
		}
	}
}
