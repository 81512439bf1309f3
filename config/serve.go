package config

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/codemode-go/codemode/internal/httpauth"
)

// Serve is the `serve` section: how `codemode serve` exposes itself over HTTP.
type Serve struct {
	// HTTP is the streamable HTTP listener (`codemode serve --http`).
	HTTP ServeHTTP
	// Trajectory is a file the gateway appends its audit log to: every exec, wait, direct and
	// nested call, approval and progress update of every session, as JSON Lines (bounded,
	// secrets redacted; `codemode trace FILE` prints it). "" keeps none.
	Trajectory string
	// TrajectoryLimits bound that log (and `codemode agent --transcript`); in a file they sit
	// beside the path: `trajectory: {path: "audit.jsonl", maxBytes: …}`.
	TrajectoryLimits TrajectoryLimits
	// Principals are the clients the HTTP listener knows by name, each with a bearer token of
	// its own (or reached through OAuth), a tool policy that narrows the gateway's, and limits.
	// A run belongs to the principal that started it. See principals.go.
	Principals []Principal
	// OAuth, when set, accepts OAuth 2.1 access tokens (JWTs) from one authorization server
	// besides the principals' tokens. nil: no OAuth.
	OAuth *OAuth
}

// TrajectoryLimits bound an audit log. A zero field means its default. What a limit leaves
// out is counted and said in the log (an event of kind "dropped" under the call concerned).
type TrajectoryLimits struct {
	// MaxBytes bounds one file; past it the file is rotated to FILE.1 (FILE.1 to FILE.2, …).
	// 1 MiB–1 TiB, default 64 MiB.
	MaxBytes int64
	// MaxFiles is the number of rotated files kept (the oldest is deleted). 1–1000, default 4:
	// the log takes at most (MaxFiles+1) × MaxBytes.
	MaxFiles int
	// MaxEventsPerCall bounds the nested calls, approvals and progress updates recorded for one
	// exec and its waits; further ones are only counted. Control calls (exec, wait) and direct
	// calls are always recorded. 100–100,000,000, default 10,000.
	MaxEventsPerCall int
	// UpdateIntervalMs coalesces progress updates: at most 10 per nested call per interval are
	// recorded, and the call's last one. 1–3,600,000, default 1000.
	UpdateIntervalMs int
}

// ServeHTTP configures the streamable HTTP listener (`codemode serve --http ADDR`).
type ServeHTTP struct {
	// Token is the bearer token every HTTP request must carry (Authorization: Bearer <token>).
	// "" falls back to the environment variable CODEMODE_TOKEN. Without a token the listener
	// only binds loopback addresses. 16–4096 printable ASCII characters without spaces.
	Token string
	// AllowedOrigins lists the browser origins ("https://app.example.com") whose requests are
	// served. A request with an Origin header outside this list gets 403, except a loopback
	// origin on a loopback request (a local tool talking to a local server).
	AllowedOrigins []string
	// AllowedHosts lists the Host header values ("mcp.example.com" or "mcp.example.com:8443")
	// served besides IP literals and localhost: any other Host gets 403, which defeats DNS
	// rebinding.
	AllowedHosts []string
	// SessionIdleTimeoutSeconds closes an MCP session (and drops its suspended runs) after this
	// long without a request: 10–604800, default 1800.
	SessionIdleTimeoutSeconds int
	// MaxSessions bounds the MCP sessions open at once: 1–100000, default 1024. When they are all
	// open, a new one takes the place of the least recently used idle session of the client
	// holding the most (so one client that abandons sessions locks nobody out); when none is
	// idle, initialize gets HTTP 503.
	MaxSessions int
	// MaxSessionsPerClient is one client's share of MaxSessions (a client is its principal, or
	// its IP address when unauthenticated): 0–100000, default 256, at most MaxSessions. A client
	// at its share that opens another session closes its own least recently used idle one; 0
	// means no share beyond MaxSessions.
	MaxSessionsPerClient int

	// Connections are a bounded resource (issue 18): every limit below applies before a request
	// is authenticated, so a client without a token costs at most one short-lived connection.

	// ReadHeaderTimeoutSeconds bounds how long a client may take to send a request's headers:
	// 1–300, default 10.
	ReadHeaderTimeoutSeconds int
	// ReadBodyTimeoutSeconds bounds how long a client may take to send a request's body once the
	// headers are in: 1–3600, default 30. A refused request (401, 403, 413) waits for no body.
	ReadBodyTimeoutSeconds int
	// IdleTimeoutSeconds closes a keep-alive connection without a request for this long:
	// 1–3600, default 120.
	IdleTimeoutSeconds int
	// MaxConnections bounds the TCP connections open at once; the next one is closed as soon
	// as it is accepted: 1–1000000, default 4096.
	MaxConnections int
	// MaxConnectionsPerClient bounds the connections open at once from one client IP address:
	// 0–1000000, default 256; 0 turns the per-address cap off (behind a reverse proxy every
	// connection comes from the proxy's address).
	MaxConnectionsPerClient int
	// RequestStateKey signs the requestState of multi round-trip requests (an approval asked of
	// a stateless client): every replica of a fleet needs the same key so that a retry can land
	// on any of them. At least 32 bytes. Absent, each process makes a random key at start.
	RequestStateKey Secret
	// TLS makes the listener serve HTTPS itself (nil: plain HTTP, for loopback or behind a TLS
	// proxy).
	TLS *ServeTLS
}

