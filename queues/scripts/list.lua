-- KEYS: zset, queue hash. ARGV: state, offset, limit, preview bytes (0 = whole body), scan budget
-- Read-only: browsing never changes rc, fr or totalrecv.
-- all / visible / hidden are rank ranges of the zset (visible ranks come first), so a
-- page costs O(log n + limit). inflight / delayed filter the hidden range by rc, scanning
-- at most `budget` hidden messages; past that the total is an estimate.
if queue_missing(KEYS[2]) then
  return not_found()
end
local zkey, qkey = KEYS[1], KEYS[2]
local state, offset, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local preview, budget = tonumber(ARGV[4]), tonumber(ARGV[5])
local _, ms = now()
local first, last, msgs, visible = state_range(zkey, state, ms)
local hidden = msgs - visible
local total, exact = 0, 1
local ids = {}

if state == "all" or state == "visible" or state == "hidden" then
  total = last - first + 1
  local lo = first + offset
  local hi = math.min(lo + limit - 1, last)
  if lo <= hi then
    ids = redis.call("ZRANGE", zkey, lo, hi)
  end
else
  local want_received = state == "inflight"
  local matched, scanned, rank = 0, 0, visible
  local chunk = 500
  while rank < msgs and scanned < budget do
    local batch = redis.call("ZRANGE", zkey, rank, math.min(rank + chunk - 1, msgs - 1))
    if #batch == 0 then break end
    for _, id in ipairs(batch) do
      if scanned >= budget then break end
      scanned = scanned + 1
      local received = redis.call("HEXISTS", qkey, id .. ":rc") == 1
      if received == want_received then
        if matched >= offset and #ids < limit then
          ids[#ids + 1] = id
        end
        matched = matched + 1
      end
    end
    rank = rank + #batch
  end
  total = matched
  if scanned < hidden then
    exact = 0
    if scanned > 0 then
      total = math.max(matched, math.floor(matched * hidden / scanned + 0.5))
    end
  end
end

local out = {ms, total, exact}
for _, id in ipairs(ids) do
  append_row(out, zkey, qkey, id, preview)
end
return out
