-- KEYS: zset, queue hash
local _, ms = now()
local a = attributes(KEYS[1], KEYS[2], ms)
if not a then
  return not_found()
end
return a
