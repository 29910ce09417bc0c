-- KEYS: queue hash, dead-letter queue hash. ARGV: dead-letter queue name ("" = clear), maxrc
-- The policy lives in extension fields of the queue's hash, which original clients ignore
-- and whose names no 32-char message id can take.
if queue_missing(KEYS[1]) then
  return not_found()
end
if ARGV[1] == "" then
  redis.call("HDEL", KEYS[1], "x:dlq", "x:maxrc")
  return 1
end
if queue_missing(KEYS[2]) then
  return redis.error_reply("queueNotFound dst")
end
redis.call("HSET", KEYS[1], "x:dlq", ARGV[1], "x:maxrc", ARGV[2])
return 1
