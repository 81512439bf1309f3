package codemode

import (
	"context"
	"errors"
	"log/slog"

	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/sandbox"
)

// RunStore keeps suspended runs — and the values cells save with results.save — where every
// runtime sharing it can continue them: a run exec suspended in one process is resumed by a wait
// in another, and a restart loses none. Open one from a configuration's runStore section with
// OpenRunStore (Redis: standalone, Sentinel or Cluster), or make one in memory with
// NewMemoryRunStore (several runtimes in one process, tests). Set it as Options.RunStore; see
// RATIONALE.md for what crosses between processes.
type RunStore struct {
	d runstore.Durable
}

func init() {
	// The gateway builds its store from internal parts and hands it to the runtime as this type.
	runstore.Public = func(d runstore.Durable) any { return &RunStore{d: d} }
	runstore.Private = func(v any) runstore.Durable { s, _ := v.(*RunStore); return s.durable() }
}

// ErrNoRedis is OpenRunStore's error when the configuration names runStore.redis and the program
// does not link the Redis backend (see OpenRunStore).
var ErrNoRedis = errors.New(`runStore.redis needs the Redis backend: import _ "github.com/codemode-go/codemode/redisstore" (the gateway package links it)`)

// OpenRunStore connects the shared run store the configuration names (runStore.redis), with the
// fleet-wide limits of runtime.suspended, or returns nil when it names none. The Redis backend
// is linked only into programs that import github.com/codemode-go/codemode/redisstore (or the
// gateway package), so a program without a shared store does not carry go-redis: without it,
// OpenRunStore fails with ErrNoRedis. An unreachable Redis is not an error — it is logged, every
// exec and wait that needs the store fails with run_store_error until it answers — but a missing
// key, credential or certificate, or a bad URL, is. Close the store after the runtimes using it.
func OpenRunStore(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*RunStore, error) {
	if cfg.RunStore.Redis == nil {
		return nil, nil
	}
	if runstore.OpenRedis == nil {
		return nil, ErrNoRedis
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	lim := suspendedFromConfig(cfg).storeLimits()
	lim.RecordBytes = max(runstore.DefaultRecordBytes, int(cfg.Tools.CodeMode.MaxSnapshotBytes)+sandbox.MaxStateBytes)
	d, err := runstore.OpenRedis(ctx, cfg, lim, logger)
	if err != nil {
		return nil, err
	}
	return &RunStore{d: d}, nil
}

// NewMemoryRunStore makes a run store in this process's memory, shared by every runtime given
// it: what a fleet does through Redis, within one program (and how the tests exercise it).
// limits bound it like runtime.suspended bounds a shared store (zero fields: no bound).
func NewMemoryRunStore(limits SuspendedLimits) *RunStore {
	return &RunStore{d: runstore.NewMemDurable(limits.storeLimits())}
}

// Close releases the store's connections. Close it after the runtimes that use it; the records
// stay in a shared store for the other processes.
func (s *RunStore) Close() error {
	if s == nil || s.d == nil {
		return nil
	}
	return s.d.Close()
}

// durable is the store behind s (nil for a nil store).
func (s *RunStore) durable() runstore.Durable {
	if s == nil {
		return nil
	}
	return s.d
}
