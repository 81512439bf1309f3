package codemode

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/runstore/redisstore"
	"github.com/codemode-go/codemode/internal/sandbox"
)

// RunStore keeps suspended runs where every process sharing it can resume them (Options.RunStore).
// Get one from OpenRunStore; its methods are the runtime's business, not the embedder's.
type RunStore = runstore.Durable

// OpenRunStore connects the shared run store the configuration names (runStore.redis), or
// returns nil when it names none: a standalone Redis, primaries behind Redis Sentinel, or a
// Redis Cluster, with the credentials, TLS material and sealing key the configuration points
// at (environment variables or files, never the file itself). The limits are runtime.suspended's,
// fleet-wide. An unreachable Redis is not an error — it is logged, every exec and wait that needs
// the store fails with run_store_error until it answers, and then service resumes — but a
// missing key, credential or certificate, or a bad URL, is. Close the store after the runtimes
// that use it.
func OpenRunStore(ctx context.Context, cfg *config.Config, logger *slog.Logger) (RunStore, error) {
	rc := cfg.RunStore.Redis
	if rc == nil {
		return nil, nil
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var key [32]byte
	var err error
	if rc.KeyEnv != "" {
		key, err = redisstore.KeyFromEnv(rc.KeyEnv)
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
	o := redisstore.Options{Mode: rc.Mode, URL: url, Addrs: rc.Addrs, MasterName: rc.MasterName, Key: key, Prefix: rc.Prefix,
		Limits: suspendedFromConfig(cfg).storeLimits(), Timeout: rc.Timeout(), Lease: rc.Takeover()}
	o.Limits.RecordBytes = max(runstore.DefaultRecordBytes, int(cfg.Tools.CodeMode.MaxSnapshotBytes)+sandbox.MaxStateBytes)
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
		o.TLS = &redisstore.TLSFiles{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName}
	}
	st, err := redisstore.New(o)
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
	k, err := redisstore.ParseKey(v)
	if err != nil {
		return [32]byte{}, fmt.Errorf("runStore.redis.key (%s): %v", s, err)
	}
	return k, nil
}
