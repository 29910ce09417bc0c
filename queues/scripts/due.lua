-- KEYS: zset 1, zset 2, ... ARGV: bucket width (ms), buckets, the peak's width (ms),
-- then the widths the busiest bucket is cut into on the way down to the peak's, largest
-- first (a day's: an hour).
-- Read-only: when each queue's hidden messages become visible. Per queue: the messages
-- visible now, all of them, those due past the last bucket, the peak's start, end and
-- count (0 0 0: nothing due in the view), then each bucket's count. Bucket 0 runs from
-- now to the next multiple of the width (UTC), each next one a whole width. The peak is
-- the busiest window of the peak's width on its multiples: the busiest bucket is cut
-- into the next width down, the busiest part of that again, and so on (buckets narrower
-- than the peak are summed into it instead). ZCOUNT is O(log n): a few dozen of them
-- cost the same at a million messages as at a thousand.
local _, ms = now()
local width, count, pw = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local cuts = {}
for i = 4, #ARGV do
  cuts[#cuts + 1] = tonumber(ARGV[i])
end
cuts[#cuts + 1] = pw
local now_lo = "(" .. int(ms)
-- hidden messages due in [lo, hi): from just after now at the earliest
local function due(z, lo, hi)
  return redis.call("ZCOUNT", z, lo <= ms and now_lo or int(lo), "(" .. int(hi))
end
local out = {int(ms)}
for _, z in ipairs(KEYS) do
  local base = math.floor(ms / width) * width
  local counts = {}
  local best, at = 0, nil
  for i = 0, count - 1 do
    local c = due(z, base + i * width, base + (i + 1) * width)
    counts[#counts + 1] = c
    if c > best then
      best, at = c, base + i * width
    end
  end
  local peak = {0, 0, 0}
  if at and width <= pw then
    -- narrow buckets: summed into the peak's windows
    local sums, order = {}, {}
    for i = 0, count - 1 do
      local w = math.floor((base + i * width) / pw) * pw
      if not sums[w] then
        sums[w] = 0
        order[#order + 1] = w
      end
      sums[w] = sums[w] + counts[i + 1]
    end
    for _, w in ipairs(order) do
      if sums[w] > peak[3] then
        peak = {w, w + pw, sums[w]}
      end
    end
  elseif at then
    local start, span, n = at, width, best
    for _, w in ipairs(cuts) do
      if w < span then
        local bs, bn = start, -1
        for s = start, start + span - w, w do
          if s + w > ms then
            local c = due(z, s, s + w)
            if c > bn then
              bs, bn = s, c
            end
          end
        end
        start, span, n = bs, w, bn
      end
    end
    peak = {start, start + span, n}
  end
  out[#out + 1] = redis.call("ZCOUNT", z, "-inf", int(ms))
  out[#out + 1] = redis.call("ZCARD", z)
  out[#out + 1] = redis.call("ZCOUNT", z, int(base + count * width), "+inf")
  out[#out + 1] = int(peak[1])
  out[#out + 1] = int(peak[2])
  out[#out + 1] = peak[3]
  for _, c in ipairs(counts) do
    out[#out + 1] = c
  end
end
return out
