-- KEYS: an undo stash's zset, hash, record; the queue's zset, hash; the QUEUES set.
-- ARGV: key prefix ("{ns}:"), queue name, chunk, the failure key's suffix.
-- Puts back what a destructive action kept (stash_put in _prelude.lua), `chunk` messages
-- a call, each exactly as it was: same id, body, rc, fr, x:src and score. Skipped (and
-- left out of the queue, never duplicated): a message whose id is in the queue again
-- ("present"); one that went to another queue (a move, a redrive) and is no longer there
-- ("gone") or was received there since (its rc changed: "taken" -- a consumer may hold
-- it). A message taken back from another queue leaves it (its failure history there is
-- dropped). A deleted queue (kind "queue") that nobody re-created comes back whole: its
-- keys are renamed back (O(1)), attributes and totals as they were; one re-created
-- meanwhile keeps its new attributes and gets the messages one by one.
-- Stops early past MOVE_BYTES of bodies. Returns {status, restored, present ids, gone
-- ids, taken ids}: status "more" (call again), "finished", "done" (undone before),
-- "queue" (the whole queue renamed back), "missing" (the queue is gone: nothing done).
local sz, sm, meta, qz, qh = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local info = redis.call("HMGET", meta, "exp", "kind", "done", "action")
if not info[1] then
  return redis.error_reply("undoNotFound")
end
if info[3] then
  return {"done", 0, {}, {}, {}}
end
local _, ms = now()
local function finish(status, restored, present, gone, taken)
  redis.call("HINCRBY", meta, "restored", restored)
  redis.call("HINCRBY", meta, "present", #present)
  redis.call("HINCRBY", meta, "gone", #gone)
  redis.call("HINCRBY", meta, "taken", #taken)
  if status ~= "more" then
    redis.call("HSET", meta, "done", int(ms))
    redis.call("UNLINK", sz, sm)
  end
  return {status, restored, present, gone, taken}
end
if queue_missing(qh) then
  if info[2] == "queue" and redis.call("EXISTS", qh, qz) == 0 then
    local n = 0
    if redis.call("EXISTS", sz) == 1 then
      n = redis.call("ZCARD", sz)
      redis.call("RENAME", sz, qz)
      redis.call("PERSIST", qz)
    end
    redis.call("RENAME", sm, qh)
    redis.call("PERSIST", qh)
    redis.call("SADD", KEYS[6], ARGV[2])
    return finish("queue", n, {}, {}, {})
  end
  return {"missing", 0, {}, {}, {}}
end
if info[2] == "queue" then
  redis.call("HSET", meta, "recreated", "1")
end
-- a move keeps rc in the destination, a redrive drops it: what it reads there until
-- a consumer receives it
local kept_rc = info[4] ~= "redrive"
local chunk = tonumber(ARGV[3])
local ids = redis.call("ZRANGE", sz, 0, chunk - 1, "WITHSCORES")
local restored, bytes = 0, 0
local present, gone, taken = {}, {}, {}
for i = 1, #ids, 2 do
  local id, score = ids[i], ids[i + 1]
  local size = redis.call("HSTRLEN", sm, id)
  if restored > 0 and bytes + size > MOVE_BYTES then
    return finish("more", restored, present, gone, taken)
  end
  bytes = bytes + size
  local f = redis.call("HMGET", sm, id, id .. ":rc", id .. ":fr", "x:src:" .. id, id .. ":to")
  local fields = {"x:src:" .. id, id .. ":rc", id .. ":fr"}
  if redis.call("ZSCORE", qz, id) then
    present[#present + 1] = id
  elseif not f[1] then
    -- not in the stash's hash: a purge interrupted before its drain moved it; its
    -- fields are still in the queue's hash (no zset member: no client saw them)
    if redis.call("HEXISTS", qh, id) == 1 then
      redis.call("ZADD", qz, score, id)
      restored = restored + 1
    else
      gone[#gone + 1] = id
    end
  else
    local back = true
    if f[5] then
      -- it went to queue f[5]: take it back only if it is there, unreceived since
      local dz = ARGV[1] .. f[5]
      local dq = dz .. ":Q"
      if not queue_name(f[5]) or not redis.call("ZSCORE", dz, id) then
        gone[#gone + 1] = id
        back = false
      elseif redis.call("HGET", dq, id .. ":rc") ~= (kept_rc and f[2]) then
        taken[#taken + 1] = id
        back = false
      else
        redis.call("ZREM", dz, id)
        redis.call("HDEL", dq, id, id .. ":rc", id .. ":fr", "x:src:" .. id)
        local df = dz .. ARGV[4]
        if is_hash(df) then
          redis.call("HDEL", df, id, id .. ":t")
        end
      end
    end
    if back then
      redis.call("HDEL", qh, unpack(fields))
      local kv = {id, f[1]}
      if f[2] then kv[#kv + 1] = id .. ":rc"; kv[#kv + 1] = f[2] end
      if f[3] then kv[#kv + 1] = id .. ":fr"; kv[#kv + 1] = f[3] end
      if f[4] then kv[#kv + 1] = "x:src:" .. id; kv[#kv + 1] = f[4] end
      redis.call("HSET", qh, unpack(kv))
      redis.call("ZADD", qz, score, id)
      restored = restored + 1
    end
  end
  redis.call("ZREM", sz, id)
  redis.call("HDEL", sm, id, id .. ":rc", id .. ":fr", "x:src:" .. id, id .. ":to")
end
if #ids / 2 < chunk then
  return finish("finished", restored, present, gone, taken)
end
return finish("more", restored, present, gone, taken)
