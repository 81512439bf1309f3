-- cancel: ARGV 2 id. Returns {'OK', 1} when the run existed.
local id = ARGV[2]
local cur = redis.call('HMGET', P .. 'run:' .. id, 'sess', 'ttl')
if not cur[1] then return {'OK', 0} end
drop(id, cur[1])
redis.call('SET', P .. 'cx:' .. id, '1', 'PX', tonumber(cur[2]) or 1000)
return {'OK', 1}
