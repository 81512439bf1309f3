-- addresult: ARGV 1 key id, 2 sc, 3 r, 4 call id, 5 sealed result, 6 max results.
local callid = ARGV[4]
if cancelled() then return {'CANCELLED'} end
local cur = redis.call('HMGET', RUN, 'k', 'sc', 'r')
local v = check(cur, ARGV[1], ARGV[2], ARGV[3])
if v then return {v} end
if redis.call('HEXISTS', RES, callid) == 0 and redis.call('HLEN', RES) >= tonumber(ARGV[6]) then
  return {'TOOMANYRESULTS'}
end
redis.call('HSET', RES, callid, ARGV[5])
local pt = redis.call('PTTL', RUN)
if pt > 0 then redis.call('PEXPIRE', RES, pt) end
return {'OK'}
