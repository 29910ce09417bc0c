-- KEYS: a queue's failure key. ARGV: id
-- The message's failure history as stored (nil: none), or {"?type", the key's type} when
-- the key is not a hash (another client's write: reported, never an error).
local t = redis.call("TYPE", KEYS[1]).ok
if t == "none" then
  return false
end
if t ~= "hash" then
  return {"?type", t}
end
return redis.call("HGET", KEYS[1], ARGV[1])
