-- KEYS: purge key, queue hash. ARGV: chunk size. Returns how many were deleted.
local ids = redis.call("ZRANGE", KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #ids == 0 then
  return 0
end
local fields = {}
for _, id in ipairs(ids) do
  fields[#fields + 1] = id
  fields[#fields + 1] = id .. ":rc"
  fields[#fields + 1] = id .. ":fr"
  fields[#fields + 1] = "x:src:" .. id
end
redis.call("HDEL", KEYS[2], unpack(fields))
redis.call("ZREMRANGEBYRANK", KEYS[1], 0, #ids - 1)
return #ids
