-- KEYS: the queue's timings key (limits.TIMINGS_SUFFIX)
-- ARGV: most entries kept, ttl (s), then per message: age (ms since it was deleted, by
-- the worker's clock), fr (epoch ms), wait (ms), processing (ms)
-- Adds "recorded fr wait processing" per message, newest first; recorded is the Redis
-- TIME of the deletion (now - age). Keeps the newest `most`; expires `ttl` s after the
-- last record. A key of another type (another client's) is left alone: returns 0.
local key = KEYS[1]
local kind = redis.call("TYPE", key).ok
if kind ~= "none" and kind ~= "list" then
  return 0
end
local _, ms = now()
local most, ttl = tonumber(ARGV[1]), tonumber(ARGV[2])
local n = 0
for i = 3, #ARGV - 3, 4 do
  local age = tonumber(ARGV[i]) or 0
  redis.call("LPUSH", key, int(ms - age) .. " " .. ARGV[i + 1] .. " " .. ARGV[i + 2] .. " " .. ARGV[i + 3])
  n = n + 1
end
redis.call("LTRIM", key, 0, most - 1)
redis.call("EXPIRE", key, ttl)
return n
