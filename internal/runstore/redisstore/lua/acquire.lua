-- acquire: ARGV 1 key id, 2 sc, 3 r, 4 token, 5 lease ms, 6 version held ('' none), 7 largest
-- sealed record accepted. Returns {'OK', sealed record (sealed scope when unchanged), stored r, version,
-- unchanged (0/1)} with the lease taken, or {'BUSY', ms left on the lease}.
local lease = tonumber(ARGV[5])
if cancelled() then return {'CANCELLED'} end
local cur = redis.call('HMGET', RUN, 'k', 'sc', 'r', 'v')
local v = check(cur, ARGV[1], ARGV[2], ARGV[3])
if v then return {v} end
if not redis.call('SET', LEASE, ARGV[4], 'NX', 'PX', lease) then return {'BUSY', redis.call('PTTL', LEASE)} end
at_least(lease)
local ver = cur[4] or ''
if ARGV[6] ~= '' and ARGV[6] == ver then return {'OK', redis.call('HGET', RUN, 'sco') or '', cur[3] or '', ver, 1} end
-- Sized before it is read: a record larger than any this store writes was planted.
if redis.call('HSTRLEN', RUN, 'rec') > tonumber(ARGV[7]) then
  redis.call('DEL', LEASE)
  return {'TOOLARGE'}
end
return {'OK', redis.call('HGET', RUN, 'rec') or '', cur[3] or '', ver, 0}
