-- addresult: ARGV 2 id, 3 key id, 4 sc, 5 r, 6 call id, 7 sealed result, 8 max results,
-- 9..12 limits.
local id, callid, blob = ARGV[2], ARGV[6], ARGV[7]
local now = now_ms()
if cancelled(id) then return {'CANCELLED'} end
local rk, resk = P .. 'run:' .. id, P .. 'res:' .. id
local cur = redis.call('HMGET', rk, 'k', 'sc', 'r', 'sess')
local v = check(cur, ARGV[3], ARGV[4], ARGV[5])
if v then return {v} end
if redis.call('HEXISTS', resk, callid) == 0 and redis.call('HLEN', resk) >= tonumber(ARGV[8]) then
  return {'TOOMANYRESULTS'}
end
local delta = #blob - redis.call('HSTRLEN', resk, callid)
v = admit(P .. 'sess:' .. cur[4], now, false, delta, 9)
if v then return {v} end
redis.call('HSET', resk, callid, blob)
account(id, delta)
local pt = redis.call('PTTL', rk)
if pt > 0 then redis.call('PEXPIRE', resk, pt) end
return {'OK'}
