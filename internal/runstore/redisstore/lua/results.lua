-- results: ARGV 1 token, 2 largest result accepted, 3 largest total. Returns {'OK', {call id,
-- sealed result, ...}}. Sizes are checked before anything is read (planted values).
if cancelled() then return {'CANCELLED'} end
if redis.call('EXISTS', RUN) == 0 then return {'UNAVAILABLE'} end
if redis.call('GET', LEASE) ~= ARGV[1] then return {'LEASELOST'} end
local each, all, sum = tonumber(ARGV[2]), tonumber(ARGV[3]), 0
for _, c in ipairs(redis.call('HKEYS', RES)) do
  local n = redis.call('HSTRLEN', RES, c)
  sum = sum + n
  if n > each or sum > all then return {'TOOLARGE'} end
end
return {'OK', redis.call('HGETALL', RES)}
