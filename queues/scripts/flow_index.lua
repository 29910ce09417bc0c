-- KEYS: the namespace's flow index[, its due index]. Read-only: now, the flow index's
-- fields (queue, its flag in brief as JSON, ...; expired ones included: the client skips
-- them by `until`), and the due index's (queue, "start end count found-at", ...).
local _, ms = now()
local due = KEYS[2] and redis.call("HGETALL", KEYS[2]) or {}
return {int(ms), redis.call("HGETALL", KEYS[1]), due}
