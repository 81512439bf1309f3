-- put: ARGV 1 key id, 2 sc, 3 r, 4 sess, 5 prin, 6 sealed record, 7 ttl ms, 8 version, 9 sealed
-- scope (what Acquire returns when the caller holds the current version).
local k, sc, r = ARGV[1], ARGV[2], ARGV[3]
if cancelled() then return {'CANCELLED'} end
local cur = redis.call('HMGET', RUN, 'k', 'sc', 'r')
if cur[1] then
  local v = check(cur, k, sc, r)
  if v then return {v} end
  if cur[3] ~= r then return {'WRONGRUN'} end -- a replaced record keeps its exact scope
  if redis.call('EXISTS', LEASE) == 1 then return {'BUSY', redis.call('PTTL', LEASE)} end
end
redis.call('HSET', RUN, 'k', k, 'sc', sc, 'r', r, 'sess', ARGV[4], 'prin', ARGV[5], 'rec', ARGV[6], 'ttl', ARGV[7], 'v', ARGV[8], 'sco', ARGV[9])
expire_in(tonumber(ARGV[7]))
return {'OK'}
