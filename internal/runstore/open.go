package runstore

import (
	"context"
	"log/slog"

	"github.com/codemode-go/codemode/config"
)

// OpenRedis opens runStore.redis with the given limits. It is set by internal/runstore/redisstore
// when a program links it, so that programs without a shared store never link go-redis.
var OpenRedis func(ctx context.Context, cfg *config.Config, lim Limits, logger *slog.Logger) (Durable, error)

// Public wraps a Durable as the root package's public *codemode.RunStore (set by that package):
// the gateway builds its store from internal parts and hands it to the runtime this way.
var Public func(Durable) any

// Private is the Durable behind a *codemode.RunStore (set by that package), nil for nil.
var Private func(any) Durable
