"""Scripts: one EVALSHA per operation, reloaded transparently after SCRIPT FLUSH or a restart."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from queues import QueueNotFound, RedisSMQ
from queues import scripts as S
from queues.server import EmbeddedRedis

Op = Callable[[RedisSMQ, list[str]], object]

#: every public operation, and what it returns on the queues ``populate`` makes
OPERATIONS: dict[str, tuple[Op, object]] = {
    "create_queue": (lambda c, ids: c.create_queue("q3"), None),
    "list_queues": (lambda c, ids: c.list_queues(), ["q1", "q2"]),
    "delete_queue": (lambda c, ids: c.delete_queue("q2"), None),
    "get_queue_attributes": (lambda c, ids: c.get_queue_attributes("q1").msgs, 3),
    "set_queue_attributes": (lambda c, ids: c.set_queue_attributes("q1", vt=9).vt, 9),
    "send_message": (lambda c, ids: len(c.send_message("q1", "m")), 32),
    "send_messages": (lambda c, ids: len(c.send_messages("q1", ["m", "n"])), 2),
    "receive_message": (lambda c, ids: c.receive_message("q1").id == ids[0], True),
    "receive_messages": (
        lambda c, ids: [m.id for m in c.receive_messages("q1", 5)] == ids[:1],
        True,
    ),
    "pop_message": (lambda c, ids: c.pop_message("q1").id == ids[0], True),
    "pop_messages": (lambda c, ids: len(c.pop_messages("q1", 5)), 1),
    "change_message_visibility": (
        lambda c, ids: c.change_message_visibility("q1", ids[1], 0),
        True,
    ),
    "delete_message": (lambda c, ids: c.delete_message("q1", ids[0]), True),
    "delete_messages": (lambda c, ids: c.delete_messages("q1", ids), 3),
    "queue_stats": (
        lambda c, ids: [(s.qname, s.inflight) for s in c.queue_stats()],
        [("q1", 1), ("q2", 0)],
    ),
    "list_messages": (lambda c, ids: [m.id for m in c.list_messages("q1").items] == ids, True),
    "list_messages-delayed": (lambda c, ids: c.list_messages("q1", state="delayed").total, 1),
    "get_message": (lambda c, ids: c.get_message("q1", ids[2]).state, "delayed"),
    "requeue": (lambda c, ids: c.requeue("q1", ids), 3),
    "purge_queue": (lambda c, ids: c.purge_queue("q1"), 3),
    "move_messages": (lambda c, ids: c.move_messages("q1", "q2"), 3),
    "move_messages-ids": (lambda c, ids: c.move_messages("q1", "q2", ids=ids[:2]), 2),
    "ping": (lambda c, ids: c.ping(), True),
}


def populate(client: RedisSMQ) -> list[str]:
    """q1 = [visible, in flight, delayed] in queue order, and an empty q2; returns the ids."""
    client.create_queue("q1")
    client.create_queue("q2")
    inflight, visible = client.send_messages("q1", ["in flight", "visible"])
    client.receive_message("q1")
    delayed = client.send_message("q1", "delayed", delay=100)
    return [visible, inflight, delayed]


@pytest.mark.parametrize(("op", "expected"), OPERATIONS.values(), ids=OPERATIONS.keys())
def test_every_operation_works_after_script_flush(
    rsmq: RedisSMQ, r: redis.Redis, op: Op, expected: object
):
    ids = populate(rsmq)
    r.script_flush()

    assert op(rsmq, ids) == expected


ROUND_TRIPS = {
    "queue_stats": 2,  # SMEMBERS for the names, then one pipeline of stats scripts
    "purge_queue": 2,  # detach, then one drain step per CHUNK messages
}


@pytest.mark.parametrize(("op", "expected"), OPERATIONS.values(), ids=OPERATIONS.keys())
def test_every_operation_is_one_round_trip(
    redis_url: str, ns: str, r: redis.Redis, request: pytest.FixtureRequest, op: Op, expected
):
    sends = 0

    class CountingConnection(redis.Connection):
        def send_packed_command(self, command, check_health=True):
            nonlocal sends
            sends += 1
            return super().send_packed_command(command, check_health)

    client = RedisSMQ(
        client=redis.Redis.from_url(redis_url, connection_class=CountingConnection), ns=ns
    )
    try:
        ids = populate(client)
        for script in vars(S).values():
            if isinstance(script, S.Script):
                r.script_load(script.source)
        sends = 0

        assert op(client, ids) == expected

        assert sends == ROUND_TRIPS.get(request.node.callspec.id, 1)
    finally:
        client.close()


def test_a_script_flush_reloads_the_script_once(rsmq: RedisSMQ, r: redis.Redis, queue: str):
    r.script_flush()

    rsmq.send_message(queue, "a")

    assert r.script_exists(S.SEND.sha) == [True]
    assert r.script_exists(S.RECEIVE.sha) == [False]


def test_a_send_after_script_flush_writes_the_message_once(
    rsmq: RedisSMQ, r: redis.Redis, queue: str
):
    r.script_flush()

    rsmq.send_message(queue, "a")

    attrs = rsmq.get_queue_attributes(queue)
    assert (attrs.msgs, attrs.totalsent) == (1, 1)


def test_queue_stats_of_many_chunks_works_after_script_flush(rsmq: RedisSMQ, r: redis.Redis):
    names = [f"q{i:03d}" for i in range(250)]
    for name in names:
        rsmq.create_queue(name)
    rsmq.send_message("q249", "m")
    r.script_flush()

    stats = rsmq.queue_stats(names)

    assert len(stats) == 250
    assert stats[-1].msgs == 1


def test_operations_work_after_the_redis_server_restarts(tmp_path: Path):
    server = EmbeddedRedis(tmp_path, persist=True).start()
    client = RedisSMQ(url=server.url, ns="restart")
    try:
        client.create_queue("q1")
        mid = client.send_message("q1", "survives")
        client.queue_stats()  # every script used below is loaded in the old server
        server.stop()

        server = EmbeddedRedis(tmp_path, port=server.port, persist=True).start()
        raw = redis.Redis(port=server.port)
        assert raw.script_exists(S.RECEIVE.sha, S.STATS.sha) == [False, False]
        raw.close()

        msg = client.receive_message("q1")
        assert (msg.id, msg.message, msg.rc) == (mid, "survives", 1)
        assert [(s.qname, s.inflight) for s in client.queue_stats()] == [("q1", 1)]
        assert client.send_message("q1", "new") != mid
    finally:
        client.close()
        server.stop()


def test_a_fresh_server_without_data_reports_a_missing_queue_after_restart(tmp_path: Path):
    server = EmbeddedRedis(tmp_path).start()
    client = RedisSMQ(url=server.url, ns="restart")
    try:
        client.create_queue("q1")
        server.stop()
        server = EmbeddedRedis(tmp_path, port=server.port).start()

        with pytest.raises(QueueNotFound):
            client.send_message("q1", "m")
        client.create_queue("q1")
        assert client.list_queues() == ["q1"]
    finally:
        client.close()
        server.stop()
