-- KEYS: dead-letter queue zset, its hash, its failure key[, undo stash: zset, hash, record]
-- ARGV: key prefix ("{ns}:"), destination ("" = each message's own source), offset, chunk,
-- the failure key's suffix (a message's failure history goes back with it)
-- Moves up to `chunk` visible messages, from the `offset`-th visible one on, back to where
-- they came from (or to the destination), visible at once and starting over: rc and fr
-- are dropped, or the policy would dead-letter them again on their next receive. A
-- hidden message (in flight: a consumer holds it; delayed: not due yet) is never taken,
-- or it would be delivered twice. A message with no known source, a source that is
-- gone, a body over the destination's maxsize, or a member no RSMQ client would make
-- (rsmq_id) stays. Stops early once the bodies it
-- moved pass MOVE_BYTES (measured before one is read). Returns {moved, skipped, looked
-- at, 1 if it stopped early (else 0)}.
if queue_missing(KEYS[2]) then
  return not_found()
end
local to_z, to_q
if ARGV[2] ~= "" then
  to_z = ARGV[1] .. ARGV[2]
  to_q = to_z .. ":Q"
  if queue_missing(to_q) then
    return redis.error_reply("queueNotFound dst")
  end
end
local keep, refused = stash_open(4)
if refused then
  return refused
end
local _, ms = now()
local ids = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", int(ms), "LIMIT", ARGV[3], ARGV[4])
local moved, skipped, looked, bytes = 0, 0, 0, 0
for _, id in ipairs(ids) do
  local dz, dq, dname = to_z, to_q, ARGV[2]
  if not dz then
    local src = redis.call("HGET", KEYS[2], "x:src:" .. id)
    if src and queue_name(src) then
      dz = ARGV[1] .. src
      dq = dz .. ":Q"
      dname = src
    end
  end
  local max = dq and integer("maxsize", redis.call("HGET", dq, "maxsize") or "")
  local size = redis.call("HSTRLEN", KEYS[2], id)
  if max and (max == -1 or size <= max) and rsmq_id(id) then
    if moved > 0 and bytes + size > MOVE_BYTES then
      stash_close(keep)
      return {moved, skipped, looked, 1}
    end
    bytes = bytes + size
    stash_put(keep, KEYS[1], KEYS[2], id, dname, true)
    transfer(KEYS[1], KEYS[2], dz, dq, id, int(ms), false, nil, KEYS[3], dz .. ARGV[5])
    moved = moved + 1
  else
    skipped = skipped + 1
  end
  looked = looked + 1
end
stash_close(keep)
return {moved, skipped, looked, 0}
