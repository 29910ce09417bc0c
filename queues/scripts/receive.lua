-- KEYS: zset, queue hash, failure key, flow key. ARGV: n, vt ("" = the queue's), key
-- prefix ("{ns}:"), qname, "pop" to delete each message as it is received (the original
-- popMessage: it still counts as a receive in rc and totalrecv), the failure key's
-- suffix (a dead-lettered message's failure history goes to its DLQ's failure key),
-- "hint" to end the reply with why the flow flag held it back
-- Returns id, body, rc, fr for each message received (FIFO by score), flat; a body not
-- read here (a receive's long one) is its size, an integer. With "hint", one more item:
-- "" (not held back), "paused", or "throttled <ms until the next receive may go>".
-- Dead-letter policy (x:maxrc, x:dlq): a message that would be handed out for the
-- (maxrc+1)-th time goes to the dead-letter queue instead, in this same script; the
-- receive goes on with the next message. Without the policy (or with its dead-letter
-- queue deleted) every message is delivered: nothing is ever dropped.
local q = redis.call("HMGET", KEYS[2], "vt", "x:maxrc", "x:dlq", "maxsize")
if not q[1] then
  return not_found()
end
local vt, why = integer("vt", ARGV[2] ~= "" and ARGV[2] or q[1])
if not vt then
  return unreadable(why)
end
local maxrc = tonumber(q[2])
local dlq_z, dlq_q, dlq_f
if maxrc and q[3] and queue_name(q[3]) then
  dlq_z = ARGV[3] .. q[3]
  dlq_q = dlq_z .. ":Q"
  dlq_f = dlq_z .. ARGV[6]
  if queue_missing(dlq_q) then
    maxrc = nil
  end
else
  maxrc = nil
end
local n = tonumber(ARGV[1])
local pop = ARGV[5] == "pop"
local _, ms = now()
local hint = ARGV[7] == "hint"
-- The queue's flow flag (queues/ops/flow.py), beside the RSMQ layout: paused, nothing
-- is handed out; throttled, no more than the whole receives its token bucket holds
-- (`rate` a second across every consumer that runs this script, a second's worth at
-- most, refilled by the server's clock). A receive it holds back changes no message and
-- no counter of the queue: only the flag's count of held receives.
local flow = redis.call("HMGET", KEYS[4], "state", "rate", "until", "tokens", "ts")
local tokens, rate
if flow[1] and not (tonumber(flow[3]) and tonumber(flow[3]) <= ms) then
  local wait
  if flow[1] == "throttled" then
    rate = tonumber(flow[2])
    if rate and rate > 0 then
      local cap = math.max(1, rate)
      local last = tonumber(flow[5]) or ms
      tokens = math.min(cap, (tonumber(flow[4]) or cap) + math.max(0, ms - last) * rate / 1000)
      if tokens < 1 then
        wait = "throttled " .. int(math.ceil((1 - tokens) * 1000 / rate))
      else
        n = math.min(n, math.floor(tokens))
      end
    else
      rate = nil
    end
  else
    wait = "paused"
  end
  if wait then
    redis.call("HINCRBY", KEYS[4], "held", 1)
    redis.call("HSET", KEYS[4], "lastheld", int(ms))
    return hint and {wait} or {}
  end
end
local score = int(ms + vt * 1000)
local out = {}
local received, dead = 0, 0
-- The loop goes on past dead-lettered messages to fill the batch. A message handed out
-- in this call is never looked at again by it: with vt 0 it is still visible.
local seen = {}
local again = (vt == 0 and not pop)
local popped = {}
-- bodies' bytes this call reads for the messages it hands out (a pop reads them all);
-- in a queue of unlimited maxsize each body is measured before it is read
local room = MOVE_BYTES
local sized = tonumber(q[4]) == -1 or (tonumber(q[4]) or 0) > 65536
-- Messages whose rc another client made a non-number: left where they are (the console
-- lists them with a note, to be deleted), never a failed receive of the others.
local skipped = 0
-- Bounded: at most 1,000 dead-letter moves per call, however many poison messages wait.
while received < n and dead < 1000 do
  local want = n - received + skipped + (again and received or 0)
  local ids = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", ms, "LIMIT", 0, want)
  local progress = false
  for _, id in ipairs(ids) do
    if received >= n then
      break
    end
    if not seen[id] then
      seen[id] = true
      progress = true
      local rc
      if maxrc and rsmq_id(id) and (tonumber(redis.call("HGET", KEYS[2], id .. ":rc") or 0) or 0) >= maxrc then
        transfer(KEYS[1], KEYS[2], dlq_z, dlq_q, id, int(ms), true, ARGV[4], KEYS[3], dlq_f)
        dead = dead + 1
      else
        -- an error reply (a table) when rc is not an integer
        rc = redis.pcall("HINCRBY", KEYS[2], id .. ":rc", 1)
      end
      if type(rc) == "table" then
        skipped = skipped + 1
      elseif rc then
        local fr
        if rc == 1 then
          fr = int(ms)
        else
          fr = redis.call("HGET", KEYS[2], id .. ":fr")
        end
        -- never a nil: it would cut the flat reply short
        out[#out + 1] = id
        if pop then
          out[#out + 1] = redis.call("HGET", KEYS[2], id) or "" -- deleted below: read here
        else
          -- a body over LUA_BODY_MAX, or past the call's `room`, is not read here: its
          -- size (a number, never a body: bodies are strings) stands in its place and
          -- the client reads it with a plain HGET (the message is in flight: it stays)
          -- (a queue whose maxsize bounds its bodies: read while there is room, then
          -- measured; unlimited (-1): measured first)
          local size = (sized or room <= 0) and redis.call("HSTRLEN", KEYS[2], id)
          if not size or (size <= LUA_BODY_MAX and size <= room) then
            local body = redis.call("HGET", KEYS[2], id) or ""
            out[#out + 1] = body
            room = room - #body
          else
            out[#out + 1] = size
          end
        end
        out[#out + 1] = rc
        out[#out + 1] = fr or false
        if pop then
          redis.call("ZREM", KEYS[1], id)
          redis.call("HDEL", KEYS[2], id, id .. ":rc", id .. ":fr", "x:src:" .. id)
          popped[#popped + 1] = id
        else
          redis.call("ZADD", KEYS[1], score, id)
          if rc == 1 then
            redis.call("HSET", KEYS[2], id .. ":fr", fr)
          end
        end
        received = received + 1
      end
    end
  end
  if not progress or #ids < want then
    break
  end
end
if received > 0 then
  redis.call("HINCRBY", KEYS[2], "totalrecv", received)
end
forget_failures(KEYS[3], popped)
if dead > 0 then
  redis.call("HINCRBY", KEYS[2], "x:deadlettered", dead)
end
local why = ""
if rate then
  tokens = tokens - received
  redis.call("HSET", KEYS[4], "tokens", string.format("%.6f", tokens), "ts", int(ms))
  redis.call("HINCRBY", KEYS[4], "granted", received)
  if received >= n and n < tonumber(ARGV[1]) then
    why = "throttled " .. (tokens >= 1 and "0" or int(math.ceil((1 - tokens) * 1000 / rate)))
  end
end
if hint then
  out[#out + 1] = why
end
return out
