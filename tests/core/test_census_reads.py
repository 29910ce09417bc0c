"""The census's reads (queues/census.py): a rank range of a queue's messages, as the
browser sees them, without changing anything."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import redis

from queues import QueueNotFound, RedisSMQ
from queues import scripts as S
from queues.census import MAX_COUNT, queue_sizes, read_range
from queues.errors import InvalidArgument


@pytest.fixture
def filled(rsmq: RedisSMQ, queue: str) -> list[str]:
    ids = rsmq.send_messages(queue, ["a", "bb", "ccc", "dddd", "é"])
    rsmq.send_message(queue, "later", delay=60)
    rsmq.receive_message(queue, vt=30)
    return ids


def test_a_range_is_what_browsing_shows(rsmq, queue, filled):
    page = rsmq.list_messages(queue, limit=10)
    got = read_range(rsmq, queue, 0, 10, body=True)
    assert got.ids == [m.id for m in page.items]
    assert got.visible_at == [m.visible_at for m in page.items]
    assert got.rc == [m.rc for m in page.items]
    assert got.fr == [m.fr for m in page.items]
    assert got.size == [m.size for m in page.items]
    assert got.body == [m.message for m in page.items]
    assert got.sent == [int(m.sent) for m in page.items]
    assert got.read_at >= page.now


def test_ranges_follow_each_other(rsmq, queue, filled):
    parts = [read_range(rsmq, queue, first, 2) for first in (0, 2, 4, 6)]
    assert [len(p) for p in parts] == [2, 2, 2, 0]
    assert [i for p in parts for i in p.ids] == read_range(rsmq, queue, 0, 10).ids
    assert parts[0].body is None


def test_reading_changes_nothing(rsmq, queue, filled, ns_state):
    before = ns_state()
    read_range(rsmq, queue, 0, 10, body=True)
    read_range(rsmq, queue, 3, 1)
    assert ns_state() == before


def test_a_missing_queue_raises(rsmq):
    with pytest.raises(QueueNotFound):
        read_range(rsmq, "nosuch", 0, 10)


@pytest.mark.parametrize("first, count", [(-1, 10), (0, MAX_COUNT + 1)])
def test_bad_ranges_are_refused(rsmq, queue, first, count):
    with pytest.raises(InvalidArgument):
        read_range(rsmq, queue, first, count)


def test_queue_sizes_counts_every_queue_or_the_ones_asked(rsmq, queue, filled):
    rsmq.create_queue("empty")
    assert queue_sizes(rsmq) == {queue: 6, "empty": 0}
    assert queue_sizes(rsmq, ["empty", "nosuch"]) == {"empty": 0}


@pytest.fixture
def slowlog(r: redis.Redis) -> Iterator[Callable[[], list[int]]]:
    """``slowlog()``: the durations (µs) of census calls over 2 ms since the last call."""
    before = r.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"]
    r.config_set("slowlog-log-slower-than", 2000)
    r.slowlog_reset()

    def census_calls_over_2ms() -> list[int]:
        entries = r.slowlog_get(128)
        r.slowlog_reset()
        return [e["duration"] for e in entries if S.CENSUS.sha in str(e["command"])]

    yield census_calls_over_2ms
    r.config_set("slowlog-log-slower-than", before)
    r.slowlog_reset()


def test_a_census_of_large_bodies_never_holds_redis_over_2ms(rsmq: RedisSMQ, slowlog) -> None:
    rsmq.create_queue("big")
    body = "é" * 32_768  # 64 KB
    sent = [i for _ in range(20) for i in rsmq.send_messages("big", [body] * 10)]

    # A shared 2-core machine can pause Redis mid-call now and then: a call that is
    # short by design passes in one of three reads, one that is long fails all three.
    for _ in range(3):
        got = read_range(rsmq, "big", 0, MAX_COUNT, body=True)
        slow = slowlog()
        if not slow:
            break

    assert slow == []
    assert got.ids == sent  # each message once, in queue order
    assert got.body == [body] * 200 and got.size == [65_536] * 200


def test_a_range_cut_by_the_byte_budget_reads_on_to_its_count(rsmq: RedisSMQ) -> None:
    rsmq.create_queue("big")
    sent = [i for _ in range(4) for i in rsmq.send_messages("big", ["x" * 65_536] * 10)]

    middle = read_range(rsmq, "big", 5, 30, body=True)
    without_body = read_range(rsmq, "big", 5, 30)

    assert middle.ids == without_body.ids == sent[5:35]
    assert middle.size == without_body.size == [65_536] * 30
