-- release: ARGV 1 token, 2 ttl ms, 3 "1" when a record follows, 4 sealed record, 5 version,
-- 6.. delivered call ids.
local token = ARGV[1]
local ttl = tonumber(ARGV[2])
if cancelled() then
  release_if_mine(token)
  return {'CANCELLED'}
end
if redis.call('EXISTS', RUN) == 0 then return {'UNAVAILABLE'} end
if redis.call('GET', LEASE) ~= token then return {'LEASELOST'} end
for i = 6, #ARGV do redis.call('HDEL', RES, ARGV[i]) end
if ARGV[3] == '1' then
  redis.call('HSET', RUN, 'rec', ARGV[4], 'v', ARGV[5], 'ttl', ttl)
else
  redis.call('HSET', RUN, 'ttl', ttl)
end
redis.call('DEL', LEASE)
expire_in(ttl)
return {'OK'}
