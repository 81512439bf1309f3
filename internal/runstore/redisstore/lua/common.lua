-- Shared by every script (prepended). ARGV[1] is the key prefix and the keys are built here
-- from it, so every key of the store must live on one Redis (on Redis Cluster: one hash slot,
-- with a hash tag in the prefix such as "{codemode}:").
--
-- Keys, for a run id ID:
--   run:ID    hash: k (key id), sc (scope digest), r (run digest), sess (session digest),
--             rec (sealed record), ttl (ms)
--   res:ID    hash: call id -> sealed result
--   lease:ID  the current holder's token (SET NX PX; compare-and-delete)
--   cx:ID     "cancelled" marker, for the run's ttl
--   own:D     a live-call owner's heartbeat
--   idx       zset: ID -> expiry (ms) of every live run; sz: hash ID -> bytes; bytes: their sum
--   sess:S    zset: ID -> expiry of the runs of one session
-- Times come from the Redis server's clock (TIME), so every replica agrees on expiry.
local P = ARGV[1]
local IDX, SZ, BYTES = P .. 'idx', P .. 'sz', P .. 'bytes'

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- forget drops a run's accounting (its keys are deleted or expired).
local function forget(id)
  local n = tonumber(redis.call('HGET', SZ, id) or '0')
  if n ~= 0 then redis.call('DECRBY', BYTES, n) end
  redis.call('HDEL', SZ, id)
  redis.call('ZREM', IDX, id)
end

-- sweep forgets the runs whose keys expired on their own.
local function sweep(now)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', IDX, '-inf', '(' .. now)) do forget(id) end
end

local function sess_bytes(sk)
  local total = 0
  for _, id in ipairs(redis.call('ZRANGE', sk, 0, -1)) do
    total = total + tonumber(redis.call('HGET', SZ, id) or '0')
  end
  return total
end

-- admit checks the limits (ARGV[L..L+3]: runs, session runs, bytes, session bytes) for a run of
-- session index sk that is new (isnew) and grows by delta bytes. It returns a verdict or nil.
local function admit(sk, now, isnew, delta, L)
  sweep(now)
  redis.call('ZREMRANGEBYSCORE', sk, '-inf', '(' .. now)
  if isnew and (redis.call('ZCARD', IDX) >= tonumber(ARGV[L]) or redis.call('ZCARD', sk) >= tonumber(ARGV[L + 1])) then
    return 'TOOMANY'
  end
  if delta > 0 then
    local total = tonumber(redis.call('GET', BYTES) or '0')
    if total + delta > tonumber(ARGV[L + 2]) or sess_bytes(sk) + delta > tonumber(ARGV[L + 3]) then
      return 'TOOMANYBYTES'
    end
  end
  return nil
end

local function account(id, delta)
  if delta ~= 0 then
    redis.call('HINCRBY', SZ, id, delta)
    redis.call('INCRBY', BYTES, delta)
  end
end

-- touch makes a run's keys expire at `at` (ms) and indexes it.
local function touch(id, sessd, at, now)
  redis.call('PEXPIREAT', P .. 'run:' .. id, at)
  redis.call('PEXPIREAT', P .. 'res:' .. id, at)
  redis.call('ZADD', IDX, at, id)
  local sk = P .. 'sess:' .. sessd
  redis.call('ZADD', sk, at, id)
  local pt = redis.call('PTTL', sk)
  if pt < 0 or now + pt < at then redis.call('PEXPIREAT', sk, at) end
end

-- drop deletes a run: record, results, lease and accounting.
local function drop(id, sessd)
  redis.call('DEL', P .. 'run:' .. id, P .. 'res:' .. id, P .. 'lease:' .. id)
  forget(id)
  redis.call('ZREM', P .. 'sess:' .. sessd, id)
end

-- check is W3 on digests: cur is HMGET run k sc r; returns a verdict or nil.
local function check(cur, k, sc, r)
  if not cur[1] then return 'UNAVAILABLE' end
  if cur[1] ~= k then return 'WRONGKEY' end
  if cur[2] ~= sc then return 'WRONGSESSION' end
  if cur[3] ~= '' and r ~= '' and cur[3] ~= r then return 'WRONGRUN' end
  return nil
end

local function cancelled(id)
  return redis.call('EXISTS', P .. 'cx:' .. id) == 1
end

-- release_if_mine is the compare-and-delete of a lease: a slow holder never drops a newer one.
local function release_if_mine(id, token)
  local lk = P .. 'lease:' .. id
  if redis.call('GET', lk) == token then redis.call('DEL', lk) end
end