// ServeTLS is the listener's certificate: PEM files, absolute paths (a Kubernetes secret volume
// or a certificate manager's output). They are read at start and again when they change, so a
// renewed certificate is served without a restart.
type ServeTLS struct {
	CertFile string // the certificate chain, leaf first
	KeyFile  string // its private key
}

// Durations of the listener's timeouts.
func (s ServeHTTP) ReadHeaderTimeout() time.Duration {
	return time.Duration(s.ReadHeaderTimeoutSeconds) * time.Second
}

// ReadBodyTimeout is ReadBodyTimeoutSeconds as a duration.
func (s ServeHTTP) ReadBodyTimeout() time.Duration {
	return time.Duration(s.ReadBodyTimeoutSeconds) * time.Second
}

// IdleTimeout is IdleTimeoutSeconds as a duration.
func (s ServeHTTP) IdleTimeout() time.Duration {
	return time.Duration(s.IdleTimeoutSeconds) * time.Second
}

// SessionIdleTimeout is SessionIdleTimeoutSeconds as a duration.
func (s ServeHTTP) SessionIdleTimeout() time.Duration {
	return time.Duration(s.SessionIdleTimeoutSeconds) * time.Second
}

// Admission bounds the execs and waits running at once in the whole process (runtime.admission).
// Zero values are derived from the machine when the runtime starts: see internal/admission.
type Admission struct {
	// MaxRunning is how many execs/waits may run VMs at once: 1–4096, default 4 × cores.
	MaxRunning int
	// MaxQueued is how many more may wait for a slot; beyond it an exec fails at once with the
	// code "overloaded": 0–65536, default 16 × MaxRunning. In the struct 0 means the default
	// and -1 an explicit 0 (no queue).
	MaxQueued int
	// MemoryBudgetBytes bounds running VMs × tools.codeMode.memoryLimitBytes: at least 16 MiB,
	// default half the physical memory.
	MemoryBudgetBytes int64
}

