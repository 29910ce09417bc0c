-- KEYS: zset, queue hash, failure key[, undo stash: zset, hash, record]. ARGV: ids.
-- Returns how many were in the queue.
if queue_missing(KEYS[2]) then
  return not_found()
end
local keep, refused = stash_open(4)
if refused then
  return refused
end
local n = 0
for _, id in ipairs(ARGV) do
  stash_put(keep, KEYS[1], KEYS[2], id)
  if redis.call("ZREM", KEYS[1], id) == 1 then
    n = n + 1
  end
  redis.call("HDEL", KEYS[2], id, id .. ":rc", id .. ":fr", "x:src:" .. id)
end
forget_failures(KEYS[3], ARGV)
stash_close(keep)
return n
