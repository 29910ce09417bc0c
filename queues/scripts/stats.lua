-- KEYS: zset 1, queue hash 1, zset 2, queue hash 2, ...  ARGV: sample size, phase in [0, 1)
-- Read-only. Per queue, 17 values: state (0: missing, 1: read, or a text saying what
-- can't be read), vt, delay, maxsize, totalsent, totalrecv, created, modified, msgs,
-- hidden, inflight, delayed, head visible id (or false), exact, and the dead-letter
-- policy: queue (or false), maxrc (or false), messages dead-lettered.
-- Splitting hidden into in flight (rc >= 1) and delayed needs a look at each hidden
-- message; past `sample` hidden messages, evenly spaced ranks are sampled instead, from
-- a random phase (given by the client: Lua's PRNG repeats itself on every call) so that
-- a regular pattern of in-flight and delayed messages can't fool every reading the same way.
-- One queue's bad data (a counter that is not a number, a key of the wrong type) is that
-- queue's state: the other queues' rows are read all the same.
local _, ms = now()
local sample, phase = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {ms}
local POLICY = also("x:dlq", "x:maxrc", "x:deadlettered")

local function read(zkey, qkey)
  local a, bad, p = attributes(zkey, qkey, ms, POLICY)
  if not a then
    return nil
  end
  local msgs, hidden = a[8], a[9]
  local visible = msgs - hidden
  local inflight, exact = 0, 1
  if hidden > 0 then
    local ids
    if hidden <= sample then
      ids = redis.call("ZRANGE", zkey, visible, msgs - 1)
    else
      exact = 0
      ids = {}
      for i = 0, sample - 1 do
        local rank = visible + math.floor((i + phase) * hidden / sample)
        ids[#ids + 1] = redis.call("ZRANGE", zkey, rank, rank)[1]
      end
    end
    for _, id in ipairs(ids) do
      if redis.call("HEXISTS", qkey, id .. ":rc") == 1 then
        inflight = inflight + 1
      end
    end
    if exact == 0 then
      inflight = math.floor(inflight * hidden / #ids + 0.5)
    end
  end
  local head = false
  if visible > 0 then
    head = redis.call("ZRANGE", zkey, 0, 0)[1]
  end
  local maxrc, why = false, nil
  if p[2] then
    maxrc, why = integer("x:maxrc", p[2])
    if why then
      bad = bad and (bad .. "; " .. why) or why
    end
  end
  -- attributes() order: vt delay maxsize totalrecv totalsent created modified
  return {bad or 1, a[1], a[2], a[3], a[5], a[4], a[6], a[7], msgs, hidden,
    inflight, hidden - inflight, head, exact, p[1] or false, maxrc or false,
    integer("x:deadlettered", p[3] or 0) or 0}
end

-- Why a queue's keys could not be read (WRONGTYPE and the like): what each key is.
local function failed(zkey, qkey, e)
  local why = type(e) == "table" and e.err or tostring(e)
  local kinds = {[qkey] = "hash", [zkey] = "zset"}
  for _, key in ipairs({qkey, zkey}) do
    local kind = redis.call("TYPE", key).ok
    if kind ~= "none" and kind ~= kinds[key] then
      why = key .. " is a " .. kind .. ", not a " .. kinds[key]
    end
  end
  return why
end

for k = 1, #KEYS, 2 do
  local zkey, qkey = KEYS[k], KEYS[k + 1]
  local ok, row = pcall(read, zkey, qkey)
  if not ok then
    row = {failed(zkey, qkey, row)}
  end
  if not row then
    row = {0}
  end
  for i = 1, 17 do out[#out + 1] = row[i] or 0 end
end
return out
