-- KEYS: zset, queue hash, failure key[, undo stash: zset, hash, record]. ARGV: zset members exactly as stored, ids or not (a member some
-- other client wrote that is no RSMQ id can't be named any other way). Deletes each one
-- that is in the queue, with its body, rc and fr -- but never one of the queue's own
-- fields (vt, totalsent, x:...) that such a member may be named like.
-- Returns how many were in the queue.
if queue_missing(KEYS[2]) then
  return not_found()
end
local keep, refused = stash_open(4)
if refused then
  return refused
end
local own = {}
for _, f in ipairs(ATTRIBUTES) do
  own[f] = true
end
local n = 0
local gone = {}
for _, m in ipairs(ARGV) do
  if not own[m] and string.sub(m, 1, 2) ~= "x:" then
    stash_put(keep, KEYS[1], KEYS[2], m)
  end
  if redis.call("ZREM", KEYS[1], m) == 1 then
    n = n + 1
    if not own[m] and string.sub(m, 1, 2) ~= "x:" then
      redis.call("HDEL", KEYS[2], m, m .. ":rc", m .. ":fr", "x:src:" .. m)
      gone[#gone + 1] = m
    end
  end
end
forget_failures(KEYS[3], gone)
stash_close(keep)
return n
