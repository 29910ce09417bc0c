-- KEYS: zset, queue hash, timings key (limits.TIMINGS_SUFFIX)
-- ARGV: since (epoch ms), most members to look at, phase in [0, 1), most timing entries
-- Read-only. The messages first received after `since` that are still in the queue,
-- and the worker's timing records. Every score written after `since` (a receive, a
-- visibility change, a send) is later than `since`, so a message first received after
-- it scores after it: only the members scored after `since` are looked at, at most
-- `most` of them (past that, evenly spaced ranks from a random phase: a sample).
-- Returns {now ms, members scored after since, looked at, {id, fr, id, fr, ...},
-- {timing entries}}; a key of the wrong type reads as empty.
local _, ms = now()
local since, most, phase = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local zkey, qkey, tkey = KEYS[1], KEYS[2], KEYS[3]

local function scan()
  local card = redis.call("ZCARD", zkey)
  local after = redis.call("ZCOUNT", zkey, "(" .. int(since), "+inf")
  local ids
  if after <= most then
    ids = redis.call("ZRANGE", zkey, card - after, card - 1)
  else
    ids = {}
    for i = 0, most - 1 do
      local rank = card - after + math.floor((i + phase) * after / most)
      ids[#ids + 1] = redis.call("ZRANGE", zkey, rank, rank)[1]
    end
  end
  local found = {}
  for _, id in ipairs(ids) do
    local fr = redis.call("HGET", qkey, id .. ":fr")
    local n = tonumber(fr)
    if n and n > since and n <= ms then
      found[#found + 1] = id
      found[#found + 1] = fr
    end
  end
  return after, #ids, found
end

local ok, after, looked, found = pcall(scan)
if not ok then
  after, looked, found = 0, 0, {}
end
local entries = {}
if redis.call("TYPE", tkey).ok == "list" then
  entries = redis.call("LRANGE", tkey, 0, tonumber(ARGV[4]) - 1)
end
return {ms, after, looked, found, entries}
