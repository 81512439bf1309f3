-- usage: returns {'OK', shard runs, shard bytes}.
sweep(now_ms())
local u = shard_usage()
return {'OK', u[1], u[2]}
