"""queue_stats: every queue's counters with the hidden split, in one pipelined round trip."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from queues import QueueStats, RedisSMQ


def now_ms(r: redis.Redis) -> int:
    sec, usec = r.time()
    return sec * 1000 + usec // 1000


def evalsha_calls(r: redis.Redis) -> int:
    return r.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)


class RoundTrips:
    """A RedisSMQ whose connections count every write to the socket (one per round trip)."""

    def __init__(self, redis_url: str, ns: str) -> None:
        counter = self

        class CountingConnection(redis.Connection):
            def send_packed_command(self, command, check_health=True):
                counter.count += 1
                return super().send_packed_command(command, check_health)

        self.count = 0
        client = redis.Redis.from_url(redis_url, connection_class=CountingConnection)
        self.rsmq = RedisSMQ(client=client, ns=ns)
        self.rsmq.ping()  # the connection's handshake is not part of what is measured
        self.count = 0


@pytest.fixture
def counted(redis_url: str, ns: str) -> Iterator[RoundTrips]:
    rt = RoundTrips(redis_url, ns)
    yield rt
    rt.rsmq.close()


@pytest.fixture
def mixed(rsmq: RedisSMQ, queue: str) -> str:
    """q1 with 3 visible, 2 in flight and 2 delayed messages."""
    rsmq.send_messages(queue, [f"m{i}" for i in range(5)])
    rsmq.receive_messages(queue, 2, vt=100)
    rsmq.send_messages(queue, ["d0", "d1"], delay=200)
    return queue


def test_queue_stats_splits_a_small_queue_exactly(rsmq: RedisSMQ, mixed: str):
    (s,) = rsmq.queue_stats([mixed])

    assert isinstance(s, QueueStats)
    assert s.qname == mixed
    assert (s.msgs, s.visible, s.hidden, s.inflight, s.delayed) == (7, 3, 4, 2, 2)
    assert s.exact is True


def test_queue_stats_carries_the_queue_attributes(rsmq: RedisSMQ, mixed: str):
    (s,) = rsmq.queue_stats([mixed])

    a = rsmq.get_queue_attributes(mixed)
    assert (s.vt, s.delay, s.maxsize) == (a.vt, a.delay, a.maxsize)
    assert (s.totalsent, s.totalrecv) == (a.totalsent, a.totalrecv) == (7, 2)
    assert (s.created, s.modified) == (a.created, a.modified)
    assert (s.msgs, s.hidden) == (a.msgs, a.hiddenmsgs)


def test_queue_stats_of_an_empty_queue_is_all_zero(rsmq: RedisSMQ, queue: str):
    (s,) = rsmq.queue_stats([queue])

    assert (s.msgs, s.visible, s.hidden, s.inflight, s.delayed) == (0, 0, 0, 0, 0)
    assert (s.oldest_sent, s.oldest_age, s.exact) == (None, None, True)


def test_queue_stats_is_exact_when_hidden_equals_the_sample(rsmq: RedisSMQ, mixed: str):
    (s,) = rsmq.queue_stats([mixed], sample=4)

    assert (s.inflight, s.delayed, s.exact) == (2, 2, True)


def test_queue_stats_estimates_the_split_past_the_sample_within_ten_percent(
    rsmq: RedisSMQ, queue: str
):
    rsmq.send_messages(queue, ["i"] * 300)
    rsmq.receive_messages(queue, 300, vt=100)
    rsmq.send_messages(queue, ["d"] * 200, delay=200)
    rsmq.send_messages(queue, ["v"] * 10)

    (s,) = rsmq.queue_stats([queue], sample=50)

    assert s.exact is False
    assert (s.msgs, s.visible, s.hidden) == (510, 10, 500)
    assert 270 <= s.inflight <= 330
    assert 180 <= s.delayed <= 220
    assert s.inflight + s.delayed == 500


def test_queue_stats_oldest_sent_is_the_head_visible_message(rsmq: RedisSMQ, queue: str):
    rsmq.send_message(queue, "hidden first", delay=100)
    head = rsmq.send_message(queue, "a")
    rsmq.send_message(queue, "b")

    (s,) = rsmq.queue_stats([queue])

    assert s.oldest_sent == int(head[:10], 36) / 1000


def test_queue_stats_oldest_age_is_seconds_since_the_head_was_sent(rsmq: RedisSMQ, queue: str):
    rsmq.send_message(queue, "a")
    time.sleep(0.2)

    (s,) = rsmq.queue_stats([queue])

    assert s.oldest_age == (s.now - s.oldest_sent) / 1000
    assert 0.199 <= s.oldest_age < 1.0  # now is whole ms, sent has µs: up to 1 ms short


def test_queue_stats_oldest_is_none_when_nothing_is_visible(rsmq: RedisSMQ, mixed: str):
    rsmq.receive_messages(mixed, 10)

    (s,) = rsmq.queue_stats([mixed])

    assert (s.visible, s.oldest_sent, s.oldest_age) == (0, None, None)


def test_queue_stats_now_is_the_server_time(rsmq: RedisSMQ, queue: str, r: redis.Redis):
    before = now_ms(r)

    (s,) = rsmq.queue_stats([queue])

    assert before <= s.now <= now_ms(r)


def test_queue_stats_leaves_out_missing_queues(rsmq: RedisSMQ, queue: str):
    stats = rsmq.queue_stats(["nope", queue, "gone"])

    assert [s.qname for s in stats] == [queue]


def test_queue_stats_of_only_missing_queues_is_empty(rsmq: RedisSMQ):
    assert rsmq.queue_stats(["nope"]) == []


def test_queue_stats_of_no_names_is_empty(rsmq: RedisSMQ, queue: str):
    assert rsmq.queue_stats([]) == []


def test_queue_stats_defaults_to_every_queue_sorted(rsmq: RedisSMQ):
    for name in ["b", "c", "a"]:
        rsmq.create_queue(name)

    assert [s.qname for s in rsmq.queue_stats()] == ["a", "b", "c"]


def test_queue_stats_keeps_the_order_of_the_names_given(rsmq: RedisSMQ):
    for name in ["b", "c", "a"]:
        rsmq.create_queue(name)

    assert [s.qname for s in rsmq.queue_stats(["c", "a", "b"])] == ["c", "a", "b"]


def test_queue_stats_of_many_queues_reports_each_queues_own_counts(rsmq: RedisSMQ):
    names = [f"q{i:03d}" for i in range(450)]
    for i, name in enumerate(names):
        rsmq.create_queue(name)
        if i % 50 == 0:
            rsmq.send_messages(name, ["m"] * (i // 50 + 1))

    stats = {s.qname: s.msgs for s in rsmq.queue_stats(names)}

    assert stats == {n: (i // 50 + 1 if i % 50 == 0 else 0) for i, n in enumerate(names)}


def test_queue_stats_of_given_queues_is_one_round_trip(counted: RoundTrips, r: redis.Redis):
    for name in ["a", "b", "c"]:
        counted.rsmq.create_queue(name)
    counted.rsmq.queue_stats(["a"])  # scripts loaded: no NOSCRIPT retry below
    counted.count = 0
    before = evalsha_calls(r)

    stats = counted.rsmq.queue_stats(["a", "b", "c"])

    assert counted.count == 1
    assert evalsha_calls(r) - before == 1
    assert len(stats) == 3


def test_queue_stats_of_450_queues_is_one_pipeline_of_three_scripts(
    counted: RoundTrips, r: redis.Redis
):
    names = [f"q{i:03d}" for i in range(450)]
    for name in names:
        counted.rsmq.create_queue(name)
    counted.rsmq.queue_stats(["q000"])
    counted.count = 0
    before = evalsha_calls(r)

    stats = counted.rsmq.queue_stats(names)

    assert counted.count == 1
    assert evalsha_calls(r) - before == 3  # one per 200 queues
    assert len(stats) == 450


def test_queue_stats_of_every_queue_is_at_most_two_round_trips(counted: RoundTrips):
    for name in ["a", "b", "c"]:
        counted.rsmq.create_queue(name)
    counted.rsmq.queue_stats(["a"])
    counted.count = 0

    stats = counted.rsmq.queue_stats()

    assert counted.count <= 2
    assert [s.qname for s in stats] == ["a", "b", "c"]


# -- every queue of a namespace in one round trip, once the names are known --------------


def test_queue_stats_of_all_queues_is_one_round_trip_from_the_second_call_on(counted: RoundTrips):
    client = counted.rsmq
    for i in range(450):  # three stats scripts in the pipeline
        client.create_queue(f"q{i:03d}")
    client.queue_stats()
    counted.count = 0

    stats = client.queue_stats()

    assert counted.count == 1
    assert [s.qname for s in stats] == [f"q{i:03d}" for i in range(450)]


def test_queue_stats_of_all_queues_sees_a_queue_created_meanwhile(
    counted: RoundTrips, rsmq: RedisSMQ
):
    client = counted.rsmq
    client.create_queue("a")
    client.queue_stats()
    rsmq.create_queue("b")  # by another client
    rsmq.send_message("b", "x")
    counted.count = 0

    stats = client.queue_stats()

    assert [(s.qname, s.msgs) for s in stats] == [("a", 0), ("b", 1)]
    assert counted.count == 2  # the new queue's counters: one more round trip


def test_queue_stats_of_all_queues_drops_a_queue_deleted_meanwhile(
    counted: RoundTrips, rsmq: RedisSMQ
):
    client = counted.rsmq
    client.create_queue("a")
    client.create_queue("b")
    client.queue_stats()
    rsmq.delete_queue("b")
    counted.count = 0

    assert [s.qname for s in client.queue_stats()] == ["a"]
    assert counted.count == 1
