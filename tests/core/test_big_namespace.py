"""A namespace of 20,000 queues is read in bounded steps: no Redis call over 5 ms.

SLOWLOG measures wall time, and on a busy machine redis-server is preempted in the middle
of a call now and then: the test asserts what the client controls (no SMEMBERS of the whole
set, stats calls of STATS_CHUNK_BIG queues) and that the calls take well under 5 ms, all
but a few. The same reading is taken three times (the same calls in the same order) and
each call's time is the least of its three: a preemption adds time to one reading, a call
doing 5 ms of work takes it in all three (as timeit keeps the best of its repeats)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import redis

from queues import AsyncRedisSMQ, RedisSMQ
from queues.limits import SMEMBERS_MAX, STATS_CHUNK_BIG

N = 20_000


@pytest.fixture
def slowlog(r: redis.Redis) -> Iterator[redis.Redis]:
    """SLOWLOG records every call while the test runs."""
    before = r.config_get("slowlog-*")
    r.config_set("slowlog-log-slower-than", 0)
    r.config_set("slowlog-max-len", 200_000)
    r.slowlog_reset()
    yield r
    r.config_set("slowlog-log-slower-than", before["slowlog-log-slower-than"])
    r.config_set("slowlog-max-len", before["slowlog-max-len"])


@pytest.mark.slow
def test_stats_of_20000_queues_have_no_redis_call_over_5_ms(
    redis_url: str, ns: str, r: redis.Redis, slowlog: redis.Redis
):
    names = [f"q{i:05d}" for i in range(N)]

    async def create(a: AsyncRedisSMQ) -> None:
        for k in range(0, N, 1000):
            await asyncio.gather(*(a.create_queue(n) for n in names[k : k + 1000]))

    async def main() -> None:
        async with AsyncRedisSMQ(url=redis_url, ns=ns) as a:
            await create(a)

    asyncio.run(main())
    assert N > SMEMBERS_MAX
    rsmq = RedisSMQ(url=redis_url, ns=ns)

    readings: list[list[tuple[bytes, int]]] = []
    for _ in range(3):
        slowlog.slowlog_reset()
        first, again = rsmq.queue_stats(), rsmq.queue_stats()
        listed = rsmq.list_queues()
        # SLOWLOG lists a script's own commands too: the client's calls are these.
        logged = slowlog.slowlog_get(200_000)
        calls = [e for e in logged if e["command"].split()[0] in (b"EVALSHA", b"SSCAN")]
        assert not [e for e in logged if e["command"].startswith(b"SMEMBERS")]
        stats = [e for e in calls if e["command"].startswith(b"EVALSHA")]
        assert stats and {int(e["command"].split()[2]) for e in stats} == {2 * STATS_CHUNK_BIG}
        readings.append([(e["command"], e["duration"]) for e in calls])
    # The same calls each time (SSCAN's cursors too: the set did not change).
    assert [c for c, _ in readings[0]] == [c for c, _ in readings[1]] == [c for c, _ in readings[2]]
    durations = sorted(
        min(times) for times in zip(*([d for _, d in r] for r in readings), strict=True)
    )
    assert durations[len(durations) // 2] < 2500  # µs: the median call, half the budget
    over = [d for d in durations if d > 5000]
    assert len(over) <= len(calls) // 20, over  # preempted mid-call: a few, on a busy machine
    assert [s.qname for s in first] == [s.qname for s in again] == listed == names
    for name in names:
        r.delete(f"{ns}:{name}:Q")
    r.delete(f"{ns}:QUEUES")
