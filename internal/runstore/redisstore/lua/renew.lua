-- renew: ARGV 1 token, 2 lease ms.
if cancelled() then return {'CANCELLED'} end
if redis.call('EXISTS', RUN) == 0 then return {'UNAVAILABLE'} end
if redis.call('GET', LEASE) ~= ARGV[1] then return {'LEASELOST'} end
local lease = tonumber(ARGV[2])
redis.call('PEXPIRE', LEASE, lease)
at_least(lease)
return {'OK'}
