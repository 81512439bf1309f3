-- put: ARGV 2 id, 3 key id, 4 sc, 5 r, 6 sess, 7 sealed record, 8 ttl ms, 9..12 limits.
local id, k, sc, r, sessd, rec = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local ttl = tonumber(ARGV[8])
local now = now_ms()
if cancelled(id) then return {'CANCELLED'} end
local rk = P .. 'run:' .. id
local cur = redis.call('HMGET', rk, 'k', 'sc', 'r')
local isnew = not cur[1]
local old = 0
if not isnew then
  local v = check(cur, k, sc, r)
  if v then return {v} end
  if cur[3] ~= r then return {'WRONGRUN'} end -- a replaced record keeps its exact scope
  if redis.call('EXISTS', P .. 'lease:' .. id) == 1 then return {'BUSY'} end
  old = redis.call('HSTRLEN', rk, 'rec')
end
local delta = #rec - old
local v = admit(P .. 'sess:' .. sessd, now, isnew, delta, 9)
if v then return {v} end
if isnew then forget(id) end -- stale accounting of an expired run with this id, if any
redis.call('HSET', rk, 'k', k, 'sc', sc, 'r', r, 'sess', sessd, 'rec', rec, 'ttl', ttl)
account(id, delta)
touch(id, sessd, now + ttl, now)
return {'OK'}
