-- KEYS: queue hash, zset, QUEUES set. ARGV: qname, "clean" or "".
-- Whether a queue hash is left over: its name is not in the namespace's queue set and
-- its zset holds no message (go-rsmq's deleteQueue deletes the zset and the name but
-- leaves the hash). With "clean" such a hash is deleted (UNLINK), re-checked here.
-- Returns 1 if it is (was) left over, else 0.
if redis.call("EXISTS", KEYS[1]) == 0 or redis.call("SISMEMBER", KEYS[3], ARGV[1]) == 1
    or redis.call("EXISTS", KEYS[2]) == 1 then
  return 0
end
if ARGV[2] == "clean" then
  redis.call("UNLINK", KEYS[1])
end
return 1
