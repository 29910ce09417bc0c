-- The epilogue of an audited script (queues/scripts.py `audited`): the operation above
-- ran as __op(); its audit record goes to the namespace's audit stream in this same
-- script, so no operation is done without its record (a script runs whole, or not at
-- all, and an error raised half-way is recorded too). The record: "h" the caller's part
-- (who, what, where: JSON, never parsed here), "o" ok / error, "r" what came of it
-- (mode "ids": the ids returned; "recv": every 4th item of the flat reply, the ids;
-- "n": the number returned; an error: its text). Bodies are never recorded.
local __ok, __r = pcall(__op)
local __outcome, __result = "ok", ""
if not __ok then
  __outcome = "error"
  __result = type(__r) == "table" and tostring(__r.err) or tostring(__r)
elseif type(__r) == "table" and __r.err then
  __outcome = "error"
  __result = tostring(__r.err)
elseif __audit_mode == "ids" then
  __result = table.concat(__r, " ")
elseif __audit_mode == "recv" then
  local ids = {}
  for i = 1, #__r, 4 do
    ids[#ids + 1] = __r[i]
  end
  __result = table.concat(ids, " ")
else
  __result = tostring(__r)
end
redis.call("XADD", __audit_key, "*", "h", __audit_head, "o", __outcome, "r", __result)
if not __ok then
  if type(__r) == "table" then
    return __r
  end
  return redis.error_reply(tostring(__r))
end
return __r
