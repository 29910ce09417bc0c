-- KEYS: the zset, hash and failure key of the queue the messages are in[, undo stash:
--       zset, hash, record (queues/ops/undo.py): what goes is kept for its Undo]
-- ARGV: key prefix ("{ns}:"), the failure key's suffix, ids...
-- Redrive of chosen dead letters (one failure group): each of the ids still in the
-- queue and visible goes back to the queue it was dead-lettered from (x:src:{id}), as
-- redrive does: visible at once, starting over (rc and fr dropped), its failure history
-- with it. A hidden one (in flight or delayed) is never taken, or it would be delivered
-- twice; one with no known source, a source that is gone or a body over the source's
-- maxsize stays. Stops early once the bodies it moved pass MOVE_BYTES. Returns {moved,
-- ids looked at, 1 if it stopped early (else 0)}.
if queue_missing(KEYS[2]) then
  return not_found()
end
local keep, refused = stash_open(4)
if refused then
  return refused
end
local _, ms = now()
local moved, looked, bytes = 0, 0, 0
for i = 3, #ARGV do
  local id = ARGV[i]
  local score = tonumber(redis.call("ZSCORE", KEYS[1], id) or "")
  local src = score and score <= ms and redis.call("HGET", KEYS[2], "x:src:" .. id)
  if src and queue_name(src) and rsmq_id(id) then
    local dz = ARGV[1] .. src
    local dq = dz .. ":Q"
    local max = integer("maxsize", redis.call("HGET", dq, "maxsize") or "")
    local size = redis.call("HSTRLEN", KEYS[2], id)
    if max and (max == -1 or size <= max) then
      if moved > 0 and bytes + size > MOVE_BYTES then
        stash_close(keep)
        return {moved, looked, 1}
      end
      bytes = bytes + size
      stash_put(keep, KEYS[1], KEYS[2], id, src, true)
      transfer(KEYS[1], KEYS[2], dz, dq, id, int(ms), false, nil, KEYS[3], dz .. ARGV[2])
      moved = moved + 1
    end
  end
  looked = looked + 1
end
stash_close(keep)
return {moved, looked, 0}
