-- KEYS: source zset, source hash, destination zset, destination hash, their failure keys
-- [, undo stash: zset, hash, record (its `to`: the destination's name)]
-- ARGV: offset, limit, keep counts ("1": rc and fr go along; "": the message starts
-- over with a fresh receive count), ids... (no ids: the source's first `limit` messages
-- from rank `offset`)
-- Moves each message with its id and body (and rc and fr if kept); it is visible in the
-- destination at once. Neither queue's totalsent / totalrecv changes. A body over the
-- destination's maxsize stays where it is, and so does a member no RSMQ client would
-- make (rsmq_id: it could name a field of the destination's hash). Stops early once the bodies it moved pass
-- MOVE_BYTES (measured before one is read). The undo stash, if given, keeps each moved
-- message as it was in the source. Returns {moved, skipped, ids looked at, 1 if it
-- stopped early (else 0)}.
if queue_missing(KEYS[2]) then
  return redis.error_reply("queueNotFound src")
end
local dmax = redis.call("HGET", KEYS[4], "maxsize")
if not dmax then
  return redis.error_reply("queueNotFound dst")
end
local why
dmax, why = integer("maxsize", dmax)
if not dmax then
  return unreadable("dst " .. why)
end
local keep, refused = stash_open(7)
if refused then
  return refused
end
-- a stash opened for a move to this destination (its record's `to`), never another
if keep and (keep.to == "" or string.sub(KEYS[3], -#keep.to - 1) ~= ":" .. keep.to) then
  return redis.error_reply("undoWrongDestination")
end
local ids = {}
local keep_counts = ARGV[3] == "1"
if #ARGV > 3 then
  for i = 4, #ARGV do ids[#ids + 1] = ARGV[i] end
else
  local offset = tonumber(ARGV[1])
  ids = redis.call("ZRANGE", KEYS[1], offset, offset + tonumber(ARGV[2]) - 1)
end
local _, ms = now()
local score = int(ms)
local moved, skipped, looked, bytes = 0, 0, 0, 0
for _, id in ipairs(ids) do
  if redis.call("ZSCORE", KEYS[1], id) then
    local size = redis.call("HSTRLEN", KEYS[2], id)
    if not rsmq_id(id) or (dmax ~= -1 and size > dmax) then
      skipped = skipped + 1
    else
      if moved > 0 and bytes + size > MOVE_BYTES then
        stash_close(keep)
        return {moved, skipped, looked, 1}
      end
      bytes = bytes + size
      stash_put(keep, KEYS[1], KEYS[2], id, keep and keep.to, not keep_counts)
      transfer(KEYS[1], KEYS[2], KEYS[3], KEYS[4], id, score, keep_counts, nil, KEYS[5], KEYS[6])
      moved = moved + 1
    end
  end
  looked = looked + 1
end
stash_close(keep)
return {moved, skipped, looked, 0}
