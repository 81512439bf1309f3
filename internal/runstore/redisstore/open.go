package redisstore

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/runstore"
)

// A program links this package only when it needs Redis (the gateway does, or it imports
// github.com/codemode-go/codemode/redisstore): registering the opener here lets the root
// package's OpenRunStore open runStore.redis without importing go-redis itself.
func init() {
	runstore.OpenRedis = func(ctx context.Context, cfg *config.Config, lim runstore.Limits, logger *slog.Logger) (runstore.Durable, error) {
		st, err := OpenConfig(ctx, cfg, lim, logger)
		if err != nil {
			return nil, err
		}
		return st, nil
	}
}

// OpenConfig connects the store runStore.redis names: a standalone Redis, primaries behind Redis
// Sentinel, or a Redis Cluster, with the credentials, TLS material and sealing key the
// configuration points at (environment variables or files, never the file itself), and the
// fleet-wide limits lim. An unreachable Redis is not an error (it is logged); a missing key,
// credential or certificate, or a bad URL, is.
func OpenConfig(ctx context.Context, cfg *config.Config, lim runstore.Limits, logger *slog.Logger) (*Store, error) {
	rc := cfg.RunStore.Redis
	if rc == nil {
		return nil, fmt.Errorf("the configuration has no runStore.redis")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var key [32]byte
	var err error
	if rc.KeyEnv != "" {
		key, err = KeyFromEnv(rc.KeyEnv)
	} else {
		key, err = keyFromSecret(rc.Key)
	}
	if err != nil {
		return nil, err
	}
	opt := func(what string, s config.Secret) (string, error) {
		if s.IsZero() {
			return "", nil
		}
		v, err := s.Resolve()
		if err != nil {
			return "", fmt.Errorf("runStore.redis.%s: %w", what, err)
		}
		return v, nil
	}
	url := rc.URL
	if url == "" {
		if url, err = opt("url", rc.URLSecret); err != nil {
			return nil, err
		}
	}
	o := Options{Mode: rc.Mode, URL: url, Addrs: rc.Addrs, MasterName: rc.MasterName, Key: key, Prefix: rc.Prefix,
		Limits: lim, Timeout: rc.Timeout(), Lease: rc.Takeover()}
	if o.Username, err = opt("username", rc.Username); err != nil {
		return nil, err
	}
	if o.Password, err = opt("password", rc.Password); err != nil {
		return nil, err
	}
	if o.SentinelPassword, err = opt("sentinelPassword", rc.SentinelPassword); err != nil {
		return nil, err
	}
	if t := rc.TLS; t != nil {
		o.TLS = &TLSFiles{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName}
	}
	st, err := New(o)
	if err != nil {
		return nil, err
	}
	if err := st.Ping(ctx); err != nil {
		logger.Warn("run store: Redis does not answer yet (or refuses writes); execs and waits that suspend fail until it does", "mode", st.Mode(), "err", err)
	}
	return st, nil
}

// keyFromSecret reads the seal key from runStore.redis.key.
func keyFromSecret(s config.Secret) ([32]byte, error) {
	v, err := s.Resolve()
	if err != nil {
		return [32]byte{}, fmt.Errorf("runStore.redis.key: %w", err)
	}
	k, err := ParseKey(v)
	if err != nil {
		return [32]byte{}, fmt.Errorf("runStore.redis.key (%s): %v", s, err)
	}
	return k, nil
}
