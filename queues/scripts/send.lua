-- KEYS: zset, queue hash
-- ARGV: delay ("" = the queue's; "@<epoch ms>" = visible at that time, or now if it has
--       passed), realtime channel ("" = none), n * 22 random id chars, message 1 .. n
-- All messages are checked before any is written: a batch is atomic.
local q = redis.call("HMGET", KEYS[2], "vt", "delay", "maxsize")
if not q[1] or not q[2] or not q[3] then
  return not_found()
end
local maxsize, why = integer("maxsize", q[3])
local delay, why_delay = integer("delay", q[2])
if not maxsize or not delay then
  return unreadable(why or why_delay)
end
local n = #ARGV - 3
if maxsize ~= -1 then
  for i = 1, n do
    local size = #ARGV[i + 3]
    if size > maxsize then
      return redis.error_reply("messageTooLong " .. size .. " " .. maxsize .. " " .. (i - 1))
    end
  end
end
local us, ms = now()
local score
if string.sub(ARGV[1], 1, 1) == "@" then
  local at = tonumber(string.sub(ARGV[1], 2))
  if at > ms + 9999999000 then
    return redis.error_reply("invalidAt")
  end
  score = int(math.max(at, ms))
else
  score = int(ms + (ARGV[1] ~= "" and tonumber(ARGV[1]) or delay) * 1000)
end
local suffixes = ARGV[3]
local ids = {}
if n == 0 then
  return ids
end
-- a ZADD and an HSET for each hundred messages (unpack's stack is small)
for first = 1, n, 100 do
  local scored, fields, k = {}, {}, 0
  for i = first, math.min(n, first + 99) do
    -- microseconds + index: the ids of one batch strictly increase in send order
    local id = base36(us + i - 1) .. string.sub(suffixes, i * 22 - 21, i * 22)
    ids[i] = id
    scored[k + 1], scored[k + 2] = score, id
    fields[k + 1], fields[k + 2] = id, ARGV[i + 3]
    k = k + 2
  end
  redis.call("ZADD", KEYS[1], unpack(scored))
  redis.call("HSET", KEYS[2], unpack(fields))
end
redis.call("HINCRBY", KEYS[2], "totalsent", n)
if ARGV[2] ~= "" then
  redis.call("PUBLISH", ARGV[2], redis.call("ZCARD", KEYS[1]))
end
return ids
