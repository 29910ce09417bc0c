-- KEYS: zset, queue hash. ARGV: id. Read-only.
if queue_missing(KEYS[2]) then
  return not_found()
end
local score = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not score then
  return false
end
local _, ms = now()
local f = redis.call("HMGET", KEYS[2], ARGV[1], ARGV[1] .. ":rc", ARGV[1] .. ":fr")
local body = f[1] or ""
return {ms, score, #body, body, f[2] or "0", f[3] or ""}
