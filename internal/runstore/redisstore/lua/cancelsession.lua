-- cancelsession: ARGV 2 session digest. Returns {'OK', number of runs cancelled}.
local sessd = ARGV[2]
local sk = P .. 'sess:' .. sessd
redis.call('ZREMRANGEBYSCORE', sk, '-inf', '(' .. now_ms())
local n = 0
for _, id in ipairs(redis.call('ZRANGE', sk, 0, -1)) do
  local cur = redis.call('HMGET', P .. 'run:' .. id, 'sess', 'ttl')
  if cur[1] == sessd then
    drop(id, sessd)
    redis.call('SET', P .. 'cx:' .. id, '1', 'PX', tonumber(cur[2]) or 1000)
    n = n + 1
  end
end
redis.call('DEL', sk)
return {'OK', n}
