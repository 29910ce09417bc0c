-- KEYS: zset, queue hash. ARGV: id. Read-only.
-- Returns now, score, size, body (false when longer than LUA_BODY_MAX: the client reads
-- it with one plain HGET), rc, fr.
if queue_missing(KEYS[2]) then
  return not_found()
end
local score = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not score then
  return false
end
local _, ms = now()
local f = redis.call("HMGET", KEYS[2], ARGV[1] .. ":rc", ARGV[1] .. ":fr")
-- a member another client named like one of the queue's own fields (vt, x:...): that
-- field is the queue's, not its body
local own = string.sub(ARGV[1], 1, 2) == "x:"
for _, a in ipairs(ATTRIBUTES) do
  own = own or a == ARGV[1]
end
local size = own and 0 or redis.call("HSTRLEN", KEYS[2], ARGV[1])
local body = false
if own then
  body = ""
elseif size <= LUA_BODY_MAX then
  body = redis.call("HGET", KEYS[2], ARGV[1]) or ""
end
return {ms, score, size, body, f[1] or "0", f[2] or ""}
