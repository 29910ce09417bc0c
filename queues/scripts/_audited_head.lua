-- The head of an audited script (queues/scripts.py `audited`). Taken off the end:
-- ARGV ..., head, mode, [limit, ttl, generation known,] "1" if rated else "";
-- KEYS ..., audit stream, [rate counter, generation].
-- Rated: the API token's call is counted here, in the same round trip as the operation
-- (scripts/api_rate.lua's rule), and refused — before anything changes, with nothing
-- recorded — when its window is spent or when the tokens changed since the caller read
-- them (it then reads them again and calls once more).
local __rated = table.remove(ARGV) == "1"
local __gen_key, __rate_key, __gen_known, __ttl, __limit
if __rated then
  __gen_key = table.remove(KEYS)
  __rate_key = table.remove(KEYS)
  __gen_known = table.remove(ARGV)
  __ttl = table.remove(ARGV)
  __limit = table.remove(ARGV)
end
local __audit_key = table.remove(KEYS)
local __audit_mode = table.remove(ARGV)
local __audit_head = table.remove(ARGV)
if __rated then
  local generation = redis.call("GET", __gen_key) or "0"
  if generation ~= __gen_known then
    return redis.error_reply("apiRefused tokensChanged " .. generation)
  end
  local used = redis.call("INCR", __rate_key)
  if used == 1 then
    redis.call("EXPIRE", __rate_key, __ttl)
  end
  if used > tonumber(__limit) then
    redis.call("DECR", __rate_key)
    return redis.error_reply("apiRefused rateLimited")
  end
end
