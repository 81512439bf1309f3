-- release: ARGV 2 id, 3 token, 4 ttl ms, 5 "1" when a record follows, 6 sealed record,
-- 7..10 limits, 11.. delivered call ids (distinct).
local id, token = ARGV[2], ARGV[3]
local ttl = tonumber(ARGV[4])
local now = now_ms()
if cancelled(id) then
  release_if_mine(id, token)
  return {'CANCELLED'}
end
local rk, resk = P .. 'run:' .. id, P .. 'res:' .. id
local sessd = redis.call('HGET', rk, 'sess')
if not sessd then return {'UNAVAILABLE'} end
if redis.call('GET', P .. 'lease:' .. id) ~= token then return {'LEASELOST'} end
local delta = 0
for i = 11, #ARGV do delta = delta - redis.call('HSTRLEN', resk, ARGV[i]) end
if ARGV[5] == '1' then delta = delta + #ARGV[6] - redis.call('HSTRLEN', rk, 'rec') end
local v = admit(P .. 'sess:' .. sessd, now, false, delta, 7)
if v then return {v} end
for i = 11, #ARGV do redis.call('HDEL', resk, ARGV[i]) end
if ARGV[5] == '1' then
  redis.call('HSET', rk, 'rec', ARGV[6], 'ttl', ttl)
else
  redis.call('HSET', rk, 'ttl', ttl)
end
account(id, delta)
redis.call('DEL', P .. 'lease:' .. id)
touch(id, sessd, now + ttl, now)
return {'OK'}