// Suspended bounds the store of suspended runs (runtime.suspended): in the process, or fleet-wide
// in a shared run store (runStore.redis), where every replica must be given the same figures.
// A run counts against its session and its principal (the token's identity; the session key
// when there is none), so no client and no tenant can use up the store for the others. A
// suspension past a bound fails with invalid_input and a message that names the bound; the
// client finishes or drops runs (wait, session end) and tries again.
//
// Zero fields are derived from the memory budget (runtime.admission.memoryBudgetBytes, by
// default half the physical memory) when the runtime starts: see Resolve.
type Suspended struct {
	// MaxRuns bounds suspended runs in all: 1–1000000, default MaxBytes / 256 KiB (at least
	// 1024).
	MaxRuns int
	// MaxRunsPerPrincipal bounds one principal's runs: 1–MaxRuns, default a quarter of MaxRuns
	// (at least 256, at most MaxRuns).
	MaxRunsPerPrincipal int
	// MaxRunsPerSession: 1–MaxRunsPerPrincipal, default 16.
	MaxRunsPerSession int
	// MaxBytes bounds the stored snapshots of all runs: 1 MiB–64 GiB, default a quarter of the
	// memory budget (at least 64 MiB, at most 64 GiB).
	MaxBytes int64
	// MaxBytesPerPrincipal bounds one principal's: 1 MiB–MaxBytes, default half of MaxBytes.
	MaxBytesPerPrincipal int64
	// MaxBytesPerSession bounds one session's stored snapshots: 1 MiB–MaxBytesPerPrincipal,
	// default 256 MiB (at most MaxBytesPerPrincipal).
	MaxBytesPerSession int64
}

// Resolve fills the zero fields of s from the memory budget (bytes available to VMs; see
// runtime.admission.memoryBudgetBytes) as documented on Suspended. With the defaults on a
// machine with 2 GiB of memory: 256 MiB and 1024 runs in all, 256 per principal, 16 per
// session.
func (s Suspended) Resolve(memoryBudget int64) Suspended {
	if s.MaxBytes == 0 {
		s.MaxBytes = min(max(memoryBudget/4, 64<<20), 64<<30)
	}
	if s.MaxRuns == 0 {
		s.MaxRuns = int(min(max(s.MaxBytes/(256<<10), 1024), 1000000))
	}
	if s.MaxRunsPerPrincipal == 0 {
		s.MaxRunsPerPrincipal = min(max(s.MaxRuns/4, 256), s.MaxRuns)
	}
	if s.MaxRunsPerSession == 0 {
		s.MaxRunsPerSession = defaultMaxRunsPerSession
	}
	s.MaxRunsPerSession = min(s.MaxRunsPerSession, s.MaxRunsPerPrincipal)
	if s.MaxBytesPerPrincipal == 0 {
		s.MaxBytesPerPrincipal = s.MaxBytes / 2
	}
	if s.MaxBytesPerSession == 0 {
		s.MaxBytesPerSession = defaultSuspendedMaxBytesSession
	}
	s.MaxBytesPerSession = min(s.MaxBytesPerSession, s.MaxBytesPerPrincipal)
	return s
}

// Defaults of the serve and runtime limits.
const (
	defaultSessionIdleTimeoutSeconds = 1800
	defaultMaxSessions               = 1024
	defaultMaxSessionsPerClient      = 256
	defaultMaxRunsPerSession         = 16
	defaultSuspendedMaxBytesSession  = 256 << 20
	defaultReadHeaderTimeoutSeconds  = 10
	defaultReadBodyTimeoutSeconds    = 30
	defaultIdleTimeoutSeconds        = 120
	defaultMaxConnections            = 4096
	defaultMaxConnectionsPerClient   = 256
)

