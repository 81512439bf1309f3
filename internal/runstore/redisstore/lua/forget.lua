-- forget: ARGV 1 id. The run is gone: its accounting goes.
local id = ARGV[1]
forget(id)
redis.call('ZREM', KEYS[4], id)
redis.call('ZREM', KEYS[5], id)
redis.call('DEL', KEYS[6])
local u = shard_usage()
return {'OK', u[1], u[2]}
