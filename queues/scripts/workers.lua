-- KEYS: the namespace's live-worker index. ARGV: at most how many.
-- Read-only: the ids of the workers whose heartbeat has not expired, the newest first.
local _, ms = now()
return redis.call("ZREVRANGEBYSCORE", KEYS[1], "+inf", "(" .. int(ms), "LIMIT", 0, tonumber(ARGV[1]))
