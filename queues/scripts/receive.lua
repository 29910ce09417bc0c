-- KEYS: zset, queue hash. ARGV: n, vt ("" = the queue's)
-- Returns id, body, rc, fr for each message received (FIFO by score), flat.
local q = redis.call("HGET", KEYS[2], "vt")
if not q then
  return not_found()
end
local vt = tonumber(ARGV[2] ~= "" and ARGV[2] or q)
local _, ms = now()
local ids = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", ms, "LIMIT", 0, ARGV[1])
if #ids == 0 then
  return {}
end
local score = int(ms + vt * 1000)
local out = {}
for _, id in ipairs(ids) do
  redis.call("ZADD", KEYS[1], score, id)
  local rc = redis.call("HINCRBY", KEYS[2], id .. ":rc", 1)
  local fr
  if rc == 1 then
    fr = int(ms)
    redis.call("HSET", KEYS[2], id .. ":fr", fr)
  else
    fr = redis.call("HGET", KEYS[2], id .. ":fr")
  end
  out[#out + 1] = id
  out[#out + 1] = redis.call("HGET", KEYS[2], id)
  out[#out + 1] = rc
  out[#out + 1] = fr
end
redis.call("HINCRBY", KEYS[2], "totalrecv", #ids)
return out
