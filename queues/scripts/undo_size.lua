-- KEYS: a queue's hash, its zset. ARGV: per-message overhead (bytes), sample size, ids.
-- Read-only: the bytes an undo stash of these messages would hold (their bodies, and the
-- overhead for each). No ids: of the whole queue -- exact up to `sample` messages, past
-- that the mean of `sample` evenly spaced ones times the count (each ZRANGE O(log N)).
local over, sample = tonumber(ARGV[1]), tonumber(ARGV[2])
local n = 0
if #ARGV > 2 then
  for i = 3, #ARGV do
    n = n + redis.call("HSTRLEN", KEYS[1], ARGV[i]) + over
  end
  return n
end
local count = redis.call("ZCARD", KEYS[2])
local looked = math.min(count, sample)
if looked == 0 then
  return 0
end
for k = 0, looked - 1 do
  local rank = math.floor(k * count / looked)
  local id = redis.call("ZRANGE", KEYS[2], rank, rank)[1]
  n = n + redis.call("HSTRLEN", KEYS[1], id) + over
end
return math.floor(n * count / looked)
