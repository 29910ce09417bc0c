-- An API token's calls of this minute (a fixed window shared by every web process) and
-- the tokens' generation (bumped at every revocation or change), in one round trip.
-- KEYS: the token's counter of this window, the generation. ARGV: the limit, the
-- counter's time to live (s), how many this call counts for (an import: its messages;
-- default 1). Returns {calls counted, 1 if this one is admitted, the generation}. A
-- refused call is not counted.
local n = tonumber(ARGV[3] or "1")
local used = redis.call("INCRBY", KEYS[1], n)
if used == n then
  redis.call("EXPIRE", KEYS[1], ARGV[2])
end
local generation = redis.call("GET", KEYS[2]) or "0"
if used > tonumber(ARGV[1]) then
  redis.call("DECRBY", KEYS[1], n)
  return {used - n, 0, generation}
end
return {used, 1, generation}
