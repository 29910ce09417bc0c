-- KEYS: zset, queue hash, purge key, failure key (deleted with the messages)[, undo
-- stash: zset, hash, record]. With a stash the zset becomes the stash's zset (RENAME:
-- O(1), ids and scores kept exactly) and undo_drain.lua then moves the bodies, rc and fr
-- into the stash's hash in bounded chunks (the stash's record counts how far).
-- Detaches every message at once (RENAME is O(1)), so the queue reads empty at once;
-- purge_drain.lua then deletes the bodies in bounded chunks. Returns the number
-- detached, or -1 when an earlier purge left a purge key to drain first.
if queue_missing(KEYS[2]) then
  return not_found()
end
if redis.call("EXISTS", KEYS[3]) == 1 then
  return -1
end
local keep, refused = stash_open(5)
if refused then
  return refused
end
if keep and redis.call("EXISTS", keep.z, keep.m) > 0 then
  return redis.error_reply("undoInUse")
end
redis.call("UNLINK", KEYS[4])
local n = redis.call("ZCARD", KEYS[1])
if keep then
  if n > 0 then
    redis.call("RENAME", KEYS[1], keep.z)
    redis.call("PEXPIREAT", keep.z, keep.exp)
  end
  redis.call("HSET", keep.meta, "n", n, "d", 0, "kind", "purge")
  return n
end
if n > 0 then
  redis.call("RENAME", KEYS[1], KEYS[3])
end
return n
