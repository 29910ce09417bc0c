-- Prepended to every script (see queues/scripts.py). Time always comes from the
-- server's TIME, never from a client clock, exactly as the original rsmq computes it.
local B36 = "0123456789abcdefghijklmnopqrstuvwxyz"

local function base36(n)
  local s = ""
  repeat
    local d = n % 36
    s = string.sub(B36, d + 1, d + 1) .. s
    n = math.floor(n / 36)
  until n == 0
  return s
end

-- epoch microseconds and milliseconds, from one TIME call
local function now()
  local t = redis.call("TIME")
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  return us, math.floor(us / 1000), t[1]
end

-- integer-valued numbers as plain digits (tostring would give 1.7e+12)
local function int(n)
  return string.format("%.0f", n)
end

local function queue_missing(qkey)
  return redis.call("HEXISTS", qkey, "vt") == 0
end

local function not_found()
  return redis.error_reply("queueNotFound")
end

-- At most 40 bytes of a value, for a message saying what is wrong with it.
local function shown(raw)
  raw = tostring(raw)
  return #raw > 40 and (string.sub(raw, 1, 40) .. "…") or raw
end

-- A stored integer, or nil and why it is not one: "abc", "nan", "inf", "1.5" or 1e300
-- written by another client must be reported, never pushed as a nil (a nil in a table
-- cuts the reply short there, and every later value would shift).
local function integer(name, raw)
  local n = tonumber(raw)
  if n and n == math.floor(n) and n > -2 ^ 53 and n < 2 ^ 53 then
    return n
  end
  return nil, name .. " is '" .. shown(raw) .. "', not a number"
end

-- A queue whose record can't be used as it is: the client raises QueueUnreadable.
local function unreadable(why)
  return redis.error_reply("queueUnreadable " .. why)
end

-- Whether a name read from Redis (a policy's queue, a message's source) is an RSMQ queue
-- name: only those are made into keys.
local function queue_name(s)
  return #s <= 160 and s ~= "QUEUES" and string.match(s, "^[%w_-]+$") ~= nil
end

