-- KEYS: source zset, source hash, source failure key, target zset, target hash
--       (the same queue twice when re-sent to itself; one namespace: one client's keys)
-- ARGV: the original's id, "1" to delete the original ("" to keep it), delay ("" = the
--       target's), realtime channel of the target ("" = none), 22 random id chars, body
-- Edit and re-send: the body goes to the target as a new message (a new id, rc 0, the
-- target's delay and maxsize), and with "1" the original is deleted in the same step —
-- both or neither: an original gone meanwhile is refused before anything is written.
-- Returns the new id, or 0 when the original was to be deleted and is gone.
if queue_missing(KEYS[2]) then
  return redis.error_reply("queueNotFound src")
end
local q = redis.call("HMGET", KEYS[5], "vt", "delay", "maxsize")
if not q[1] or not q[2] or not q[3] then
  return redis.error_reply("queueNotFound dst")
end
local maxsize, why = integer("maxsize", q[3])
local delay, why_delay = integer("delay", q[2])
if not maxsize or not delay then
  return unreadable("dst " .. (why or why_delay))
end
local id, delete, body = ARGV[1], ARGV[2] == "1", ARGV[6]
if delete and not redis.call("ZSCORE", KEYS[1], id) then
  return 0
end
if maxsize ~= -1 and #body > maxsize then
  return redis.error_reply("messageTooLong " .. #body .. " " .. maxsize .. " 0")
end
local us, ms = now()
local new = base36(us) .. ARGV[5]
redis.call("ZADD", KEYS[4], int(ms + (ARGV[3] ~= "" and tonumber(ARGV[3]) or delay) * 1000), new)
redis.call("HSET", KEYS[5], new, body)
redis.call("HINCRBY", KEYS[5], "totalsent", 1)
if delete then
  redis.call("ZREM", KEYS[1], id)
  redis.call("HDEL", KEYS[2], id, id .. ":rc", id .. ":fr", "x:src:" .. id)
  forget_failures(KEYS[3], {id})
end
if ARGV[4] ~= "" then
  redis.call("PUBLISH", ARGV[4], redis.call("ZCARD", KEYS[4]))
end
return new
