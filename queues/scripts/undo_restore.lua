-- KEYS: an undo stash's zset, hash, record; the queue's zset, hash; the QUEUES set.
-- ARGV: key prefix ("{ns}:"), queue name, chunk, the failure key's suffix.
-- Puts back what a destructive action kept (stash_put in _prelude.lua), `chunk` messages
-- a call, each exactly as it was: same id, body, rc, fr, x:src and score. Skipped (and
-- left out of the queue, never duplicated): a message whose id is in the queue again
-- ("present"); one that went to another queue (a move, a redrive) and is no longer there
-- ("gone") or was received there since (its rc changed: "taken" -- a consumer may hold
-- it); or one whose id no RSMQ client makes ("foreign": rsmq_id). A message taken back
-- from another queue leaves it (its failure history there is dropped). A deleted queue (kind "queue") that nobody re-created comes back whole: its
-- keys are renamed back (O(1)), attributes and totals as they were; one re-created
-- meanwhile keeps its new attributes and gets the messages one by one. A rescheduling's
-- stash (kind "rescore") puts scores back instead (see below).
-- Stops early past MOVE_BYTES of bodies. Returns {status, restored, present ids, gone
-- ids, taken ids, foreign ids}: status "more" (call again), "finished", "done" (undone
-- before), "queue" (the whole queue renamed back), "missing" (the queue is gone: nothing
-- done).
local sz, sm, meta, qz, qh = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local info = redis.call("HMGET", meta, "exp", "kind", "done", "action")
if not info[1] then
  return redis.error_reply("undoNotFound")
end
if info[3] then
  return {"done", 0, {}, {}, {}, {}}
