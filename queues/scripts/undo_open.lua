-- KEYS: an undo stash's record. ARGV: action, queue, destination ("" if none), ttl (ms).
-- Opens the stash a destructive script then fills (stash_open in _prelude.lua): its
-- record expires with it; returns the expiry (epoch ms, by the server's clock).
if redis.call("EXISTS", KEYS[1]) == 1 then
  return redis.error_reply("undoInUse")
end
local _, ms = now()
local exp = int(ms + tonumber(ARGV[4]))
redis.call("HSET", KEYS[1], "action", ARGV[1], "q", ARGV[2], "to", ARGV[3], "exp", exp,
  "at", int(ms), "n", 0, "bytes", 0)
redis.call("PEXPIREAT", KEYS[1], exp)
return exp
