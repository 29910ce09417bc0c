-- KEYS: zset, queue hash. ARGV: field, value, field, value, ...
if queue_missing(KEYS[2]) then
  return not_found()
end
local _, ms, sec = now()
redis.call("HSET", KEYS[2], "modified", sec, unpack(ARGV))
local a, bad = attributes(KEYS[1], KEYS[2], ms)
if bad then
  -- Saved; what is still not a number was written by another client.
  return unreadable(bad)
end
return a
