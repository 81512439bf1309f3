package config

import (
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// RunStore is the `runStore` section: where suspended runs live. Absent, they stay in the
// process's memory (a restart loses them, and only this process can resume them). Its limits
// are runtime.suspended's.
type RunStore struct {
	// Redis, when set, keeps suspended runs in Redis, sealed with a key from the environment:
	// every gateway configured with the same store and key resumes any of them.
	Redis *RedisStore
}

// Modes of runStore.redis.
const (
	RedisStandalone = "standalone"
	RedisSentinel   = "sentinel"
	RedisCluster    = "cluster"
)

// RedisStore is runStore.redis.
type RedisStore struct {
	// Mode is "standalone" (default: one Redis), "sentinel" (primaries found through Redis
	// Sentinel; url names a sentinel) or "cluster" (Redis Cluster; url names a node).
	Mode string
	// URL is redis://[user:password@]host:port/db, rediss:// (TLS) or unix:///path (standalone
	// only). Required: in the file (URL), or from the environment or a file (URLSecret) when it
	// carries a password.
	URL string
	// URLSecret is the URL from an environment variable or a file (a URL that carries a
	// password never goes in the file).
	URLSecret Secret
	// Addrs are more sentinels (sentinel) or seed nodes (cluster), host:port each.
	Addrs []string
	// MasterName is the primary's name that the sentinels monitor (required with sentinel).
	MasterName string
	// Username authenticates to Redis (ACL user), overriding the URL's.
	Username Secret
	// Password authenticates to Redis, overriding the URL's.
	Password Secret
	// SentinelPassword authenticates to the sentinels (sentinel mode).
	SentinelPassword Secret
	// TLS configures TLS beyond the system's CAs (the URL must be rediss://).
	TLS *RedisTLS
	// KeyEnv names the environment variable holding the 32-byte key (64 hex digits or base64)
	// that seals every record; every replica needs the same one. Key is the same from a Secret
	// (an environment variable or a file). One of the two is required: the key itself never
	// goes in the file.
	KeyEnv string
	// Key is the seal key from a Secret ({env} or {file}), when KeyEnv is not used.
	Key Secret
	// Prefix starts every key the store writes (default "codemode:"). A hash tag in it
	// ("{codemode}:") pins every key to one cluster slot; without one, each run has its own.
	Prefix string
	// TimeoutMs bounds each call to Redis: 100–60000, default 3000.
	TimeoutMs int
	// TakeoverMs is how long a replica that stops (killed, partitioned) keeps its runs: a wait
	// on another replica gets "busy" with a retry-after until then, and takes the run over
	// after. Its calls in flight count as lost when its heartbeats are this old. 200–300000,
	// default 5000.
	TakeoverMs int
}

// RedisTLS is runStore.redis.tls: PEM files, absolute paths.
type RedisTLS struct {
	CAFile     string // CA certificates that sign the server's certificate
	CertFile   string // client certificate (Redis's tls-auth-clients), with KeyFile
	KeyFile    string // its private key: a file, like a Kubernetes secret volume
	ServerName string // name expected in the server's certificate (default: the URL's host)
}

// Timeout is TimeoutMs as a duration (0: the store's default).
func (r *RedisStore) Timeout() time.Duration { return time.Duration(r.TimeoutMs) * time.Millisecond }

// Takeover is TakeoverMs as a duration (0: the store's default).
func (r *RedisStore) Takeover() time.Duration { return time.Duration(r.TakeoverMs) * time.Millisecond }

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (d *decoder) runStore(p path, v any, rs *RunStore) {
	m, ok := d.object(p, v, "redis")
	if !ok {
		return
	}
	v, ok = m["redis"]
	if !ok {
		return
	}
	rp := p.key("redis")
	r, ok := d.object(rp, v, "mode", "url", "addrs", "masterName", "username", "password", "sentinelPassword", "tls",
		"keyEnv", "key", "prefix", "timeoutMs", "takeoverMs")
	if !ok {
		return
	}
	out := &RedisStore{Mode: RedisStandalone}
	d.setString(rp, r, "mode", &out.Mode)
	switch out.Mode {
	case RedisStandalone, RedisSentinel, RedisCluster:
	default:
		d.errorf(rp.key("mode"), "expected standalone, sentinel or cluster, got %q", out.Mode)
	}
	switch u, set := r["url"]; {
	case !set:
		d.errorf(rp, "url is required (redis://host:6379/0, rediss:// for TLS, or unix:///path; or {env: \"REDIS_URL\"} when it holds a password)")
	case isObject(u):
		d.secret(rp.key("url"), u, &out.URLSecret)
	default:
		d.setString(rp, r, "url", &out.URL)
		if msg := checkRedisURL(out.URL, out.Mode); msg != "" {
			d.errorf(rp.key("url"), "%s", msg)
		}
	}
	d.setStrings(rp, r, "addrs", &out.Addrs)
	for i, a := range out.Addrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			d.errorf(rp.key("addrs").index(i), "expected host:port, got %q", a)
		}
	}
	if len(out.Addrs) > 0 && out.Mode == RedisStandalone {
		d.errorf(rp.key("addrs"), "addrs lists sentinels or cluster nodes: set mode to sentinel or cluster")
	}
	d.setString(rp, r, "masterName", &out.MasterName)
	if out.Mode == RedisSentinel && out.MasterName == "" {
		d.errorf(rp, "masterName is required with mode sentinel (the name the sentinels monitor, e.g. \"mymaster\")")
	}
	if _, set := r["masterName"]; set && out.Mode != RedisSentinel {
		d.errorf(rp.key("masterName"), "masterName applies to mode sentinel only")
	}
	for key, dst := range map[string]*Secret{"username": &out.Username, "password": &out.Password, "sentinelPassword": &out.SentinelPassword, "key": &out.Key} {
		if v, set := r[key]; set {
			d.secret(rp.key(key), v, dst)
		}
	}
	if _, set := r["sentinelPassword"]; set && out.Mode != RedisSentinel {
		d.errorf(rp.key("sentinelPassword"), "sentinelPassword applies to mode sentinel only")
	}
	if v, set := r["tls"]; set {
		tp := rp.key("tls")
		if t, ok := d.object(tp, v, "caFile", "certFile", "keyFile", "serverName"); ok {
			out.TLS = &RedisTLS{}
			d.setString(tp, t, "caFile", &out.TLS.CAFile)
			d.setString(tp, t, "certFile", &out.TLS.CertFile)
			d.setString(tp, t, "keyFile", &out.TLS.KeyFile)
			d.setString(tp, t, "serverName", &out.TLS.ServerName)
			for key, f := range map[string]string{"caFile": out.TLS.CAFile, "certFile": out.TLS.CertFile, "keyFile": out.TLS.KeyFile} {
				if _, set := t[key]; set && !filepath.IsAbs(f) {
					d.errorf(tp.key(key), "an absolute path is required, got %q", f)
				}
			}
			if (out.TLS.CertFile == "") != (out.TLS.KeyFile == "") {
				d.errorf(tp, "certFile and keyFile go together (a client certificate and its key)")
			}
			if out.URL != "" && !strings.HasPrefix(out.URL, "rediss://") {
				d.errorf(tp, "tls needs a rediss:// url")
			}
		}
	}
	_, hasEnv := r["keyEnv"]
	_, hasKey := r["key"]
	switch {
	case hasEnv && hasKey:
		d.errorf(rp, "give keyEnv or key, not both")
	case !hasEnv && !hasKey:
		d.errorf(rp, "keyEnv (or key: {env} / {file}) is required: where the 32-byte store key comes from (`openssl rand -hex 32`)")
	case hasEnv:
		d.setString(rp, r, "keyEnv", &out.KeyEnv)
		if !envNameRE.MatchString(out.KeyEnv) {
			d.errorf(rp.key("keyEnv"), "invalid environment variable name %q (the key itself never goes in the file)", out.KeyEnv)
		}
	}
	d.setString(rp, r, "prefix", &out.Prefix)
	if _, set := r["prefix"]; set && (out.Prefix == "" || len(out.Prefix) > 64 || strings.ContainsAny(out.Prefix, " \t\r\n")) {
		d.errorf(rp.key("prefix"), "a prefix is 1–64 characters without spaces")
	}
	setInt(d, rp, r, "timeoutMs", 100, 60000, &out.TimeoutMs)
	setInt(d, rp, r, "takeoverMs", 200, 300000, &out.TakeoverMs)
	rs.Redis = out
}

func isObject(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}

// checkRedisURL validates a URL written in the file: its scheme for the mode, and no password
// (one belongs in password or in a url from the environment).
func checkRedisURL(s, mode string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "expected a redis://, rediss:// or unix:// URL"
	}
	switch u.Scheme {
	case "redis", "rediss":
	case "unix":
		if mode != RedisStandalone {
			return "unix:// sockets are for mode standalone; sentinels and cluster nodes are host:port"
		}
	default:
		return "expected a redis://, rediss:// or unix:// URL"
	}
	if _, has := u.User.Password(); has {
		return "a password does not go in the file: use password: {env: \"REDIS_PASSWORD\"} (or url: {env: \"REDIS_URL\"})"
	}
	return ""
}
