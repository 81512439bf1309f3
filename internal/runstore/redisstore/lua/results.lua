-- results: ARGV 2 id, 3 token. Returns {'OK', {call id, sealed result, ...}}.
local id, token = ARGV[2], ARGV[3]
if cancelled(id) then return {'CANCELLED'} end
if redis.call('EXISTS', P .. 'run:' .. id) == 0 then return {'UNAVAILABLE'} end
if redis.call('GET', P .. 'lease:' .. id) ~= token then return {'LEASELOST'} end
return {'OK', redis.call('HGETALL', P .. 'res:' .. id)}
