package config

import (
	"net/url"
	"regexp"
	"strings"
)

// RunStore is the `runStore` section: where suspended runs live. Absent, they stay in the
// process's memory (a restart loses them, and only this process can resume them).
type RunStore struct {
	// Redis, when set, keeps suspended runs in Redis, sealed with a key from the environment:
	// every gateway configured with the same store and key resumes any of them.
	Redis *RedisStore
}

// RedisStore is runStore.redis.
type RedisStore struct {
	// URL is redis://[user:password@]host:port/db, rediss:// (TLS) or unix:///path. Required.
	URL string
	// KeyEnv names the environment variable holding the 32-byte key (64 hex digits or base64)
	// that seals every record; every replica needs the same one. Required: the key itself never
	// goes in the file.
	KeyEnv string
	// Prefix starts every key the store writes (default "codemode:"); a hash tag such as
	// "{codemode}:" on Redis Cluster.
	Prefix string
}

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
	r, ok := d.object(rp, v, "url", "keyEnv", "prefix")
	if !ok {
		return
	}
	out := &RedisStore{}
	d.setString(rp, r, "url", &out.URL)
	d.setString(rp, r, "keyEnv", &out.KeyEnv)
	d.setString(rp, r, "prefix", &out.Prefix)
	if _, set := r["url"]; !set {
		d.errorf(rp, "url is required (redis://host:6379/0, rediss:// for TLS, or unix:///path)")
	} else if u, err := url.Parse(out.URL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") {
		d.errorf(rp.key("url"), "expected a redis://, rediss:// or unix:// URL")
	}
	if _, set := r["keyEnv"]; !set {
		d.errorf(rp, "keyEnv is required: the name of the environment variable holding the 32-byte store key (`openssl rand -hex 32`)")
	} else if !envNameRE.MatchString(out.KeyEnv) {
		d.errorf(rp.key("keyEnv"), "invalid environment variable name %q (the key itself never goes in the file)", out.KeyEnv)
	}
	if _, set := r["prefix"]; set && (out.Prefix == "" || len(out.Prefix) > 64 || strings.ContainsAny(out.Prefix, " \t\r\n")) {
		d.errorf(rp.key("prefix"), "a prefix is 1–64 characters without spaces")
	}
	rs.Redis = out
}
