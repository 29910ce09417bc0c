-- KEYS: the queue's flow key, its hash. Read-only: the queue's flow flag as flow_reply()
-- reads it (its fields empty: none), or queueNotFound.
if queue_missing(KEYS[2]) then
  return not_found()
end
local _, ms = now()
return flow_reply(KEYS[1], KEYS[2], ms)
