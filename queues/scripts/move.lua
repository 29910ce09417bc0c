-- KEYS: source zset, source hash, destination zset, destination hash
-- ARGV: offset, limit, ids... (no ids: the source's first `limit` messages from rank `offset`)
-- Moves each message with its id, body, rc and fr; it is visible in the destination at
-- once. Neither queue's totalsent / totalrecv changes. A body over the destination's
-- maxsize stays where it is. Returns {moved, skipped}.
if queue_missing(KEYS[2]) then
  return redis.error_reply("queueNotFound src")
end
local dmax = redis.call("HGET", KEYS[4], "maxsize")
if not dmax then
  return redis.error_reply("queueNotFound dst")
end
dmax = tonumber(dmax)
local ids = {}
if #ARGV > 2 then
  for i = 3, #ARGV do ids[#ids + 1] = ARGV[i] end
else
  local offset = tonumber(ARGV[1])
  ids = redis.call("ZRANGE", KEYS[1], offset, offset + tonumber(ARGV[2]) - 1)
end
local _, ms = now()
local score = int(ms)
local moved, skipped = 0, 0
for _, id in ipairs(ids) do
  if redis.call("ZSCORE", KEYS[1], id) then
    local f = redis.call("HMGET", KEYS[2], id, id .. ":rc", id .. ":fr")
    local body = f[1] or ""
    if dmax ~= -1 and #body > dmax then
      skipped = skipped + 1
    else
      redis.call("ZREM", KEYS[1], id)
      redis.call("HDEL", KEYS[2], id, id .. ":rc", id .. ":fr")
      redis.call("ZADD", KEYS[3], score, id)
      redis.call("HSET", KEYS[4], id, body)
      if f[2] then redis.call("HSET", KEYS[4], id .. ":rc", f[2]) end
      if f[3] then redis.call("HSET", KEYS[4], id .. ":fr", f[3]) end
      moved = moved + 1
    end
  end
end
return {moved, skipped}
