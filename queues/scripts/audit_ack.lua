-- KEYS: the audit stream. ARGV: ids of records now safely elsewhere. Removes them, and
-- the stream when it is empty (atomically: a record added meanwhile keeps it), so a
-- drained namespace holds no key of the console's. Returns how many were removed.
local n = redis.call("XDEL", KEYS[1], unpack(ARGV))
if redis.call("XLEN", KEYS[1]) == 0 then
  redis.call("DEL", KEYS[1])
end
return n
