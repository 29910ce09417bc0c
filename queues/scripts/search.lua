-- KEYS: zset, queue hash
-- ARGV: state, cursor, scan limit, limit, min rc (0 = any), needle ("" = any), preview bytes
-- Read-only. Looks at no more than `scan limit` messages of the state's rank range from
-- `cursor` on, and returns those with rc >= min rc whose body holds the needle (plain
-- text, not a pattern). Returns now, scanned, next cursor (-1 at the end), then items
-- as list.lua does.
if queue_missing(KEYS[2]) then
  return not_found()
end
local zkey, qkey = KEYS[1], KEYS[2]
local state, cursor = ARGV[1], tonumber(ARGV[2])
local scan_limit, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local min_rc, needle, preview = tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7])
local _, ms = now()
local first, last = state_range(zkey, state, ms)

local found = {}
local scanned, rank = 0, first + cursor
while rank <= last and scanned < scan_limit and #found < limit do
  local batch = redis.call("ZRANGE", zkey, rank, math.min(rank + 499, last, rank + scan_limit - scanned - 1))
  if #batch == 0 then break end
  for _, id in ipairs(batch) do
    scanned = scanned + 1
    rank = rank + 1
    -- an rc that is not a number (another client's) counts as received once
    local rc = tonumber(redis.call("HGET", qkey, id .. ":rc") or 0) or 1
    local ok = rc >= min_rc
    if state == "inflight" then ok = ok and rc >= 1 end
    if state == "delayed" then ok = ok and rc == 0 end
    if ok and needle ~= "" then
      local body = redis.call("HGET", qkey, id) or ""
      ok = string.find(body, needle, 1, true) ~= nil
    end
    if ok then
      found[#found + 1] = id
      if #found >= limit then break end
    end
  end
end

local out = {ms, scanned, rank <= last and (rank - first) or -1}
for _, id in ipairs(found) do
  append_row(out, zkey, qkey, id, preview)
end
return out
