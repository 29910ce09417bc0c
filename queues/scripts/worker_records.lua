-- KEYS: worker records (hashes). Read-only: each one's field, value pairs (empty: gone).
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = redis.call("HGETALL", key)
end
return out
