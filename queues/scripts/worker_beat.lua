-- KEYS: the namespace's live-worker index (a sorted set), this worker's record (a hash).
-- ARGV: the worker's id, its ttl in ms (0: it stops: forget it now), then its record's
-- field, value pairs. Outside the RSMQ layout (no queue name holds '@'); both keys
-- expire, so a worker that dies without a word disappears after its ttl.
local _, ms = now()
local ttl = tonumber(ARGV[2])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ms)
if ttl <= 0 then
  redis.call("ZREM", KEYS[1], ARGV[1])
  redis.call("DEL", KEYS[2])
  return 0
end
local fields = {}
for i = 3, #ARGV do
  fields[#fields + 1] = ARGV[i]
end
fields[#fields + 1] = "beat"
fields[#fields + 1] = int(ms)
redis.call("HSET", KEYS[2], unpack(fields))
redis.call("PEXPIRE", KEYS[2], ttl)
redis.call("ZADD", KEYS[1], ms + ttl, ARGV[1])
local left = redis.call("PTTL", KEYS[1])
if left < ttl then
  redis.call("PEXPIRE", KEYS[1], ttl)
end
return 1
