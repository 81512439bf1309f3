-- heartbeat: ARGV 2 id, 3 owner digest, 4 ttl ms.
local id = ARGV[2]
if cancelled(id) then return {'CANCELLED'} end
if redis.call('EXISTS', P .. 'run:' .. id) == 0 then return {'UNAVAILABLE'} end
redis.call('SET', P .. 'own:' .. ARGV[3], '1', 'PX', tonumber(ARGV[4]))
return {'OK'}