func (d *decoder) serve(p path, v any, s *Serve) {
	m, ok := d.object(p, v, "http", "trajectory", "principals", "oauth")
	if !ok {
		return
	}
	if t, isObject := m["trajectory"].(map[string]any); isObject {
		d.trajectory(p.key("trajectory"), t, s)
	} else {
		d.setString(p, m, "trajectory", &s.Trajectory)
	}
	if v, ok := m["principals"]; ok {
		d.principals(p.key("principals"), v, &s.Principals)
	}
	if v, ok := m["oauth"]; ok {
		d.oauth(p.key("oauth"), v, s)
	}
	d.checkPrincipalRefs(p, s)
	v, ok = m["http"]
	if !ok {
		return
	}
	hp := p.key("http")
	h, ok := d.object(hp, v, "token", "allowedOrigins", "allowedHosts", "sessionIdleTimeoutSeconds", "maxSessions", "maxSessionsPerClient",
		"readHeaderTimeoutSeconds", "readBodyTimeoutSeconds", "idleTimeoutSeconds", "maxConnections",
		"maxConnectionsPerClient", "requestStateKey", "tls")
	if !ok {
		return
	}
	d.setString(hp, h, "token", &s.HTTP.Token)
	if _, set := h["token"]; set {
		if msg := httpauth.CheckToken(s.HTTP.Token); msg != "" {
			d.errorf(hp.key("token"), "%s", msg)
		}
	}
	d.setStrings(hp, h, "allowedOrigins", &s.HTTP.AllowedOrigins)
	for i, o := range s.HTTP.AllowedOrigins {
		if norm, msg := httpauth.NormalizeOrigin(o); msg != "" {
			d.errorf(hp.key("allowedOrigins").index(i), "%s", msg)
		} else {
			s.HTTP.AllowedOrigins[i] = norm
		}
	}
	d.setStrings(hp, h, "allowedHosts", &s.HTTP.AllowedHosts)
	for i, host := range s.HTTP.AllowedHosts {
		if strings.ContainsAny(host, "/@ \t\r\n") || strings.Contains(host, "://") {
			d.errorf(hp.key("allowedHosts").index(i), "%q is not a host name (write \"example.com\" or \"example.com:8443\")", host)
		} else {
			s.HTTP.AllowedHosts[i] = strings.ToLower(host)
		}
	}
	setInt(d, hp, h, "sessionIdleTimeoutSeconds", 10, 604800, &s.HTTP.SessionIdleTimeoutSeconds)
	setInt(d, hp, h, "maxSessions", 1, 100000, &s.HTTP.MaxSessions)
	setInt(d, hp, h, "maxSessionsPerClient", 0, 100000, &s.HTTP.MaxSessionsPerClient)
	setInt(d, hp, h, "readHeaderTimeoutSeconds", 1, 300, &s.HTTP.ReadHeaderTimeoutSeconds)
	setInt(d, hp, h, "readBodyTimeoutSeconds", 1, 3600, &s.HTTP.ReadBodyTimeoutSeconds)
	setInt(d, hp, h, "idleTimeoutSeconds", 1, 3600, &s.HTTP.IdleTimeoutSeconds)
	setInt(d, hp, h, "maxConnections", 1, 1000000, &s.HTTP.MaxConnections)
	setInt(d, hp, h, "maxConnectionsPerClient", 0, 1000000, &s.HTTP.MaxConnectionsPerClient)
	if v, ok := h["requestStateKey"]; ok {
		d.secret(hp.key("requestStateKey"), v, &s.HTTP.RequestStateKey)
	}
	if v, ok := h["tls"]; ok {
		tp := hp.key("tls")
		if t, ok := d.object(tp, v, "certFile", "keyFile"); ok {
			s.HTTP.TLS = &ServeTLS{}
			d.setString(tp, t, "certFile", &s.HTTP.TLS.CertFile)
			d.setString(tp, t, "keyFile", &s.HTTP.TLS.KeyFile)
			for _, kf := range [][2]string{{"certFile", s.HTTP.TLS.CertFile}, {"keyFile", s.HTTP.TLS.KeyFile}} {
				key, f := kf[0], kf[1]
				if _, set := t[key]; !set {
					d.errorf(tp, "%s is required (a certificate and its key)", key)
				} else if !filepath.IsAbs(f) {
					d.errorf(tp.key(key), "an absolute path is required, got %q", f)
				}
			}
		}
	}
}

