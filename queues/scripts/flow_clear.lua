-- KEYS: the queue's flow key, its hash, the namespace's flow index. ARGV: qname.
-- Resumes the queue: its flow flag is deleted (queues/ops/flow.py). Returns the flag it
-- had as flow_reply() reads it (its fields empty: there was none, or it had expired).
local _, ms = now()
local was = flow_reply(KEYS[1], KEYS[2], ms)
redis.call("DEL", KEYS[1])
redis.call("HDEL", KEYS[3], ARGV[1])
flow_index_prune(KEYS[3], ms)
return was
