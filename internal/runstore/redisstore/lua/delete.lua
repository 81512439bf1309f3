-- delete: ARGV 1 token. A run already gone is not an error; a lost lease is.
local token = ARGV[1]
if cancelled() then
  release_if_mine(token)
  return {'OK'}
end
if redis.call('EXISTS', RUN) == 0 then return {'OK'} end
if redis.call('GET', LEASE) ~= token then return {'LEASELOST'} end
drop()
return {'OK'}
