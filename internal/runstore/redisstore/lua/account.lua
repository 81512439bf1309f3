-- account: ARGV 1 id, 2 keep ms (expiry of the accounting; -1 leaves it), 3 record bytes (-1: unchanged),
-- 4 call id of a result to add ('' none), 5 its bytes, 6..11 limits (runs, session runs,
-- principal runs, bytes, session bytes, principal bytes), 12 other shards' runs, 13 their bytes,
-- 14.. call ids of delivered results (no longer counted).
-- Checks the limits for the change and applies it. Returns {'OK', was new (0/1), old record
-- bytes, shard runs, shard bytes} or a verdict.
local PRIN, SESS, A = KEYS[4], KEYS[5], KEYS[6]
local id = ARGV[1]
local now = now_ms()
local keep = tonumber(ARGV[2])
local at = now + keep
if keep < 0 then at = tonumber(redis.call('ZSCORE', IDX, id) or (now + 60000)) end
sweep(now)
redis.call('ZREMRANGEBYSCORE', PRIN, '-inf', '(' .. now)
redis.call('ZREMRANGEBYSCORE', SESS, '-inf', '(' .. now)
local isnew = not redis.call('ZSCORE', IDX, id)
if isnew then redis.call('DEL', A) end -- stale accounting of an expired run with this id
local oldrec = tonumber(redis.call('HGET', A, 'rec') or '0')
local delta = 0
local rec = tonumber(ARGV[3])
if rec >= 0 then delta = delta + rec - oldrec end
local callid = ARGV[4]
if callid ~= '' then
  delta = delta + tonumber(ARGV[5]) - tonumber(redis.call('HGET', A, 'r:' .. callid) or '0')
end
for i = 14, #ARGV do delta = delta - tonumber(redis.call('HGET', A, 'r:' .. ARGV[i]) or '0') end
if isnew then
  if redis.call('ZCARD', IDX) + tonumber(ARGV[12]) >= tonumber(ARGV[6]) then return {'TOOMANY'} end
  if redis.call('ZCARD', SESS) >= tonumber(ARGV[7]) then return {'TOOMANYSESSION'} end
  if redis.call('ZCARD', PRIN) >= tonumber(ARGV[8]) then return {'TOOMANYPRINCIPAL'} end
end
if delta > 0 then
  if tonumber(redis.call('GET', BYTES) or '0') + tonumber(ARGV[13]) + delta > tonumber(ARGV[9]) then
    return {'TOOMANYBYTES', 'fleet'}
  end
  if total(SESS) + delta > tonumber(ARGV[10]) or total(PRIN) + delta > tonumber(ARGV[11]) then
    return {'TOOMANYBYTES'}
  end
end
if rec >= 0 then redis.call('HSET', A, 'rec', rec) end
if callid ~= '' then redis.call('HSET', A, 'r:' .. callid, ARGV[5]) end
for i = 14, #ARGV do redis.call('HDEL', A, 'r:' .. ARGV[i]) end
if delta ~= 0 then
  redis.call('HINCRBY', SZ, id, delta)
  redis.call('INCRBY', BYTES, delta)
elseif isnew then
  redis.call('HSET', SZ, id, 0)
end
redis.call('ZADD', IDX, at, id)
redis.call('ZADD', PRIN, at, id)
redis.call('ZADD', SESS, at, id)
for _, k in ipairs({PRIN, SESS, A}) do
  local pt = redis.call('PTTL', k)
  if pt < 0 or pt < at - now then redis.call('PEXPIREAT', k, at) end
end
local u = shard_usage()
return {'OK', isnew and 1 or 0, oldrec, u[1], u[2]}
