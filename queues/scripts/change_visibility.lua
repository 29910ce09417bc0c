-- KEYS: zset, queue hash. ARGV: id, vt
if queue_missing(KEYS[2]) then
  return not_found()
end
if not redis.call("ZSCORE", KEYS[1], ARGV[1]) then
  return 0
end
local _, ms = now()
redis.call("ZADD", KEYS[1], int(ms + tonumber(ARGV[2]) * 1000), ARGV[1])
return 1
