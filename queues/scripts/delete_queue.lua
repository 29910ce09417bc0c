-- KEYS: queue hash, zset, QUEUES set, purge key, failure key. ARGV: qname
-- UNLINK frees a big queue's memory in a background thread instead of blocking Redis.
local n = redis.call("UNLINK", KEYS[1], KEYS[2])
redis.call("SREM", KEYS[3], ARGV[1])
if n == 0 then
  return not_found()
end
redis.call("UNLINK", KEYS[4], KEYS[5])
return 1
