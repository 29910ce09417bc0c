-- KEYS: zset, queue hash. ARGV: n
-- receive + delete in one step, as the original popMessage: totalrecv and rc count it.
if queue_missing(KEYS[2]) then
  return not_found()
end
local _, ms = now()
local ids = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", ms, "LIMIT", 0, ARGV[1])
if #ids == 0 then
  return {}
end
local out = {}
for _, id in ipairs(ids) do
  local rc = redis.call("HINCRBY", KEYS[2], id .. ":rc", 1)
  local fr = int(ms)
  if rc ~= 1 then
    fr = redis.call("HGET", KEYS[2], id .. ":fr")
  end
  out[#out + 1] = id
  out[#out + 1] = redis.call("HGET", KEYS[2], id)
  out[#out + 1] = rc
  out[#out + 1] = fr
  redis.call("ZREM", KEYS[1], id)
  redis.call("HDEL", KEYS[2], id, id .. ":rc", id .. ":fr", "x:src:" .. id)
end
redis.call("HINCRBY", KEYS[2], "totalrecv", #ids)
return out