// trajectory reads serve.trajectory written as an object: the path and the log's limits.
func (d *decoder) trajectory(p path, m map[string]any, s *Serve) {
	d.unknownKeys(p, m, []string{"path", "maxBytes", "maxFiles", "maxEventsPerCall", "updateIntervalMs"})
	d.setString(p, m, "path", &s.Trajectory)
	l := &s.TrajectoryLimits
	setInt(d, p, m, "maxBytes", 1<<20, 1<<40, &l.MaxBytes)
	setInt(d, p, m, "maxFiles", 1, 1000, &l.MaxFiles)
	setInt(d, p, m, "maxEventsPerCall", 100, 100_000_000, &l.MaxEventsPerCall)
	setInt(d, p, m, "updateIntervalMs", 1, 3_600_000, &l.UpdateIntervalMs)
}

func (d *decoder) runtime(p path, v any, r *Runtime) {
	m, ok := d.object(p, v, "compileCache", "compileCacheDir", "admission", "suspended", "results")
	if !ok {
		return
	}
	if v, ok := m["results"]; ok {
		d.results(p.key("results"), v, &r.Results)
	}
	d.setBool(p, m, "compileCache", &r.CompileCache)
	d.setString(p, m, "compileCacheDir", &r.CompileCacheDir)
	if v, ok := m["admission"]; ok {
		ap := p.key("admission")
		if m, ok := d.object(ap, v, "maxRunning", "maxQueued", "memoryBudgetBytes"); ok {
			setInt(d, ap, m, "maxRunning", 1, 4096, &r.Admission.MaxRunning)
			setInt(d, ap, m, "maxQueued", 0, 65536, &r.Admission.MaxQueued)
			if _, set := m["maxQueued"]; set && r.Admission.MaxQueued == 0 {
				r.Admission.MaxQueued = -1 // explicit 0: no queue at all
			}
			setInt(d, ap, m, "memoryBudgetBytes", 16<<20, 1<<50, &r.Admission.MemoryBudgetBytes)
		}
	}
	if v, ok := m["suspended"]; ok {
		d.suspended(p.key("suspended"), v, &r.Suspended)
	}
}

func (d *decoder) suspended(sp path, v any, out *Suspended) {
	m, ok := d.object(sp, v, "maxRuns", "maxRunsPerPrincipal", "maxRunsPerSession", "maxBytes", "maxBytesPerPrincipal", "maxBytesPerSession")
	if !ok {
		return
	}
	setInt(d, sp, m, "maxRuns", 1, 1000000, &out.MaxRuns)
	setInt(d, sp, m, "maxRunsPerPrincipal", 1, 1000000, &out.MaxRunsPerPrincipal)
	setInt(d, sp, m, "maxRunsPerSession", 1, 1000000, &out.MaxRunsPerSession)
	setInt(d, sp, m, "maxBytes", 1<<20, 64<<30, &out.MaxBytes)
	setInt(d, sp, m, "maxBytesPerPrincipal", 1<<20, 64<<30, &out.MaxBytesPerPrincipal)
	setInt(d, sp, m, "maxBytesPerSession", 1<<20, 64<<30, &out.MaxBytesPerSession)
	// A share larger than what contains it is a mistake (it could never be reached).
	type pair struct {
		key, outer string
		v, o       int64
	}
	for _, c := range []pair{
		{"maxRunsPerPrincipal", "maxRuns", int64(out.MaxRunsPerPrincipal), int64(out.MaxRuns)},
		{"maxRunsPerSession", "maxRunsPerPrincipal", int64(out.MaxRunsPerSession), int64(out.MaxRunsPerPrincipal)},
		{"maxRunsPerSession", "maxRuns", int64(out.MaxRunsPerSession), int64(out.MaxRuns)},
		{"maxBytesPerPrincipal", "maxBytes", out.MaxBytesPerPrincipal, out.MaxBytes},
		{"maxBytesPerSession", "maxBytesPerPrincipal", out.MaxBytesPerSession, out.MaxBytesPerPrincipal},
		{"maxBytesPerSession", "maxBytes", out.MaxBytesPerSession, out.MaxBytes},
	} {
		_, setV := m[c.key]
		_, setO := m[c.outer]
		if setV && setO && c.v > c.o {
			d.errorf(sp.key(c.key), "%d is larger than %s (%d)", c.v, c.outer, c.o)
		}
	}
}
