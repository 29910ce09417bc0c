-- KEYS: zset. ARGV: ids. Returns how many of them are in the queue (a paced move's
-- canary: how many of the messages it moved came back).
local n = 0
for _, id in ipairs(ARGV) do
  if redis.call("ZSCORE", KEYS[1], id) then
    n = n + 1
  end
end
return n
