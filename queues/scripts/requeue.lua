-- KEYS: zset, queue hash. ARGV: ids. Makes the messages visible now; rc and fr are kept.
if queue_missing(KEYS[2]) then
  return not_found()
end
local _, ms = now()
local score = int(ms)
local n = 0
for _, id in ipairs(ARGV) do
  if redis.call("ZSCORE", KEYS[1], id) then
    redis.call("ZADD", KEYS[1], score, id)
    n = n + 1
  end
end
return n
