-- KEYS: the namespace's flow index. Read-only: now, then the index's fields (queue, its
-- flag in brief as JSON, ...), expired ones included (the client skips them by `until`).
local _, ms = now()
return {int(ms), redis.call("HGETALL", KEYS[1])}
