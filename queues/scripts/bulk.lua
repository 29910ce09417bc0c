-- KEYS: zset, queue hash, failure key[, undo stash: zset, hash, record]. ARGV: action (requeue | delete), state, skip, chunk
-- Applies the action to the state's messages among the `chunk` members from rank
-- (start of the state's range + skip). Members of the range that are not in the state
-- (in flight vs delayed) are skipped and stay where they are. Returns {done, skipped,
-- looked at}: the caller goes on with skip + skipped while `looked at` == chunk.
if queue_missing(KEYS[2]) then
  return not_found()
end
local keep, refused = stash_open(4)
if refused then
  return refused
end
local zkey, qkey = KEYS[1], KEYS[2]
local action, state = ARGV[1], ARGV[2]
local skip, chunk = tonumber(ARGV[3]), tonumber(ARGV[4])
local _, ms = now()
local first, last = state_range(zkey, state, ms)
local lo = first + skip
if lo > last then
  return {0, 0, 0}
end
local ids = redis.call("ZRANGE", zkey, lo, math.min(lo + chunk - 1, last))
local done, skipped = 0, 0
local score = int(ms)
local deleted = {}
for _, id in ipairs(ids) do
  local ok = true
  if state == "inflight" or state == "delayed" then
    local received = redis.call("HEXISTS", qkey, id .. ":rc") == 1
    ok = received == (state == "inflight")
  end
  if not ok then
    skipped = skipped + 1
  elseif action == "delete" then
    stash_put(keep, zkey, qkey, id)
    redis.call("ZREM", zkey, id)
    redis.call("HDEL", qkey, id, id .. ":rc", id .. ":fr", "x:src:" .. id)
    deleted[#deleted + 1] = id
    done = done + 1
  else
    redis.call("ZADD", zkey, score, id)
    done = done + 1
  end
end
forget_failures(KEYS[3], deleted)
stash_close(keep)
return {done, skipped, #ids}