-- Whether `id` is a message id in the form RSMQ clients make: 32 letters and digits
-- (Node rsmq, PyRSMQ, this client: 10 of time, 22 random) or go-rsmq's 22. The only ids
-- a script writes into a queue under a name it was handed (an import's kept id, a moved
-- or restored member): never one of the queue's own fields (vt, totalrecv, createdby,
-- x:...), nor another message's {id}:rc / {id}:fr, which a client would then read as a
-- message, or count on, for ever (queues/validation.py RSMQ_ID says the same).
local function rsmq_id(id)
  return (#id == 32 or #id == 22) and string.find(id, "^[0-9A-Za-z]+$") ~= nil
end

local ATTRIBUTES = {"vt", "delay", "maxsize", "totalrecv", "totalsent", "created", "modified"}

-- getQueueAttributes: vt, delay, maxsize, totalrecv, totalsent, created, modified, msgs,
-- hiddenmsgs (nil if the queue is missing); then what is not a number among them (nil
-- if all are: a field that is not counts as 0; created and modified may also be RFC 3339
-- text, returned as it is); then, when `more` names further fields
-- of the queue's hash, their values, read by the same HMGET (a list, false when unset)
local function attributes(zkey, qkey, ms, more)
  local a = redis.call("HMGET", qkey, unpack(more and more.fields or ATTRIBUTES))
  if not a[1] then
    return nil
  end
  local extra = {}
  for i = 8, #a do
    extra[i - 7] = a[i]
  end
  local bad
  for i = 1, 7 do
    local n, why = integer(ATTRIBUTES[i], a[i] or 0)
    if not n and i >= 6 and string.match(a[i], "^%d%d%d%d%-%d%d%-%d%d[Tt ]%d%d:%d%d") then
      -- created / modified as an RFC 3339 time (go-rsmq writes them so): the client
      -- reads it (queues/parse.py's _epoch_s), never "unreadable"
      n = string.sub(a[i], 1, 64)
    end
    if not n then
      bad = bad and (bad .. "; " .. why) or why
    end
    a[i] = n or 0
  end
  a[8] = redis.call("ZCARD", zkey)
  a[9] = redis.call("ZCOUNT", zkey, "(" .. int(ms), "+inf")
  return a, bad, extra
end

-- `more` for attributes(): ATTRIBUTES followed by these fields, made once per script call
local function also(...)
  local fields = {unpack(ATTRIBUTES)}
  for _, f in ipairs({...}) do
    fields[#fields + 1] = f
  end
  return {fields = fields}
end

-- the first `n` bytes of a body, never ending inside a UTF-8 character
local function cut(body, n)
  if n <= 0 or #body <= n then
    return body
  end
  local b = string.byte(body, n + 1)
  while n > 0 and b and b >= 0x80 and b < 0xC0 do
    n = n - 1
    b = string.byte(body, n + 1)
  end
  return string.sub(body, 1, n)
end

-- The zset's rank range [first, last] of a state: visible messages (score <= now) rank
-- before hidden ones; in flight and delayed share the hidden range (told apart by rc).
-- Also returns the queue's size and its visible count.
local function state_range(zkey, state, ms)
  local msgs = redis.call("ZCARD", zkey)
  local visible = redis.call("ZCOUNT", zkey, "-inf", int(ms))
  local first, last = 0, msgs - 1
  if state == "visible" then
    last = visible - 1
  elseif state ~= "all" then
    first = visible
  end
  return first, last, msgs, visible
end

-- Bodies a script reads itself are at most this long (ARGV-free: the client's
-- queues/limits.py LUA_BODY_MAX says the same). Reading a body into Lua copies it, so a
-- long one holds Redis many times as long as a plain HGET of it: a longer body is left
-- for the client, which reads it with one HGET — HSTRLEN tells its size without reading
-- it (bench/RESULTS.md, "Figures behind the code").
local LUA_BODY_MAX = 32768

-- Bodies' bytes one move / redrive call copies (after one message at least), and one
-- receive call reads (receive.lua: the client reads the rest): moving a body copies it
-- twice in Lua, so a call with long bodies stops early and the client calls again
-- (queues/limits.py MOVE_BYTES says the same).
local MOVE_BYTES = 1048576

-- Appends a browsed message's row: id, score, size, body (cut to `preview` bytes), rc, fr.
-- The body is false when it was not read here (longer than LUA_BODY_MAX, or the call's
-- `room` of row bytes is spent, or `unread` says so): the client reads it alone. `room`
-- (a table {n}) is the bytes of bodies this call may still read for rows; nil: no limit
-- but LUA_BODY_MAX.
local function append_row(out, zkey, qkey, id, preview, room, unread)
  local f = redis.call("HMGET", qkey, id .. ":rc", id .. ":fr")
  local size = redis.call("HSTRLEN", qkey, id)
  local body = false
  if not unread and size <= LUA_BODY_MAX and (not room or size <= room[1]) then
    body = cut(redis.call("HGET", qkey, id) or "", preview)
    if room then room[1] = room[1] - size end
  end
  out[#out + 1] = id
  out[#out + 1] = redis.call("ZSCORE", zkey, id)
  out[#out + 1] = size
  out[#out + 1] = body
  out[#out + 1] = f[1] or "0"
  out[#out + 1] = f[2] or ""
end

-- Whether a key is a hash: a failure key some other client overwrote with another type
-- is left alone by the delete paths (never a failed delete) ...
local function is_hash(key)
  return redis.call("TYPE", key).ok == "hash"
end

-- ... and replaced when a failure is recorded there (it is ours: no RSMQ data is lost).
local function fresh_hash(key)
  local t = redis.call("TYPE", key).ok
  if t ~= "hash" and t ~= "none" then
    redis.call("DEL", key)
  end
  return true
end

-- A dead-letter queue's failure key keeps at most this many carried histories (two
-- fields each): past it a carried history is dropped, never the queue's own.
local CARRIED_FAILURES_MAX = 10000

-- Moves a message's failure history (fields {id} and {id}:t of a queue's failure key,
-- see record_failure in queues/ops/failures.py) along with the message; the destination key lives at
-- least as long as the source's had left.
local function carry_failures(src_f, dst_f, id)
  if not src_f or not is_hash(src_f) then
    return
  end
  local h = redis.call("HMGET", src_f, id, id .. ":t")
  if not h[1] then
    return
  end
  redis.call("HDEL", src_f, id, id .. ":t")
  if not fresh_hash(dst_f) or redis.call("HLEN", dst_f) >= 2 * CARRIED_FAILURES_MAX then
    return
  end
  redis.call("HSET", dst_f, id, h[1], id .. ":t", h[2] or "?")
  local ttl = redis.call("PTTL", src_f)
  if ttl > redis.call("PTTL", dst_f) then
    redis.call("PEXPIRE", dst_f, ttl)
  end
end

-- Deletes the failure histories of messages that left a queue (one HDEL, and nothing
-- at all but an EXISTS when the queue has none: the delete paths stay cheap).
local function forget_failures(fkey, ids)
  if #ids == 0 or not is_hash(fkey) then
    return
  end
  local fields = {}
  for _, id in ipairs(ids) do
    fields[#fields + 1] = id
    fields[#fields + 1] = id .. ":t"
  end
  redis.call("HDEL", fkey, unpack(fields))
end

-- Moves one message from one queue to another, visible there at `score`: its body goes
-- along; `counts` keeps rc and fr (else the message starts over, as on a redrive);
-- `source` remembers where a dead-lettered message came from, in the destination's
-- hash (x:src:{id}: a field name no 32-char id can take). Neither queue's totals change.
-- Its failure history goes from `src_f` to `dst_f` (failure keys; nil: none to carry).
local function transfer(src_z, src_q, dst_z, dst_q, id, score, counts, source, src_f, dst_f)
  carry_failures(src_f, dst_f, id)
  local f = redis.call("HMGET", src_q, id, id .. ":rc", id .. ":fr")
  redis.call("ZREM", src_z, id)
  redis.call("HDEL", src_q, id, id .. ":rc", id .. ":fr", "x:src:" .. id)
  redis.call("ZADD", dst_z, score, id)
  redis.call("HSET", dst_q, id, f[1] or "")
  if counts and f[2] then
    redis.call("HSET", dst_q, id .. ":rc", f[2])
  end
  if counts and f[3] then
    redis.call("HSET", dst_q, id .. ":fr", f[3])
  end
  if source then
    redis.call("HSET", dst_q, "x:src:" .. id, source)
  end
end

-- Undo stashes (queues/ops/undo.py): what a destructive script removes is first copied,
-- in the same script call, into the stash named by its last three KEYS (stash zset: id ->
-- the message's score; stash hash: the queue hash's own fields of each message -- {id},
-- {id}:rc, {id}:fr, x:src:{id} -- and {id}:to when it went to another queue; the stash's
-- record, opened by undo_open.lua with its expiry). Outside every RSMQ key: other
-- clients never see it. nil when the script was called without one.
local function stash_open(first)
  local z, m, meta = KEYS[first], KEYS[first + 1], KEYS[first + 2]
  if not meta then
    return nil
  end
  local info = redis.call("HMGET", meta, "exp", "to", "done")
  if not info[1] or info[3] then
    return nil, redis.error_reply("undoNotFound")
  end
  return {z = z, m = m, meta = meta, exp = info[1], to = info[2] or "", n = 0, bytes = 0}
end

-- Copies message `id` of queue (qz, qh) into the stash (before the caller removes it);
-- `to`: the queue it goes to (a move, a redrive), else nil; `fresh`: it starts over
-- there (rc and fr dropped, as a redrive does), so its rc there tells whether it was
-- received since ({id}:dr).
local function stash_put(keep, qz, qh, id, to, fresh)
  if not keep then
    return
  end
  local score = redis.call("ZSCORE", qz, id)
  if not score then
    return
  end
  local f = redis.call("HMGET", qh, id, id .. ":rc", id .. ":fr", "x:src:" .. id)
  redis.call("ZADD", keep.z, score, id)
  local kv = {id, f[1] or ""}
  if f[2] then kv[#kv + 1] = id .. ":rc"; kv[#kv + 1] = f[2] end
  if f[3] then kv[#kv + 1] = id .. ":fr"; kv[#kv + 1] = f[3] end
  if f[4] then kv[#kv + 1] = "x:src:" .. id; kv[#kv + 1] = f[4] end
  if to then kv[#kv + 1] = id .. ":to"; kv[#kv + 1] = to end
  if fresh then kv[#kv + 1] = id .. ":dr"; kv[#kv + 1] = "1" end
  redis.call("HSET", keep.m, unpack(kv))
  keep.n = keep.n + 1
  keep.bytes = keep.bytes + #(f[1] or "")
end

-- After the puts: the stash keys expire with their record; the record counts them.
local function stash_close(keep)
  if not keep or keep.n == 0 then
    return
  end
  redis.call("PEXPIREAT", keep.z, keep.exp)
  redis.call("PEXPIREAT", keep.m, keep.exp)
  redis.call("HINCRBY", keep.meta, "n", keep.n)
  redis.call("HINCRBY", keep.meta, "bytes", keep.bytes)
end

-- The namespace's flow index (queues/ops/flow.py): one field per flagged queue, its flag
-- in brief as JSON. Lines whose flag expired (it resumed by itself) are dropped when a
-- flag is set or cleared; readers skip them meanwhile (their `until` is past).
local function flow_index_prune(index, ms)
  local flat = redis.call("HGETALL", index)
  for i = 1, #flat, 2 do
    local ok, f = pcall(cjson.decode, flat[i + 1])
    local untl = ok and type(f) == "table" and tonumber(f["until"])
    if not ok or type(f) ~= "table" or (untl and untl <= ms) then
      redis.call("HDEL", index, flat[i])
    end
  end
end

-- A queue's flow flag as the flow scripts return it: now, the queue's totalrecv, then
-- the flag's fields (HGETALL: field, value, ...; empty: no flag).
local function flow_reply(fkey, qkey, ms)
  local recv = redis.call("HGET", qkey, "totalrecv")
  return {int(ms), recv or "0", redis.call("HGETALL", fkey)}
end
