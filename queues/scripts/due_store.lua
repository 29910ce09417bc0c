-- KEYS: the namespace's due index. ARGV: how long it is kept (ms), then queue, peak pairs
-- ("start end count found-at", epoch ms). Replaces the whole index (the console's
-- snapshot task writes it: queues/ops/flow.py store_due_peaks); it expires when no
-- snapshot renews it. Nothing of the RSMQ layout: no queue name holds '@'.
redis.call("DEL", KEYS[1])
if #ARGV > 1 then
  for i = 2, #ARGV, 1000 do
    redis.call("HSET", KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
  redis.call("PEXPIRE", KEYS[1], tonumber(ARGV[1]))
end
return (#ARGV - 1) / 2
