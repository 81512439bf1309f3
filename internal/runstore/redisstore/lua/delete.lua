-- delete: ARGV 2 id, 3 token. A run already gone is not an error; a lost lease is.
local id, token = ARGV[2], ARGV[3]
if cancelled(id) then
  release_if_mine(id, token)
  return {'OK'}
end
local sessd = redis.call('HGET', P .. 'run:' .. id, 'sess')
if not sessd then return {'OK'} end
if redis.call('GET', P .. 'lease:' .. id) ~= token then return {'LEASELOST'} end
drop(id, sessd)
return {'OK'}
