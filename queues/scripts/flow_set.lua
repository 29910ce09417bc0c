-- KEYS: the queue's flow key, its hash, the namespace's flow index. ARGV: qname, state
-- ("paused" | "throttled"), rate (receives a second; "" when paused), reason, by, how
-- long (ms; "" = until resumed).
-- Sets the queue's flow flag (queues/ops/flow.py), replacing any: a hash beside the RSMQ
-- layout that only this project's receive script reads. It expires with the flag (the
-- queue resumes by itself); its `recv0` is the queue's totalrecv now, so that receives
-- made since by clients that ignore it can be told apart from those it let through
-- (`granted`). A throttle starts with a full bucket: a second's worth of receives (one
-- at least). Returns the flag as flow_reply() reads it.
if queue_missing(KEYS[2]) then
  return not_found()
end
local _, ms = now()
local state = ARGV[2]
local untl = ""
if ARGV[6] ~= "" then
  untl = int(ms + tonumber(ARGV[6]))
end
local recv = tonumber(redis.call("HGET", KEYS[2], "totalrecv")) or 0
redis.call("DEL", KEYS[1])
local fields = {"state", state, "reason", ARGV[4], "by", ARGV[5], "since", int(ms),
  "until", untl, "recv0", int(recv), "granted", 0, "held", 0}
local brief = {state = state, since = int(ms), ["until"] = untl, reason = ARGV[4], by = ARGV[5]}
if state == "throttled" then
  local rate = tonumber(ARGV[3])
  fields[#fields + 1] = "rate"
  fields[#fields + 1] = ARGV[3]
  fields[#fields + 1] = "tokens"
  fields[#fields + 1] = tostring(math.max(1, rate))
  fields[#fields + 1] = "ts"
  fields[#fields + 1] = int(ms)
  brief.rate = ARGV[3]
end
redis.call("HSET", KEYS[1], unpack(fields))
if untl ~= "" then
  redis.call("PEXPIREAT", KEYS[1], untl)
end
flow_index_prune(KEYS[3], ms)
redis.call("HSET", KEYS[3], ARGV[1], cjson.encode(brief))
return flow_reply(KEYS[1], KEYS[2], ms)
