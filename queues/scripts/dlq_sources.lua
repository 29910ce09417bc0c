-- KEYS: queue hashes. ARGV: a queue name.
-- Read-only. The positions (1-based) in KEYS of the queues whose dead-letter policy
-- (x:dlq) names ARGV[1].
local out = {}
for i, qkey in ipairs(KEYS) do
  if redis.call("HGET", qkey, "x:dlq") == ARGV[1] then
    out[#out + 1] = i
  end
end
return out
