-- KEYS: zset, queue hash
local _, ms = now()
local a, bad = attributes(KEYS[1], KEYS[2], ms)
if not a then
  return not_found()
end
if bad then
  return unreadable(bad)
end
return a
