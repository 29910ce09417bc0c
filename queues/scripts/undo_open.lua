-- KEYS: an undo stash's record[, the queue's hash and zset]. ARGV: action, queue,
-- destination ("" if none), ttl (ms)[, the most bytes it may keep, per-message overhead,
-- sample size, ids...].
-- Opens the stash a destructive script then fills (stash_open in _prelude.lua): its
-- record expires with it. With a bound: first the bytes it would keep (undo_size.lua's
-- reckoning: of these ids, or of the whole queue, sampled), and nothing opened past it.
-- Returns {expiry (epoch ms, the server's clock; 0: not opened), bytes (-1: unchecked)}.
if redis.call("EXISTS", KEYS[1]) == 1 then
  return redis.error_reply("undoInUse")
end
local bytes = -1
if #ARGV > 4 then
  local over, sample = tonumber(ARGV[6]), tonumber(ARGV[7])
  bytes = 0
  if #ARGV > 7 then
    for i = 8, #ARGV do
      bytes = bytes + redis.call("HSTRLEN", KEYS[2], ARGV[i]) + over
    end
  else
    local count = redis.call("ZCARD", KEYS[3])
    local looked = math.min(count, sample)
    for k = 0, looked - 1 do
      local rank = math.floor(k * count / looked)
      local id = redis.call("ZRANGE", KEYS[3], rank, rank)[1]
      bytes = bytes + redis.call("HSTRLEN", KEYS[2], id) + over
    end
    if looked > 0 then
      bytes = math.floor(bytes * count / looked)
    end
  end
  if bytes > tonumber(ARGV[5]) then
    return {0, bytes}
  end
end
local _, ms = now()
local exp = int(ms + tonumber(ARGV[4]))
redis.call("HSET", KEYS[1], "action", ARGV[1], "q", ARGV[2], "to", ARGV[3], "exp", exp,
  "at", int(ms), "n", 0, "bytes", 0)
redis.call("PEXPIREAT", KEYS[1], exp)
return {tonumber(exp), bytes}
