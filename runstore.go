package codemode

import (
	"context"
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
// returns nil when it names none. The AES key comes from the environment variable named by
// runStore.redis.keyEnv. An unreachable Redis is not an error — it is logged, every exec and wait
// that needs the store fails with run_store_error until it answers, and then service resumes — but
// a missing key or a bad URL is. Close the store after the runtimes that use it.
func OpenRunStore(ctx context.Context, cfg *config.Config, logger *slog.Logger) (RunStore, error) {
	rc := cfg.RunStore.Redis
	if rc == nil {
		return nil, nil
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	key, err := redisstore.KeyFromEnv(rc.KeyEnv)
	if err != nil {
		return nil, err
	}
	sus := cfg.Runtime.Suspended
	lim := runstore.Limits{SessionRuns: sus.MaxRunsPerSession, Bytes: sus.MaxBytes, SessionBytes: sus.MaxBytesPerSession,
		RecordBytes: max(runstore.DefaultRecordBytes, int(cfg.Tools.CodeMode.MaxSnapshotBytes)+sandbox.MaxStateBytes)}
	st, err := redisstore.New(redisstore.Options{URL: rc.URL, Key: key, Prefix: rc.Prefix, Limits: lim})
	if err != nil {
		return nil, err
	}
	if err := st.Ping(ctx); err != nil {
		logger.Warn("run store: Redis does not answer yet; execs and waits that suspend fail until it does", "err", err)
	}
	return st, nil
}