end
local _, ms = now()
local function finish(status, restored, present, gone, taken, foreign)
  foreign = foreign or {}
  redis.call("HINCRBY", meta, "restored", restored)
  redis.call("HINCRBY", meta, "present", #present)
  redis.call("HINCRBY", meta, "gone", #gone)
  redis.call("HINCRBY", meta, "taken", #taken)
  redis.call("HINCRBY", meta, "foreign", #foreign)
  if status ~= "more" then
    redis.call("HSET", meta, "done", int(ms))
    redis.call("UNLINK", sz, sm)
  end
  return {status, restored, present, gone, taken, foreign}
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
  return {"missing", 0, {}, {}, {}, {}}
end
if info[2] == "queue" then
  redis.call("HSET", meta, "recreated", "1")
end
local chunk = tonumber(ARGV[3])
if info[2] == "rescore" then
  -- A rescheduling's (reschedule.lua): the stash holds each message's score before it
  -- (zset) and the one it was given (hash). A message gets its score back only while it
  -- still has the one it was given; else it was received or moved since ("taken"), or
  -- it left the queue ("gone"): left as it is.
  local ids = redis.call("ZRANGE", sz, 0, chunk - 1, "WITHSCORES")
  if #ids == 0 then
    return finish("finished", 0, {}, {}, {})
  end
  local names = {}
  for k = 1, #ids, 2 do
    names[#names + 1] = ids[k]
  end
  local given = redis.call("HMGET", sm, unpack(names))
  local restored, gone, taken, zadd = 0, {}, {}, {}
  for k, id in ipairs(names) do
    local cur = redis.call("ZSCORE", qz, id)
    if not cur then
      gone[#gone + 1] = id
    elseif not given[k] or tonumber(cur) ~= tonumber(given[k]) then
      taken[#taken + 1] = id
    else
      zadd[#zadd + 1] = ids[2 * k]
      zadd[#zadd + 1] = id
      restored = restored + 1
    end
  end
  if #zadd > 0 then
    redis.call("ZADD", qz, "XX", unpack(zadd))
  end
  redis.call("ZREM", sz, unpack(names))
  redis.call("HDEL", sm, unpack(names))
  return finish(#names < chunk and "finished" or "more", restored, {}, gone, taken)
end
local ids = redis.call("ZRANGE", sz, 0, chunk - 1, "WITHSCORES")
-- how many this call takes: MOVE_BYTES of bodies (one at least)
local n, bytes = 0, 0
local fields = {}
for i = 1, #ids, 2 do
  local id = ids[i]
  local size = redis.call("HSTRLEN", sm, id)
  if n > 0 and bytes + size > MOVE_BYTES then
    break
  end
  bytes = bytes + size
  n = n + 1
  fields[#fields + 1] = id
  fields[#fields + 1] = id .. ":rc"
  fields[#fields + 1] = id .. ":fr"
  fields[#fields + 1] = "x:src:" .. id
  fields[#fields + 1] = id .. ":to"
  fields[#fields + 1] = id .. ":dr"
end
if n == 0 then
  return finish("finished", 0, {}, {}, {})
end
-- one HMGET, then one HDEL / HSET / ZADD / ZREM each for the whole chunk (at most 1000
-- messages: unpack's limit of 8000 values, 6 fields a message), per-message calls only to check and to take moved ones back
local f = redis.call("HMGET", sm, unpack(fields))
local restored = 0
local present, gone, taken, foreign = {}, {}, {}, {}
local stray, kv, zadd = {}, {}, {}
for k = 1, n do
  local id, score = ids[2 * k - 1], ids[2 * k]
  local j = 6 * (k - 1)
  local body, rc, fr, src, to, fresh = f[j + 1], f[j + 2], f[j + 3], f[j + 4], f[j + 5], f[j + 6]
  local back = false
  if not rsmq_id(id) then
    -- a member no RSMQ client makes (a field's name, another message's :rc): putting it
    -- back would break the queue again for every client
    foreign[#foreign + 1] = id
  elseif redis.call("ZSCORE", qz, id) then
    present[#present + 1] = id
  elseif not body then
    -- not in the stash's hash: a purge interrupted before its drain moved it; its
    -- fields are still in the queue's hash (no zset member: no client saw them)
    if redis.call("HEXISTS", qh, id) == 1 then
      zadd[#zadd + 1] = score
      zadd[#zadd + 1] = id
      restored = restored + 1
    else
      gone[#gone + 1] = id
    end
  elseif to then
    -- it went to queue `to`: taken back only if it is there, unreceived since
    local dz = ARGV[1] .. to
    local dq = dz .. ":Q"
    if not queue_name(to) or not redis.call("ZSCORE", dz, id) then
      gone[#gone + 1] = id
    elseif redis.call("HGET", dq, id .. ":rc") ~= (not fresh and rc) then
      taken[#taken + 1] = id
    else
      redis.call("ZREM", dz, id)
      redis.call("HDEL", dq, id, id .. ":rc", id .. ":fr", "x:src:" .. id)
      local df = dz .. ARGV[4]
      if is_hash(df) then
        redis.call("HDEL", df, id, id .. ":t")
      end
      back = true
    end
  else
    back = true
  end
  if back then
    stray[#stray + 1] = id .. ":rc"
    stray[#stray + 1] = id .. ":fr"
    stray[#stray + 1] = "x:src:" .. id
    kv[#kv + 1] = id
    kv[#kv + 1] = body
    if rc then kv[#kv + 1] = id .. ":rc"; kv[#kv + 1] = rc end
    if fr then kv[#kv + 1] = id .. ":fr"; kv[#kv + 1] = fr end
    if src then kv[#kv + 1] = "x:src:" .. id; kv[#kv + 1] = src end
    zadd[#zadd + 1] = score
    zadd[#zadd + 1] = id
    restored = restored + 1
  end
end
if #stray > 0 then
  redis.call("HDEL", qh, unpack(stray))
end
-- at most 4 fields a message, 1000 messages: within unpack's limit in two halves
local half = math.floor(#kv / 4) * 2
if half > 0 then
  redis.call("HSET", qh, unpack(kv, 1, half))
end
if #kv > half then
  redis.call("HSET", qh, unpack(kv, half + 1, #kv))
end
if #zadd > 0 then
  redis.call("ZADD", qz, unpack(zadd))
end
local looked = {}
for k = 1, n do
  looked[k] = ids[2 * k - 1]
end
redis.call("ZREM", sz, unpack(looked))
redis.call("HDEL", sm, unpack(fields))
if n == #ids / 2 and #ids / 2 < chunk then
  return finish("finished", restored, present, gone, taken, foreign)
end
return finish("more", restored, present, gone, taken, foreign)
