-- KEYS: zset, queue hash. ARGV: "clean" or "", then field names of the queue's hash
-- (the client lists them with HKEYS: names only, never a body).
-- Orphaned message fields: a body (`<id>`), `<id>:rc`, `<id>:fr` or `x:src:<id>` whose
-- id is no member of the zset — go-rsmq's deleteMessage leaves the body field behind.
-- A field is one only when its id looks like a message id (16 to 64 characters of
-- letters, digits and ':'); the queue's own fields (vt, ..., x:dlq) and other names a
-- port adds (go-rsmq's `createdby`) are never one. With "clean" each orphan is deleted,
-- its id re-checked against the zset in this same script: nothing a live message owns
-- is touched. Returns how many orphans were found (deleted, with "clean") and their bytes.
if queue_missing(KEYS[2]) then
  return not_found()
end
local own = {}
for _, f in ipairs(ATTRIBUTES) do
  own[f] = true
end
local clean = ARGV[1] == "clean"
local n, bytes = 0, 0
for i = 2, #ARGV do
  local f = ARGV[i]
  local id
  if not own[f] then
    if string.sub(f, 1, 6) == "x:src:" then
      id = string.sub(f, 7)
    elseif string.sub(f, 1, 2) == "x:" then
      id = nil
    elseif string.sub(f, -3) == ":rc" or string.sub(f, -3) == ":fr" then
      id = string.sub(f, 1, -4)
    else
      id = f
    end
  end
  if id and #id >= 16 and #id <= 64 and string.match(id, "^[%w:]+$")
      and not redis.call("ZSCORE", KEYS[1], id) then
    local size = redis.call("HSTRLEN", KEYS[2], f)
    if clean then
      n = n + redis.call("HDEL", KEYS[2], f)
    elseif redis.call("HEXISTS", KEYS[2], f) == 1 then
      n = n + 1
    end
    bytes = bytes + size
  end
end
return {n, bytes}
