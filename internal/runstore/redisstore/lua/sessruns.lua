-- sessruns: KEYS[1] a session's zset in this shard. Returns {'OK', {run id, ...}} and drops the
-- index (the runs are being cancelled).
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
return {'OK', ids}
