-- KEYS: zset, queue hash, the queue's failure key
-- ARGV: id, vt ("" = leave its visibility), type, message, trace, history length,
-- history bytes, most messages with a history, ttl (s), the error's line (its message's
-- first line, cut)
-- Records one failure of a message still in the queue: {t, rc, type, msg, trace} added
-- to its history (JSON, newest last) in field {id}; its summary in {id}:t, what
-- failure_groups and browse's failure filter read without decoding histories: the type,
-- then (separated by \31) the first and the last failure's time (ms), the last error line
-- and the last failure's attempt (the receive count it failed at). A summary written
-- before times were kept is the type alone (its first failure: this one); one written
-- before attempts were kept has four fields. The history keeps the last
-- `history length` failures, fewer when over `history bytes`; a queue keeps histories
-- for at most `most messages` (a full one forgets another message's to make room);
-- the key expires `ttl` s after its last failure. With vt, the message's visibility
-- changes too, as change_visibility does: the worker's one call per failure.
-- Returns 1, or 0 when the message is not in the queue (nothing is recorded).
if queue_missing(KEYS[2]) then
  return not_found()
end
local id = ARGV[1]
if not redis.call("ZSCORE", KEYS[1], id) then
  return 0
end
local _, ms = now()
local fkey = KEYS[3]
fresh_hash(fkey)
local keep, bytes, most = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local history = {}
local old = redis.call("HGET", fkey, id)
if old then
  -- A history another client spoiled starts over rather than failing the record.
  local ok, decoded = pcall(cjson.decode, old)
  if ok and type(decoded) == "table" then
    for _, e in ipairs(decoded) do
      if type(e) == "table" then
        history[#history + 1] = e
      end
    end
  end
elseif redis.call("HLEN", fkey) >= 2 * most then
  local cursor, evicted = "0", false
  repeat
    local r = redis.call("HSCAN", fkey, cursor, "MATCH", "*:t", "COUNT", 50)
    cursor = r[1]
    if r[2][1] then
      local other = string.sub(r[2][1], 1, -3)
      redis.call("HDEL", fkey, other, r[2][1])
      evicted = true
    end
  until evicted or cursor == "0"
end
local rc = tonumber(redis.call("HGET", KEYS[2], id .. ":rc") or 0) or 0
local first = ms
local summary = redis.call("HGET", fkey, id .. ":t")
if summary then
  local seen = tonumber(string.match(summary, "^[^\31]*\31(%d+)\31") or "")
  if seen and seen <= ms then
    first = seen
  end
end
if first == ms and history[1] and type(history[1].t) == "number" and history[1].t < ms then
  first = history[1].t -- a summary from before times were kept: the oldest kept failure
end
history[#history + 1] = {t = ms, rc = rc, type = ARGV[3], msg = ARGV[4], trace = ARGV[5]}
while #history > keep do
  table.remove(history, 1)
end
local encoded = cjson.encode(history)
while #encoded > bytes and #history > 1 do
  table.remove(history, 1)
  encoded = cjson.encode(history)
end
local function field(text)
  return (string.gsub(text, "\31", " "))
end
summary = table.concat({field(ARGV[3]), int(first), int(ms), field(ARGV[10]), int(rc)}, "\31")
redis.call("HSET", fkey, id, encoded, id .. ":t", summary)
redis.call("EXPIRE", fkey, ARGV[9])
if ARGV[2] ~= "" then
  redis.call("ZADD", KEYS[1], int(ms + tonumber(ARGV[2]) * 1000), id)
end
return 1
