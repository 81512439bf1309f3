package config

import (
	"net/url"
	"strings"
	"time"
)

// Serve is the `serve` section: how `codemode serve` exposes itself over HTTP.
type Serve struct {
	HTTP ServeHTTP
	// Trajectory is a file the gateway appends its audit log to: every exec, wait, direct and
	// nested call, approval and progress update of every session, as JSON Lines (bounded,
	// secrets redacted; `codemode trace FILE` prints it). "" keeps none.
	Trajectory string
	// TrajectoryLimits bound that log (and `codemode agent --transcript`); in a file they sit
	// beside the path: `trajectory: {path: "audit.jsonl", maxBytes: …}`.
	TrajectoryLimits TrajectoryLimits
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
	// UpdateIntervalMs coalesces progress updates: at most one per nested call per interval is
	// recorded. 1–3,600,000, default 1000.
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
	// MaxSessions bounds the MCP sessions open at once; initializing one more gets HTTP 503:
	// 1–100000, default 1024.
	MaxSessions int
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
	defaultMaxRunsPerSession         = 16
	defaultSuspendedMaxBytesSession  = 256 << 20
)

// TokenEnv is the environment variable that supplies serve.http.token when the file has none.
const TokenEnv = "CODEMODE_TOKEN"

func (d *decoder) serve(p path, v any, s *Serve) {
	m, ok := d.object(p, v, "http", "trajectory")
	if !ok {
		return
	}
	if t, isObject := m["trajectory"].(map[string]any); isObject {
		d.trajectory(p.key("trajectory"), t, s)
	} else {
		d.setString(p, m, "trajectory", &s.Trajectory)
	}
	v, ok = m["http"]
	if !ok {
		return
	}
	hp := p.key("http")
	h, ok := d.object(hp, v, "token", "allowedOrigins", "allowedHosts", "sessionIdleTimeoutSeconds", "maxSessions")
	if !ok {
		return
	}
	d.setString(hp, h, "token", &s.HTTP.Token)
	if _, set := h["token"]; set {
		if msg := CheckToken(s.HTTP.Token); msg != "" {
			d.errorf(hp.key("token"), "%s", msg)
		}
	}
	d.setStrings(hp, h, "allowedOrigins", &s.HTTP.AllowedOrigins)
	for i, o := range s.HTTP.AllowedOrigins {
		if norm, msg := NormalizeOrigin(o); msg != "" {
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

// CheckToken returns why token cannot be a bearer token, or "". The same rule applies to
// CODEMODE_TOKEN.
func CheckToken(token string) string {
	if len(token) < 16 {
		return "a token must be at least 16 characters (use a random one, e.g. `openssl rand -hex 32`)"
	}
	if len(token) > 4096 {
		return "a token must be at most 4096 characters"
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c > '~' {
			return "a token must be printable ASCII without spaces"
		}
	}
	return ""
}

// NormalizeOrigin returns origin as browsers send it (scheme://host[:port], lower case, no
// default port), or why it is not an origin.
func NormalizeOrigin(origin string) (string, string) {
	u, err := url.Parse(origin)
	switch {
	case err != nil || u.Scheme == "" || u.Host == "":
		return "", "expected an origin such as \"https://app.example.com\""
	case u.Scheme != "http" && u.Scheme != "https":
		return "", "an origin must use http or https"
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", "an origin is scheme://host[:port] only, without user, path, query or fragment"
	}
	host := strings.ToLower(u.Host)
	if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		host = strings.TrimSuffix(host, ":"+p)
	}
	return u.Scheme + "://" + host, ""
}

func (d *decoder) runtime(p path, v any, r *Runtime) {
	m, ok := d.object(p, v, "compileCache", "compileCacheDir", "admission", "suspended")
	if !ok {
		return
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
