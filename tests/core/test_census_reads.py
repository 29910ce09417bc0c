"""The census's reads (queues/census.py): a rank range of a queue's messages, as the
browser sees them, without changing anything."""

from __future__ import annotations

import pytest

from queues import QueueNotFound, RedisSMQ
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
