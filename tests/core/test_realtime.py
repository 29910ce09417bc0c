"""Realtime: a send publishes the queue's ZCARD on {ns}:rt:{q} (SPEC §3)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from redis.client import PubSub

from queues import RedisSMQ


@pytest.fixture
def realtime(redis_url: str, ns: str) -> Iterator[RedisSMQ]:
    client = RedisSMQ(url=redis_url, ns=ns, realtime=True)
    client.create_queue("q1")
    yield client
    client.close()


def subscribe(r: redis.Redis, name: str) -> PubSub:
    """A subscription to ``name``, confirmed by the server before it is returned."""
    pubsub = r.pubsub()
    pubsub.subscribe(name)
    msg = pubsub.get_message(timeout=2)
    assert msg is not None and msg["type"] == "subscribe"
    return pubsub


@pytest.fixture
def channel(r: redis.Redis, ns: str) -> Iterator[PubSub]:
    pubsub = subscribe(r, f"{ns}:rt:q1")
    yield pubsub
    pubsub.close()


def published(pubsub: PubSub, timeout: float = 1.0) -> list[str]:
    """Every message published on the channel until nothing arrives for ``timeout`` s."""
    out = []
    while (msg := pubsub.get_message(timeout=timeout)) is not None:
        assert msg["type"] == "message"
        out.append(msg["data"])
        timeout = 0.2
    return out


def test_send_message_publishes_the_queue_size(realtime: RedisSMQ, channel: PubSub):
    realtime.send_message("q1", "a")
    realtime.send_message("q1", "b")

    assert published(channel) == ["1", "2"]


def test_send_message_publishes_the_size_including_hidden_messages(
    realtime: RedisSMQ, channel: PubSub
):
    realtime.send_message("q1", "a", delay=100)
    realtime.receive_message("q1")
    realtime.send_message("q1", "b")

    assert published(channel) == ["1", "2"]


def test_send_messages_publishes_once_per_batch(realtime: RedisSMQ, channel: PubSub):
    realtime.send_messages("q1", ["a", "b", "c"])
    realtime.send_messages("q1", ["d", "e"])

    assert published(channel) == ["3", "5"]


def test_receive_pop_and_delete_publish_nothing(realtime: RedisSMQ, channel: PubSub):
    realtime.send_messages("q1", ["a", "b", "c"])
    assert published(channel) == ["3"]

    msg = realtime.receive_message("q1")
    realtime.delete_message("q1", msg.id)
    realtime.pop_message("q1")

    assert published(channel, timeout=0.3) == []


def test_a_client_without_realtime_publishes_nothing(rsmq: RedisSMQ, channel: PubSub):
    rsmq.create_queue("q1")

    rsmq.send_message("q1", "a")
    rsmq.send_messages("q1", ["b", "c"])

    assert published(channel, timeout=0.3) == []


def test_realtime_channel_is_the_channel_sends_publish_on(realtime: RedisSMQ, r: redis.Redis):
    pubsub = subscribe(r, realtime.realtime_channel("q1"))
    try:
        realtime.send_message("q1", "a")

        assert published(pubsub) == ["1"]
    finally:
        pubsub.close()
