-- KEYS: zset, queue hash[, the queue's failure key (a failure filter reads it)]
-- ARGV: state, direction, cursor score, cursor member, limit, preview bytes, step,
--       min rc (0 = any), needle ("" = any), body bytes budget,
--       skip (matches passed over before the rows start), count ("1": look at the whole
--       step, counting every match, however many rows it returns), the longest needle
--       searched here, the bytes of bodies left for the client to search (a budget),
--       the bytes of bodies the rows may hold, a field filter ("" = none: JSON, see
--       queues/fields.py), older than / younger than (ms since sent, from the id; 0 = any),
--       the last failure's type ("" = any), a text in its error line ("" = any), its
--       attempt at least (0 = any): the failure filter, on record_failure.lua's summaries
-- Read-only keyset browsing over (score, member), the zset's own order, so a page never
-- depends on how many messages came or went before it. direction:
--   "next": members after (cursor score, cursor member), forwards ("" score: from the start)
--   "prev": members before it, backwards ("" score: from the end)
--   "rank": forwards from the state's rank `cursor score` (an exact page of all / visible
--           / hidden, whose ranks are contiguous)
-- A call looks at no more than `step` members (and reads no more than `body bytes
-- budget` of bodies for a needle, checked with HSTRLEN before a body is read), so it
-- holds Redis a few ms at most however sparse the matches or large the bodies; the
-- client calls again from where it stopped. A needle is searched here (string.find,
-- plain: its cost is body length x needle length) only in bodies of at most
-- LUA_BODY_MAX bytes and when it is at most `needle max` bytes long: so at most a
-- constant per byte. Any other body a needle must be searched in is a candidate: its
-- row comes back with a false body, like a match's, and the client reads it with one
-- HGET and searches it itself (Python's `in`, linear in the body). A field filter is
-- read the same way: here with cjson for bodies of at most LUA_BODY_MAX bytes (within
-- the same byte budget), by the client (queues/fields.py, the same rules) beyond.
-- Returns: now, looked at, reached the state's end (1/0), score and member of the last
-- one looked at (false if none), the state's first and last rank, the rank of the first
-- and last match (-1 if none), how many matched (with those skipped or past the limit
-- in count mode), then the rows of matches skip+1 .. skip+limit (append_row), in the
-- order met.
if queue_missing(KEYS[2]) then
  return not_found()
end
local zkey, qkey = KEYS[1], KEYS[2]
local state, dir, cscore, cmember = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local limit, preview, step = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local min_rc, needle, byte_budget = tonumber(ARGV[8]), ARGV[9], tonumber(ARGV[10])
local skip, counting = tonumber(ARGV[11]), ARGV[12] == "1"
local needle_max, client_budget = tonumber(ARGV[13] or 64), tonumber(ARGV[14] or 8388608)
local room = {tonumber(ARGV[15] or 262144)}
local lua_search = #needle <= needle_max
-- a field filter (queues/fields.py's Where.lua_arg: {op, path, values} each) and ages
-- (ms; 0: none), read with a strict cjson of this call's own (no NaN / Infinity / hex
-- numbers, nesting at most 64 deep: queues/fields.py MAX_DEPTH)
local where_raw = ARGV[16] or ""
local older, younger = tonumber(ARGV[17] or 0), tonumber(ARGV[18] or 0)
local where, json = nil, nil
if where_raw ~= "" then
  json = cjson.new()
  json.decode_invalid_numbers(false)
  json.decode_max_depth(64)
  where = json.decode(where_raw)
end
-- the failure filter: a message matches only with a recorded failure (the summary
-- {id}:t in the failure key) of that type, error line and attempt
local error_type, error_text = ARGV[19] or "", ARGV[20] or ""
local min_attempt = tonumber(ARGV[21] or 0)
local failing = error_type ~= "" or error_text ~= "" or min_attempt > 0
local fkey = KEYS[3]
if failing and fkey ~= nil and not is_hash(fkey) then
  fkey = nil -- none recorded (or another client's key there): nothing matches
end
local _, ms = now()
local first, last = state_range(zkey, state, ms)

-- byte-wise order, as the zset orders members (Lua's < follows the locale)
local function before(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- the first rank whose (score, member) is after (s, m), or at it unless `strict`
local function bound(s, m, strict)
  local lo = redis.call("ZCOUNT", zkey, "-inf", "(" .. s)
  local hi = redis.call("ZCOUNT", zkey, "-inf", s)
  while lo < hi do -- members of an equal score: binary search, O(log n) each probe
    local mid = math.floor((lo + hi) / 2)
    local x = redis.call("ZRANGE", zkey, mid, mid)[1]
    if before(x, m) or (strict and x == m) then lo = mid + 1 else hi = mid end
  end
  return lo
end

local rank, delta
if dir == "prev" then
  delta = -1
  rank = last
  if cscore ~= "" then rank = math.min(last, bound(cscore, cmember, false) - 1) end
else
  delta = 1
  if dir == "rank" then
    rank = first + tonumber(cscore)
  elseif cscore ~= "" then
    rank = math.max(first, bound(cscore, cmember, true))
  else
    rank = first
  end
end

local found, ranks = {}, {}
local looked, bytes, last_id, last_score, matched = 0, 0, false, false, 0
local client_bytes = 0
local candidates = {} -- ids whose body the client searches (their rows' bodies: false)

-- The filter: whether message `id` is one the read wants beyond its rank range (in
-- flight / delayed, received at least min rc times, a text in its body). Every condition
-- a read may set is decided here, and checked in queues/ops/read.py's _filters().
-- Returns true, false, or "stop": reading its body would pass a byte budget (then it is
-- not looked at: the next call starts with it).
local filtered = state == "inflight" or state == "delayed" or min_rc > 0 or needle ~= ""
  or where ~= nil or older > 0 or younger > 0 or failing

-- a summary's fields (record_failure.lua): type, first, last, error line, attempt
local function summary_fields(summary)
  local out = {}
  for part in string.gmatch(summary .. "\31", "([^\31]*)\31") do
    out[#out + 1] = part
  end
  return out
end

local function failed_so(id)
  if not fkey then return false end
  local summary = redis.call("HGET", fkey, id .. ":t")
  if not summary then return false end
  local f = summary_fields(summary)
  if error_type ~= "" and f[1] ~= error_type then return false end
  if error_text ~= "" and string.find(f[4] or "", error_text, 1, true) == nil then
    return false
  end
  if min_attempt > 0 and (tonumber(f[5] or "") or 0) < min_attempt then return false end
  return true
end

-- The field filter's rules (queues/fields.py's _holds() says the same in Python):
-- the value at a path (nil: absent; objects have string keys, lists 1-based numbers)
local function at(doc, path)
  local x = doc
  for _, step in ipairs(path) do
    if type(x) ~= "table" then return nil end
    if type(step) == "number" then x = x[step + 1] else x = x[step] end
    if x == nil then return nil end
  end
  return x
end

-- a number equals numbers, a text texts, true / false / null themselves
local function equal(x, v)
  local kind, value = v[1], v[2]
  if kind == "n" then return type(x) == "number" and x == value end
  if kind == "s" then return type(x) == "string" and x == value end
  if kind == "b" then return type(x) == "boolean" and x == value end
  return x == json.null
end

local function holds(c, doc)
  local op, x = c[1], at(doc, c[2])
  if op == "exists" then return x ~= nil end
  if op == "missing" then return x == nil end
  if x == nil then return false end
  if op == "=" then return equal(x, c[3][1]) end
  if op == "!=" then return not equal(x, c[3][1]) end
  if op == "in" then
    for _, v in ipairs(c[3]) do
      if equal(x, v) then return true end
    end
    return false
  end
  local kind, value = c[3][1][1], c[3][1][2]
  local lt
  if kind == "n" then
    if type(x) ~= "number" then return false end
    lt = x < value
  else
    if type(x) ~= "string" then return false end
    lt = before(x, value)
  end
  local eq = x == value
  if op == "<" then return lt end
  if op == "<=" then return lt or eq end
  if op == ">" then return not lt and not eq end
  return not lt
end

-- a body read here against the field filter: not JSON never matches
local function fields_match(body)
  local ok, doc = pcall(json.decode, body)
  if not ok then return false end
  for _, c in ipairs(where) do
    if not holds(c, doc) then return false end
  end
  return true
end

-- epoch ms a message was sent, from its id (nil: an id with no time in it)
local function sent_ms(id)
  if #id ~= 32 then return nil end
  local head = string.sub(id, 1, 10)
  if not string.match(head, "^[0-9a-z]+$") or not string.match(string.sub(id, 11), "^[%w:]+$") then
    return nil
  end
  return tonumber(head, 36) / 1000
end

local need_rc = state == "inflight" or state == "delayed" or min_rc > 0
local function matches(id)
  if older > 0 or younger > 0 then
    local sent = sent_ms(id)
    if not sent then return false end
    local age = ms - sent
    if older > 0 and age < older then return false end
    if younger > 0 and age >= younger then return false end
  end
  if failing and not failed_so(id) then return false end
  if need_rc then -- one HGET less a message when neither the state nor min rc asks
    local rc_raw = redis.call("HGET", qkey, id .. ":rc")
    if state == "inflight" and rc_raw == false then return false end
    if state == "delayed" and rc_raw ~= false then return false end
    -- an rc that is not a number (another client's) counts as received once
    local rc = rc_raw and (tonumber(rc_raw) or 1) or 0
    if rc < min_rc then return false end
  end
  if needle ~= "" or where then
    local size = redis.call("HSTRLEN", qkey, id)
    if size < #needle then return false end
    if (needle ~= "" and not lua_search) or size > LUA_BODY_MAX then
      -- a candidate: the client searches it / reads its fields (its row's body is false)
      if looked > 0 and client_bytes + size > client_budget then return "stop" end
      client_bytes = client_bytes + size
      candidates[id] = true
      return true
    end
    if looked > 0 and bytes + size > byte_budget then return "stop" end
    bytes = bytes + size
    local body = redis.call("HGET", qkey, id) or ""
    if needle ~= "" and string.find(body, needle, 1, true) == nil then return false end
    if where then return fields_match(body) end
  end
  return true
end

local stopped = false
while rank >= first and rank <= last and looked < step and (counting or #found < limit)
    and not stopped do
  local n = math.min(200, step - looked)
  if not filtered and not counting then n = math.min(n, limit - #found) end
  local lo, hi
  if delta == 1 then lo, hi = rank, math.min(rank + n - 1, last) else lo, hi = math.max(rank - n + 1, first), rank end
  local batch = redis.call("ZRANGE", zkey, lo, hi, "WITHSCORES")
  if #batch == 0 then break end
  local count = #batch / 2
  for k = 1, count do
    local j = delta == 1 and k or (count - k + 1)
    local id, score = batch[2 * j - 1], batch[2 * j]
    local verdict = true
    if filtered then verdict = matches(id) end
    if verdict == "stop" then
      stopped = true
      break
    end
    looked = looked + 1
    last_id, last_score = id, score
    if verdict then
      matched = matched + 1
      if matched > skip and #found < limit then
        found[#found + 1] = id
        ranks[#ranks + 1] = rank
      end
    end
    rank = rank + delta
    if (#found >= limit and not counting) or looked >= step then break end
  end
end

local at_end = (rank < first or rank > last) and 1 or 0
local out = {ms, looked, at_end, last_score, last_id, first, last,
  ranks[1] or -1, ranks[#ranks] or -1, matched}
for _, id in ipairs(found) do
  append_row(out, zkey, qkey, id, preview, room, candidates[id])
end
return out
