-- KEYS: the namespace's live-worker index. ARGV: at most how many; the prefix of the
-- workers' record keys (the index's own prefix + "@worker:": the same hash tag, so the
-- same Cluster slot).
-- Read-only: the workers whose heartbeat has not expired, the newest first, each as its
-- id and its record's field, value pairs (empty: gone meanwhile) — one round trip.
local _, ms = now()
local ids = redis.call("ZREVRANGEBYSCORE", KEYS[1], "+inf", "(" .. int(ms), "LIMIT", 0, tonumber(ARGV[1]))
local out = {}
for _, id in ipairs(ids) do
  out[#out + 1] = id
  out[#out + 1] = redis.call("HGETALL", ARGV[2] .. id)
end
return out
