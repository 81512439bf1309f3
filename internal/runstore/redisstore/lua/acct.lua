-- Shared by the accounting scripts (prepended). The limits are counted in accounting shards:
-- a principal's runs and sessions all live in one shard (one hash slot, tag {acct:NN}), so the
-- per-principal and per-session limits are exact and atomic; the fleet-wide limits add the
-- other shards' totals, which the client passes in (cached for about a second).
--
-- KEYS[1] idx   zset: run id -> expiry (ms) of every run of the shard
-- KEYS[2] sz    hash: run id -> bytes the run counts
-- KEYS[3] bytes the sum of sz
-- KEYS[4] prin  zset: run id -> expiry, the runs of one principal
-- KEYS[5] sess  zset: run id -> expiry, the runs of one session
-- KEYS[6] a     hash of one run: rec -> record bytes, r:<call id> -> result bytes
local IDX, SZ, BYTES = KEYS[1], KEYS[2], KEYS[3]

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function forget(id)
  local n = tonumber(redis.call('HGET', SZ, id) or '0')
  if n ~= 0 then redis.call('DECRBY', BYTES, n) end
  redis.call('HDEL', SZ, id)
  redis.call('ZREM', IDX, id)
end

-- sweep forgets the runs whose expiry passed (their keys expired on their own).
local function sweep(now)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', IDX, '-inf', '(' .. now, 'LIMIT', 0, 256)) do forget(id) end
end

local function total(zk)
  local t = 0
  for _, id in ipairs(redis.call('ZRANGE', zk, 0, -1)) do
    t = t + tonumber(redis.call('HGET', SZ, id) or '0')
  end
  return t
end

local function shard_usage()
  return {redis.call('ZCARD', IDX), tonumber(redis.call('GET', BYTES) or '0')}
end
