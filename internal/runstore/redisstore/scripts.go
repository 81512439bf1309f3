package redisstore

import (
	"embed"

	"github.com/redis/go-redis/v9"
)

// The store's operations are Lua scripts: each check-and-write (scope, lease, limits, the
// cancelled marker) is atomic on the server, whichever replica runs it. Each declares every key
// it touches (KEYS), and the keys of one script share a hash slot, so they run unchanged on
// Redis Cluster: run scripts on the run's slot ({runId}), accounting scripts on the principal's
// shard ({acct:NN}). See keys.go for the layout.
//
//go:embed lua/*.lua
var luaFiles embed.FS

func loadScript(prelude, name string) *redis.Script {
	body, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err) // embedded at build time
	}
	if prelude == "" {
		return redis.NewScript(string(body))
	}
	common, err := luaFiles.ReadFile("lua/" + prelude + ".lua")
	if err != nil {
		panic(err)
	}
	return redis.NewScript(string(common) + "\n" + string(body))
}

// Run scripts: KEYS are runKeys (run, res, lease, cx[, owner]).
var (
	scriptPut          = loadScript("run", "put")
	scriptAcquire      = loadScript("run", "acquire")
	scriptRenew        = loadScript("run", "renew")
	scriptRelease      = loadScript("run", "release")
	scriptDelete       = loadScript("run", "delete")
	scriptCancel       = loadScript("run", "cancel")
	scriptAddResult    = loadScript("run", "addresult")
	scriptResults      = loadScript("run", "results")
	scriptHeartbeat    = loadScript("run", "heartbeat")
	scriptReleaseLease = loadScript("run", "releaselease")
)

// Accounting scripts: KEYS are acctKeys (idx, sz, bytes[, prin, sess, a]) of one shard.
var (
	scriptAccount  = loadScript("acct", "account")
	scriptForget   = loadScript("acct", "forget")
	scriptUsage    = loadScript("acct", "usage")
	scriptSessRuns = loadScript("", "sessruns")
)
