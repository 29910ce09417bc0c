-- KEYS: zset, queue hash, failure key, destination zset, its hash, its failure key (the
-- source's own keys again when the action has no destination) [, undo stash: zset, hash,
-- record -- a delete, move or redrive keeps each message it removes there, as it was, in
-- this same call; a move's or redrive's with where it went and whether it starts over]
-- ARGV: action (delete | requeue | visibility | move | redrive), its parameter
-- (visibility: the new vt in seconds; move, redrive: "1" keeps rc and fr, "" starts the
-- message over with a fresh receive count), the key prefix ("{ns}:") and the failure
-- key's suffix (redrive: each message goes to the queue it came from), then pairs: a
-- message id and the score (epoch ms) it had when it was read.
-- Acts on a message only if it is still as it was read: in the queue with the same score
-- (a receive, a visibility change, a requeue or a re-send since moved it): one changed
-- since is counted as changed and left alone, never acted on blindly. move and redrive
-- leave a body over the destination's maxsize (redrive: a message with no queue to go
-- back to) where it is, and stop early once the bodies they moved pass MOVE_BYTES.
-- Returns {done, changed, skipped, pairs looked at, 1 if it stopped early (else 0),
-- the ids acted on...}.
if queue_missing(KEYS[2]) then
  return not_found()
end
local action, param, prefix, fsuffix = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local moving = action == "move" or action == "redrive"
local dmax
if action == "move" then
  local why
  local raw = redis.call("HGET", KEYS[5], "maxsize")
  if not raw then
    return redis.error_reply("queueNotFound dst")
  end
  dmax, why = integer("maxsize", raw)
  if not dmax then
    return unreadable("dst " .. why)
  end
end
local keep, refused = stash_open(7)
if refused then
  return refused
end
if keep and not (action == "delete" or moving) then
  return redis.error_reply("invalidArgument keep")
end
-- a move keeps only into a stash opened for its destination (its record's `to`)
if keep and action == "move" and keep.to ~= string.sub(KEYS[4], #prefix + 1) then
  return redis.error_reply("undoWrongDestination")
end
local _, ms = now()
local out = {0, 0, 0, 0, 0}
local done, changed, skipped, looked, bytes = 0, 0, 0, 0, 0
local gone = {}
for i = 5, #ARGV - 1, 2 do
  local id, seen = ARGV[i], tonumber(ARGV[i + 1])
  local score = redis.call("ZSCORE", KEYS[1], id)
  if not score or math.floor(tonumber(score)) ~= seen then
    changed = changed + 1
  elseif action == "delete" then
    stash_put(keep, KEYS[1], KEYS[2], id)
    redis.call("ZREM", KEYS[1], id)
    redis.call("HDEL", KEYS[2], id, id .. ":rc", id .. ":fr", "x:src:" .. id)
    gone[#gone + 1] = id
    done = done + 1
    out[#out + 1] = id
  elseif action == "requeue" then
    redis.call("ZADD", KEYS[1], int(ms), id)
    done = done + 1
    out[#out + 1] = id
  elseif action == "visibility" then
    redis.call("ZADD", KEYS[1], int(ms + tonumber(param) * 1000), id)
    done = done + 1
    out[#out + 1] = id
  elseif moving then
    local dz, dq, df, max = KEYS[4], KEYS[5], KEYS[6], dmax
    if action == "redrive" then
      dz, max = nil, nil
      local src = redis.call("HGET", KEYS[2], "x:src:" .. id)
      if src and queue_name(src) and prefix .. src ~= KEYS[1] then
        dz = prefix .. src
        dq, df = dz .. ":Q", dz .. fsuffix
        max = integer("maxsize", redis.call("HGET", dq, "maxsize") or "")
      end
    end
    local size = redis.call("HSTRLEN", KEYS[2], id)
    if not max or (max ~= -1 and size > max) or not rsmq_id(id) then
      skipped = skipped + 1
    else
      if done > 0 and bytes + size > MOVE_BYTES then
        out[5] = 1
        break
      end
      bytes = bytes + size
      stash_put(keep, KEYS[1], KEYS[2], id, string.sub(dz, #prefix + 1), param ~= "1")
      transfer(KEYS[1], KEYS[2], dz, dq, id, int(ms), param == "1", nil, KEYS[3], df)
      done = done + 1
      out[#out + 1] = id
    end
  else
    return redis.error_reply("invalidArgument action")
  end
  looked = looked + 1
end
forget_failures(KEYS[3], gone)
stash_close(keep)
out[1], out[2], out[3], out[4] = done, changed, skipped, looked
return out
