-- KEYS: a queue's failure key, its zset, its hash
-- ARGV: HSCAN cursor, count, source ("" = every message; else only those dead-lettered
-- from that queue: x:src:{id})
-- One bounded step over the failure histories of messages still in the queue.
-- Returns {next cursor, now (ms), then per message: id, its summary ({id}:t: the type,
-- then first / last seen and the error line, see record_failure), visible (1/0), and
-- the queue it was dead-lettered from ("" when it was not)}.
local _, ms = now()
if not is_hash(KEYS[1]) then
  return {"0", ms}
end
local r = redis.call("HSCAN", KEYS[1], ARGV[1], "MATCH", "*:t", "COUNT", ARGV[2])
local out = {r[1], ms}
local source = ARGV[3]
for i = 1, #r[2], 2 do
  local id = string.sub(r[2][i], 1, -3)
  local score = redis.call("ZSCORE", KEYS[2], id)
  local src = score and redis.call("HGET", KEYS[3], "x:src:" .. id)
  if score and (source == "" or src == source) then
    out[#out + 1] = id
    out[#out + 1] = r[2][i + 1]
    out[#out + 1] = (tonumber(score) or 0) <= ms and 1 or 0
    out[#out + 1] = src or ""
  end
end
return out
