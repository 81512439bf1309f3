-- acquire: ARGV 2 id, 3 key id, 4 sc, 5 r, 6 token, 7 lease ms.
-- Returns {'OK', sealed record, stored r} with the lease taken.
local id = ARGV[2]
local lease = tonumber(ARGV[7])
local now = now_ms()
if cancelled(id) then return {'CANCELLED'} end
local rk = P .. 'run:' .. id
local cur = redis.call('HMGET', rk, 'k', 'sc', 'r', 'sess', 'rec')
local v = check(cur, ARGV[3], ARGV[4], ARGV[5])
if v then return {v} end
if not redis.call('SET', P .. 'lease:' .. id, ARGV[6], 'NX', 'PX', lease) then return {'BUSY'} end
if redis.call('PTTL', rk) < lease then touch(id, cur[4] or '', now + lease, now) end -- never expires under its holder
return {'OK', cur[5] or '', cur[3] or ''}
