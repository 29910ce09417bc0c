-- KEYS: zset, queue hash[, undo stash: zset, hash, record -- each message's score before,
-- and the one it was given, kept in this same call]. ARGV: then triples: a message id,
-- the score (epoch ms) it had when it was read, its new score ("" = now, by the
-- server's clock).
-- Reschedules delayed messages (queues/ops/flow.py: deliver now, shift, spread): a
-- message is given its new score only if it is still as it was read (in the queue with
-- that score) and was never received (no rc: a consumer may hold one that was); any
-- other is counted as changed and left alone. Nothing else of the message changes. A
-- stash keeps the first score it saw of a message (one met twice keeps its original)
-- and the last one it was given: an undo puts a message back only while it still has
-- that one. Returns {done, changed, the ids rescheduled...}.
if queue_missing(KEYS[2]) then
  return not_found()
end
local keep, refused = stash_open(3)
if refused then
  return refused
end
local _, ms = now()
local out = {0, 0}
local done, changed = 0, 0
for i = 1, #ARGV - 2, 3 do
  local id, seen, to = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  local score = redis.call("ZSCORE", KEYS[1], id)
  if not score or math.floor(tonumber(score)) ~= seen
      or redis.call("HEXISTS", KEYS[2], id .. ":rc") == 1 then
    changed = changed + 1
  else
    local new = to == "" and int(ms) or to
    if keep then
      if redis.call("ZADD", keep.z, "NX", score, id) == 1 then
        keep.n = keep.n + 1
        keep.bytes = keep.bytes + #id + 32
      end
      redis.call("HSET", keep.m, id, new)
    end
    redis.call("ZADD", KEYS[1], "XX", new, id)
    done = done + 1
    out[#out + 1] = id
  end
end
if keep and keep.n > 0 then
  redis.call("HSET", keep.meta, "kind", "rescore")
end
stash_close(keep)
out[1], out[2] = done, changed
return out
