-- KEYS: an undo stash's zset, hash, record. Deletes the record of a stash that kept
-- nothing (its action failed, or removed nothing); returns 1 if it did, else 0.
if redis.call("EXISTS", KEYS[1], KEYS[2]) > 0 then
  return 0
end
local n = redis.call("HGET", KEYS[3], "n")
if n and n ~= "0" then
  return 0
end
return redis.call("DEL", KEYS[3])
