-- cancel: returns {'OK', 1, principal digest, session digest} when the run existed, {'OK', 0}
-- otherwise.
local cur = redis.call('HMGET', RUN, 'prin', 'sess', 'ttl')
if not cur[2] then return {'OK', 0} end
drop()
redis.call('SET', CX, '1', 'PX', tonumber(cur[3]) or 1000)
return {'OK', 1, cur[1] or '', cur[2]}
