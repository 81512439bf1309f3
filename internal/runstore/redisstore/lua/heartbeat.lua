-- heartbeat: KEYS[5] the owner's key; ARGV 1 ttl ms.
if cancelled() then return {'CANCELLED'} end
if redis.call('EXISTS', RUN) == 0 then return {'UNAVAILABLE'} end
redis.call('SET', KEYS[5], '1', 'PX', tonumber(ARGV[1]))
return {'OK'}
