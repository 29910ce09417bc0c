-- KEYS: zset, queue hash. ARGV: first rank, count, with body (1 or 0)
-- Read-only (the census): the messages of a zset rank range, in queue order, without
-- changing rc, fr or totalrecv. Returns the server's now (epoch ms) and 5 values per
-- message (6 with the body): id, score, rc, fr (false: never received), body size in
-- bytes[, body].
if queue_missing(KEYS[2]) then
  return not_found()
end
local zkey, qkey = KEYS[1], KEYS[2]
local first, count, with_body = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == "1"
local _, ms = now()
local out = {ms}
if count <= 0 then
  return out
end
local range = redis.call("ZRANGE", zkey, first, first + count - 1, "WITHSCORES")
for i = 1, #range, 2 do
  local id = range[i]
  out[#out + 1] = id
  out[#out + 1] = tonumber(range[i + 1])
  if with_body then
    local f = redis.call("HMGET", qkey, id, id .. ":rc", id .. ":fr")
    local body = f[1] or ""
    out[#out + 1] = tonumber(f[2] or 0)
    out[#out + 1] = f[3] and tonumber(f[3]) or false
    out[#out + 1] = #body
    out[#out + 1] = body
  else
    local f = redis.call("HMGET", qkey, id .. ":rc", id .. ":fr")
    out[#out + 1] = tonumber(f[1] or 0)
    out[#out + 1] = f[2] and tonumber(f[2]) or false
    out[#out + 1] = redis.call("HSTRLEN", qkey, id)
  end
end
return out
