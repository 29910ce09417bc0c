-- KEYS: queue hash, QUEUES set. ARGV: qname, vt, delay, maxsize
local _, _, sec = now()
if redis.call("HSETNX", KEYS[1], "vt", ARGV[2]) == 0 then
  return redis.error_reply("queueExists")
end
redis.call("HSETNX", KEYS[1], "delay", ARGV[3])
redis.call("HSETNX", KEYS[1], "maxsize", ARGV[4])
redis.call("HSETNX", KEYS[1], "created", sec)
redis.call("HSETNX", KEYS[1], "modified", sec)
redis.call("SADD", KEYS[2], ARGV[1])
return 1
