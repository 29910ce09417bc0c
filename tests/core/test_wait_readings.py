"""Wait readings (queues/ops/timings.py): the waits of messages first received since a
time, read from any client's messages, and the worker's timing records; checked against
the queue's raw hash read with redis-py."""

from __future__ import annotations

import time

import pytest
import redis

from queues import RedisSMQ
from queues.limits import TIMINGS_MAX


def raw_waits(r: redis.Redis, ns: str, qname: str, since: int) -> list[float]:
    """ms from send to first receive of the messages first received after ``since``,
    from the raw hash: an id's first 10 characters are base36 epoch microseconds."""
    out = []
    for field, value in r.hgetall(f"{ns}:{qname}:Q").items():
        name = field
        if name.endswith(":fr") and int(value) > since:
            mid = name[: -len(":fr")]
            out.append(int(value) - int(mid[:10], 36) / 1000)
    return sorted(out)


def redis_ms(r: redis.Redis) -> int:
    s, us = r.time()
    return s * 1000 + us // 1000


def test_it_reads_the_waits_of_messages_first_received_since(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, queue: str
) -> None:
    for i in range(12):
        rsmq.send_message(queue, f"m{i}")
    rsmq.receive_messages(queue, 3, vt=600)  # before `since`: not counted
    time.sleep(0.01)
    since = redis_ms(r)
    time.sleep(0.02)
    rsmq.receive_messages(queue, 4, vt=600)
    time.sleep(0.05)
    got = rsmq.receive_messages(queue, 2, vt=0)  # received, visible again at once
    assert len(got) == 2
    [reading] = rsmq.wait_readings({queue: since})
    assert sorted(reading.waits) == pytest.approx(raw_waits(r, ns, queue, since))
    assert len(reading.waits) == 6
    assert not reading.sampled and reading.records == []
    assert reading.since == since and reading.now >= since


def test_past_its_sample_it_looks_at_some_and_says_so(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, queue: str
) -> None:
    since = redis_ms(r) - 1
    for i in range(40):
        rsmq.send_message(queue, f"m{i}")
    rsmq.receive_messages(queue, 40, vt=600)
    [reading] = rsmq.wait_readings({queue: since}, sample=10)
    assert (reading.scored, reading.looked, reading.sampled) == (40, 10, True)
    assert len(reading.waits) == 10
    every = raw_waits(r, ns, queue, since)
    assert all(any(abs(w - e) < 1e-6 for e in every) for w in reading.waits)


def test_it_reads_back_what_the_worker_recorded(rsmq: RedisSMQ, r: redis.Redis, queue: str) -> None:
    before = redis_ms(r)
    assert rsmq.record_timings(queue, [(250, 1_000, 12.5, 80.25), (0, 2_000, 3.0, 4.0)]) == 2
    [reading] = rsmq.wait_readings({queue: 0})
    newest, oldest = reading.records
    assert (newest.fr, newest.wait, newest.processing) == (2_000, 3.0, 4.0)
    assert (oldest.fr, oldest.wait, oldest.processing) == (1_000, 12.5, 80.25)
    # stamped with the Redis clock: the delete's time, `age` ms before the record
    assert before - 250 <= oldest.recorded <= reading.now - 250
    assert oldest.recorded <= newest.recorded


def test_the_records_are_capped_and_expire(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, queue: str
) -> None:
    for _ in range(3):
        rsmq.record_timings(queue, [(0, i, 1.0, 1.0) for i in range(TIMINGS_MAX // 2 + 7)])
    key = f"{ns}:{queue}:x:timings"
    assert r.llen(key) == TIMINGS_MAX
    assert 0 < r.ttl(key) <= 24 * 3600


def test_data_another_client_wrote_never_fails_the_reading(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, queue: str
) -> None:
    since = redis_ms(r) - 1
    rsmq.send_message(queue, "ok")
    rsmq.receive_messages(queue, 1, vt=600)
    # a member that is not an RSMQ id, with an fr; a fr that is not a number
    r.zadd(f"{ns}:{queue}", {"not-an-id": redis_ms(r) + 60_000, "x" * 32: redis_ms(r) + 60_000})
    r.hset(f"{ns}:{queue}:Q", mapping={"not-an-id:fr": redis_ms(r), "x" * 32 + ":fr": "abc"})
    r.set(f"{ns}:{queue}:x:timings", "a string, not a list")
    [reading] = rsmq.wait_readings({queue: since})
    assert len(reading.waits) == 1 and reading.records == []
    assert rsmq.record_timings(queue, [(0, 1, 1.0, 1.0)]) == 0  # left alone
    assert r.get(f"{ns}:{queue}:x:timings") == "a string, not a list"
    r.delete(f"{ns}:{queue}:x:timings")
    r.rpush(f"{ns}:{queue}:x:timings", "garbage", "1 2 3 4")
    [reading] = rsmq.wait_readings({queue: since})
    assert [(t.recorded, t.fr) for t in reading.records] == [(1, 2)]


def test_names_that_are_not_queue_names_are_left_out(rsmq: RedisSMQ, queue: str) -> None:
    assert [w.qname for w in rsmq.wait_readings({"bad name!": 0, queue: 0})] == [queue]
    assert rsmq.wait_readings({}) == []
