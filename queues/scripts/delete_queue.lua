-- KEYS: queue hash, zset, QUEUES set, purge key, failure key, flow key, flow index[,
-- undo stash: zset, hash, record]. ARGV: qname
-- UNLINK frees a big queue's memory in a background thread instead of blocking Redis.
-- With a stash the queue's zset and hash become the stash's (RENAME: O(1), the whole
-- hash -- attributes, totals, every message's fields -- kept exactly as it was).
local keep, refused = stash_open(8)
if refused then
  return refused
end
if keep then
  if queue_missing(KEYS[1]) then
    return not_found()
  end
  if redis.call("EXISTS", keep.z, keep.m) > 0 then
    return redis.error_reply("undoInUse")
  end
  local n = redis.call("ZCARD", KEYS[2])
  if n > 0 then
    redis.call("RENAME", KEYS[2], keep.z)
    redis.call("PEXPIREAT", keep.z, keep.exp)
  end
  redis.call("RENAME", KEYS[1], keep.m)
  redis.call("PEXPIREAT", keep.m, keep.exp)
  redis.call("SREM", KEYS[3], ARGV[1])
  redis.call("UNLINK", KEYS[4], KEYS[5], KEYS[6])
  redis.call("HDEL", KEYS[7], ARGV[1])
  redis.call("HSET", keep.meta, "n", n, "kind", "queue")
  return 1
end
local n = redis.call("UNLINK", KEYS[1], KEYS[2])
redis.call("SREM", KEYS[3], ARGV[1])
if n == 0 then
  return not_found()
end
redis.call("UNLINK", KEYS[4], KEYS[5], KEYS[6])
redis.call("HDEL", KEYS[7], ARGV[1])
return 1
