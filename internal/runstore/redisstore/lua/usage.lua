-- usage: returns {'OK', live runs, bytes}.
sweep(now_ms())
return {'OK', redis.call('ZCARD', IDX), tonumber(redis.call('GET', BYTES) or '0')}
