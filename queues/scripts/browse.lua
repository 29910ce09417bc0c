-- KEYS: zset, queue hash
-- ARGV: state, direction, cursor score, cursor member, limit, preview bytes, step,
--       min rc (0 = any), needle ("" = any), body bytes budget,
--       skip (matches passed over before the rows start), count ("1": look at the whole
--       step, counting every match, however many rows it returns)
-- Read-only keyset browsing over (score, member), the zset's own order, so a page never
-- depends on how many messages came or went before it. direction:
--   "next": members after (cursor score, cursor member), forwards ("" score: from the start)
--   "prev": members before it, backwards ("" score: from the end)
--   "rank": forwards from the state's rank `cursor score` (an exact page of all / visible
--           / hidden, whose ranks are contiguous)
-- A call looks at no more than `step` members (and reads no more than `body bytes
-- budget` of bodies for a needle), so it holds Redis a few ms at most however sparse the
-- matches; the client calls again from where it stopped.
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

-- The filter: whether message `id` is one the read wants beyond its rank range (in
-- flight / delayed, received at least min rc times, a text in its body). Every condition
-- a read may set is decided here, and checked in queues/ops/read.py's _filters().
local filtered = state == "inflight" or state == "delayed" or min_rc > 0 or needle ~= ""
local function matches(id)
  local rc_raw = redis.call("HGET", qkey, id .. ":rc")
  if state == "inflight" and rc_raw == false then return false end
  if state == "delayed" and rc_raw ~= false then return false end
  -- an rc that is not a number (another client's) counts as received once
  local rc = rc_raw and (tonumber(rc_raw) or 1) or 0
  if rc < min_rc then return false end
  if needle ~= "" then
    local body = redis.call("HGET", qkey, id) or ""
    bytes = bytes + #body
    return string.find(body, needle, 1, true) ~= nil
  end
  return true
end

while rank >= first and rank <= last and looked < step and (counting or #found < limit)
    and bytes < byte_budget do
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
    looked = looked + 1
    last_id, last_score = id, score
    if not filtered or matches(id) then
      matched = matched + 1
      if matched > skip and #found < limit then
        found[#found + 1] = id
        ranks[#ranks + 1] = rank
      end
    end
    rank = rank + delta
    if (#found >= limit and not counting) or looked >= step or bytes >= byte_budget then break end
  end
end

local at_end = (rank < first or rank > last) and 1 or 0
local out = {ms, looked, at_end, last_score, last_id, first, last,
  ranks[1] or -1, ranks[#ranks] or -1, matched}
for _, id in ipairs(found) do
  append_row(out, zkey, qkey, id, preview)
end
return out
