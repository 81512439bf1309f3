-- Shared by the run scripts (prepended). Every key a script touches is in KEYS and all of them
-- are one run's, tagged {runId}, so they share a hash slot: on Redis Cluster a run lives on one
-- master and moves with its slot.
--
-- KEYS[1] run   hash: k (key id), sc (scope digest), r (run digest), sess (session digest),
--               prin (principal digest), rec (sealed record), sco (sealed scope), v (version),
--               ttl (ms)
-- KEYS[2] res   hash: call id -> sealed result
-- KEYS[3] lease the current holder's token (SET NX PX; compare-and-delete)
-- KEYS[4] cx    "cancelled" marker, for the run's ttl
-- Times are the Redis server's clock (PEXPIRE on the server), so every replica agrees on expiry.
local RUN, RES, LEASE, CX = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

local function cancelled()
  return redis.call('EXISTS', CX) == 1
end

-- check is W3 on digests: cur is HMGET run k sc r; returns a verdict or nil.
local function check(cur, k, sc, r)
  if not cur[1] then return 'UNAVAILABLE' end
  if cur[1] ~= k then return 'WRONGKEY' end
  if cur[2] ~= sc then return 'WRONGSESSION' end
  if cur[3] ~= '' and r ~= '' and cur[3] ~= r then return 'WRONGRUN' end
  return nil
end

-- expire_in makes the run's keys expire ms from now.
local function expire_in(ms)
  redis.call('PEXPIRE', RUN, ms)
  redis.call('PEXPIRE', RES, ms)
end

-- at_least keeps the run's keys for ms or more: a held run never expires under its holder.
local function at_least(ms)
  if redis.call('PTTL', RUN) < ms then expire_in(ms) end
end

local function release_if_mine(token)
  if redis.call('GET', LEASE) == token then redis.call('DEL', LEASE) end
end

-- drop deletes a run: record, results and lease.
local function drop()
  redis.call('DEL', RUN, RES, LEASE)
end
