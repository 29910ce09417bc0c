-- KEYS: zset, queue hash. ARGV: first rank, count, with body (1 or 0), byte budget,
-- bytes each message counts for besides its body
-- Read-only (the census): the messages of a zset rank range, in queue order, without
-- changing rc, fr or totalrecv. Stops early, after at least one message, once what it
-- read passes the byte budget: a call's time grows with the bodies it copies into the
-- reply and with the messages it looks up, so it counts both.
-- A body is measured (HSTRLEN) before it is read, and the call stops before a body that
-- would pass the budget; a body longer than LUA_BODY_MAX is not read here (its body
-- comes back false: the client reads it with one plain HGET).
-- Returns the server's now (epoch ms), 1 if the budget cut the range short (else 0),
-- then 5 values per message (6 with the body): id, score, rc, fr (false: never
-- received), body size in bytes[, body].
if queue_missing(KEYS[2]) then
  return not_found()
end
local zkey, qkey = KEYS[1], KEYS[2]
local first, count = tonumber(ARGV[1]), tonumber(ARGV[2])
local with_body, budget, per_message = ARGV[3] == "1", tonumber(ARGV[4]), tonumber(ARGV[5])
local _, ms = now()
local out = {ms, 0}
local bytes = 0
-- ZRANGE a window at a time: a range the budget cuts short is not read whole.
local WINDOW = 100
-- At most this many messages a call, whatever the bytes: each look-up costs Redis time,
-- and this many keeps a call, and a pause of the machine in the middle of one, within
-- the census's 2 ms (bench/RESULTS.md, "Census calls' Redis time").
local MAX_MESSAGES = 128
local read = 0
local rank, last = first, first + count - 1
while rank <= last do
  local range = redis.call("ZRANGE", zkey, rank, math.min(rank + WINDOW - 1, last), "WITHSCORES")
  for i = 1, #range, 2 do
    local id = range[i]
    local size = with_body and redis.call("HSTRLEN", qkey, id) or 0
    local reads = size <= LUA_BODY_MAX
    if bytes >= budget or read >= MAX_MESSAGES
        or (read > 0 and bytes + size > budget) then
      out[2] = 1
      return out
    end
    read = read + 1
    out[#out + 1] = id
    out[#out + 1] = range[i + 1] -- a string: "inf" and 1e300 are not integers
    if with_body then
      local f = redis.call("HMGET", qkey, id .. ":rc", id .. ":fr")
      out[#out + 1] = integer("rc", f[1] or 0) or 0
      out[#out + 1] = f[2] and integer("fr", f[2]) or false
      out[#out + 1] = size
      out[#out + 1] = reads and (redis.call("HGET", qkey, id) or "")
      bytes = bytes + size -- read here or by the client: the call's share either way
    else
      local f = redis.call("HMGET", qkey, id .. ":rc", id .. ":fr")
      out[#out + 1] = integer("rc", f[1] or 0) or 0
      out[#out + 1] = f[2] and integer("fr", f[2]) or false
      out[#out + 1] = redis.call("HSTRLEN", qkey, id)
    end
    bytes = bytes + per_message
  end
  if #range < 2 * WINDOW then
    break -- the end of the queue
  end
  rank = rank + WINDOW
end
return out
