-- KEYS: zset, queue hash
-- ARGV: keep ids ("1" or ""), realtime channel ("" = none), n * 22 random id chars,
--       then per message 5 values: id ("" = a new one), body, delay ms (from now),
--       rc, fr ("" = never received)
-- An import batch: all bodies are checked against maxsize before any is written. A new
-- id is made like send's (the server's microseconds + random characters), so it sorts
-- after every id sent before; a kept id that is already in the queue (or has a body
-- there) is skipped and reported, never overwritten nor duplicated. rc and fr are kept
-- with the id only: a message with a new id is a new message, never received. A kept
-- id must be one an RSMQ client makes (rsmq_id): else nothing is written.
-- Returns {imported ids (in order, "" where skipped), ...}.
local q = redis.call("HMGET", KEYS[2], "vt", "delay", "maxsize")
if not q[1] or not q[2] or not q[3] then
  return not_found()
end
local maxsize, why = integer("maxsize", q[3])
if not maxsize then
  return unreadable(why)
end
local keep = ARGV[1] == "1"
local n = (#ARGV - 3) / 5
-- A kept id is one an RSMQ client makes (rsmq_id), or nothing is written: an id that
-- names a field of the queue's hash (totalrecv, vt) or another message's rc / fr would
-- break the queue for every client.
if keep then
  for i = 1, n do
    if not rsmq_id(ARGV[3 + (i - 1) * 5 + 1]) then
      return redis.error_reply("invalidId " .. (i - 1))
    end
  end
end
if maxsize ~= -1 then
  for i = 1, n do
    local size = #ARGV[3 + (i - 1) * 5 + 2]
    if size > maxsize then
      return redis.error_reply("messageTooLong " .. size .. " " .. maxsize .. " " .. (i - 1))
    end
  end
end
local us, ms = now()
local suffixes = ARGV[3]
local out = {}
local written = 0
for i = 1, n do
  local b = 3 + (i - 1) * 5
  local id, body, delay, rc, fr = ARGV[b + 1], ARGV[b + 2], tonumber(ARGV[b + 3]), ARGV[b + 4], ARGV[b + 5]
  if keep then
    if redis.call("ZSCORE", KEYS[1], id) or redis.call("HEXISTS", KEYS[2], id) == 1 then
      id = ""
    end
  else
    id = base36(us + i - 1) .. string.sub(suffixes, i * 22 - 21, i * 22)
  end
  if id ~= "" then
    redis.call("ZADD", KEYS[1], int(ms + delay), id)
    redis.call("HSET", KEYS[2], id, body)
    if keep and rc ~= "0" then
      redis.call("HSET", KEYS[2], id .. ":rc", rc)
    end
    if keep and fr ~= "" then
      redis.call("HSET", KEYS[2], id .. ":fr", fr)
    end
    written = written + 1
  end
  out[i] = id
end
if written > 0 then
  redis.call("HINCRBY", KEYS[2], "totalsent", written)
  if ARGV[2] ~= "" then
    redis.call("PUBLISH", ARGV[2], redis.call("ZCARD", KEYS[1]))
  end
end
return out
