-- KEYS: an undo stash's zset, hash, record; the purged queue's hash. ARGV: chunk.
-- A purge with a stash (purge_detach.lua) renamed the queue's zset to the stash's; this
-- moves the next `chunk` messages' fields ({id}, {id}:rc, {id}:fr, x:src:{id}) from the
-- queue's hash into the stash's, from the rank the record's "d" says on, with one HMGET,
-- one HSET and one HDEL (chunk <= 1000: unpack's limit). Stops early past MOVE_BYTES of
-- bodies. Returns `chunk` while there is more, else how many it moved.
local d = tonumber(redis.call("HGET", KEYS[3], "d") or "")
if not d then
  return 0
end
local chunk = tonumber(ARGV[1])
local exp = redis.call("HGET", KEYS[3], "exp")
local ids = redis.call("ZRANGE", KEYS[1], d, d + chunk - 1)
local fields, bytes, n = {}, 0, 0
for _, id in ipairs(ids) do
  local size = redis.call("HSTRLEN", KEYS[4], id)
  if n > 0 and bytes + size > MOVE_BYTES then
    break
  end
  bytes = bytes + size
  n = n + 1
  fields[#fields + 1] = id
  fields[#fields + 1] = id .. ":rc"
  fields[#fields + 1] = id .. ":fr"
  fields[#fields + 1] = "x:src:" .. id
end
if n > 0 then
  local values = redis.call("HMGET", KEYS[4], unpack(fields))
  local kv = {}
  for i, f in ipairs(fields) do
    if values[i] then
      kv[#kv + 1] = f
      kv[#kv + 1] = values[i]
    end
  end
  if #kv > 0 then
    redis.call("HSET", KEYS[2], unpack(kv))
    redis.call("PEXPIREAT", KEYS[2], exp)
    redis.call("HDEL", KEYS[4], unpack(fields))
  end
  redis.call("HINCRBY", KEYS[3], "bytes", bytes)
end
if n < #ids or #ids == chunk then
  redis.call("HSET", KEYS[3], "d", d + n)
  return chunk
end
redis.call("HDEL", KEYS[3], "d")
return n
