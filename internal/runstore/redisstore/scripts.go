package redisstore

import (
	"embed"

	"github.com/redis/go-redis/v9"
)

// The store's operations are Lua scripts: each check-and-write (scope, lease, limits, the
// cancelled marker) is atomic on the server, whichever replica runs it.
//
//go:embed lua/*.lua
var luaFiles embed.FS

func loadScript(name string) *redis.Script {
	common, err := luaFiles.ReadFile("lua/common.lua")
	if err != nil {
		panic(err) // embedded at build time
	}
	body, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return redis.NewScript(string(common) + "\n" + string(body))
}

var (
	scriptPut           = loadScript("put")
	scriptAcquire       = loadScript("acquire")
	scriptRelease       = loadScript("release")
	scriptDelete        = loadScript("delete")
	scriptCancel        = loadScript("cancel")
	scriptCancelSession = loadScript("cancelsession")
	scriptAddResult     = loadScript("addresult")
	scriptResults       = loadScript("results")
	scriptHeartbeat     = loadScript("heartbeat")
	scriptUsage         = loadScript("usage")
	scriptReleaseLease  = loadScript("releaselease")
)
