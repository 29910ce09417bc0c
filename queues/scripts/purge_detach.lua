-- KEYS: zset, queue hash, purge key, failure key (deleted with the messages)
-- Detaches every message at once (RENAME is O(1)), so the queue reads empty at once;
-- purge_drain.lua then deletes the bodies in bounded chunks. Returns the number
-- detached, or -1 when an earlier purge left a purge key to drain first.
if queue_missing(KEYS[2]) then
  return not_found()
end
if redis.call("EXISTS", KEYS[3]) == 1 then
  return -1
end
redis.call("UNLINK", KEYS[4])
local n = redis.call("ZCARD", KEYS[1])
if n > 0 then
  redis.call("RENAME", KEYS[1], KEYS[3])
end
return n
