-- KEYS: an undo stash's zset, hash, record; the purged queue's hash. ARGV: chunk.
-- A purge with a stash (purge_detach.lua) renamed the queue's zset to the stash's; this
-- moves the next `chunk` messages' fields ({id}, {id}:rc, {id}:fr, x:src:{id}) from the
-- queue's hash into the stash's, from the rank the record's "d" says on. Stops early past
-- MOVE_BYTES of bodies. Returns how many it looked at (< chunk: done).
local d = tonumber(redis.call("HGET", KEYS[3], "d") or "")
if not d then
  return 0
end
local exp = redis.call("HGET", KEYS[3], "exp")
local ids = redis.call("ZRANGE", KEYS[1], d, d + tonumber(ARGV[1]) - 1)
local looked, bytes = 0, 0
for _, id in ipairs(ids) do
  local size = redis.call("HSTRLEN", KEYS[4], id)
  if looked > 0 and bytes + size > MOVE_BYTES then
    break
  end
  bytes = bytes + size
  local f = redis.call("HMGET", KEYS[4], id, id .. ":rc", id .. ":fr", "x:src:" .. id)
  local kv = {id, f[1] or ""}
  if f[2] then kv[#kv + 1] = id .. ":rc"; kv[#kv + 1] = f[2] end
  if f[3] then kv[#kv + 1] = id .. ":fr"; kv[#kv + 1] = f[3] end
  if f[4] then kv[#kv + 1] = "x:src:" .. id; kv[#kv + 1] = f[4] end
  redis.call("HSET", KEYS[2], unpack(kv))
  redis.call("HDEL", KEYS[4], id, id .. ":rc", id .. ":fr", "x:src:" .. id)
  looked = looked + 1
end
if looked > 0 then
  redis.call("PEXPIREAT", KEYS[2], exp)
  redis.call("HINCRBY", KEYS[3], "bytes", bytes)
end
if looked < #ids or #ids == tonumber(ARGV[1]) then
  redis.call("HSET", KEYS[3], "d", d + looked)
  return tonumber(ARGV[1])
end
redis.call("HDEL", KEYS[3], "d")
return looked
