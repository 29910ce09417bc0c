"""AsyncRedisSMQ: the RedisSMQ API awaited on redis.asyncio, over the same ops and scripts.

pytest-asyncio is not installed: each test runs its coroutine with ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
import redis
import redis.asyncio as aioredis
from support.counting import CountingConnection

from queues import (
    AsyncRedisSMQ,
    DeadLetterPolicy,
    InvalidArgument,
    Message,
    MessageNotString,
    MessageTooLong,
    NoAttributeSupplied,
    QueueExists,
    QueueNotFound,
    RedisSMQ,
)

T = TypeVar("T")
Run = Callable[[Callable[[AsyncRedisSMQ], Awaitable[T]]], T]


def public_methods(cls: type) -> dict[str, Any]:
    return {
        name: getattr(cls, name)
        for name in dir(cls)
        if not name.startswith("_") and callable(getattr(cls, name))
    }


@pytest.fixture
def arun(redis_url: str, ns: str) -> Run:
    """``arun(fn)``: ``await fn(client)`` with an AsyncRedisSMQ on this test's namespace."""

    def run(fn: Callable[[AsyncRedisSMQ], Awaitable[T]], **options: Any) -> T:
        async def main() -> T:
            async with AsyncRedisSMQ(url=redis_url, ns=ns, **options) as client:
                return await fn(client)

        return asyncio.run(main())

    return run


# -- the same API ---------------------------------------------------------------------


def test_every_public_method_of_redis_smq_is_on_async_redis_smq_with_the_same_signature():
    sync, aio = public_methods(RedisSMQ), public_methods(AsyncRedisSMQ)

    assert sorted(aio) == sorted(sync)
    for name, method in sync.items():
        assert inspect.signature(aio[name]) == inspect.signature(method), name


def test_the_constructors_take_the_same_connection_arguments():
    sync = inspect.signature(RedisSMQ.__init__).parameters
    aio = inspect.signature(AsyncRedisSMQ.__init__).parameters

    assert list(aio) == list(sync)


def test_every_operation_returns_an_awaitable_and_does_nothing_until_awaited(
    arun: Run, rsmq: RedisSMQ
):
    async def fn(a: AsyncRedisSMQ) -> None:
        pending = a.create_queue("q1")
        assert inspect.isawaitable(pending)
        assert rsmq.list_queues() == []
        await pending
        assert rsmq.list_queues() == ["q1"]

    arun(fn)


# -- end to end -----------------------------------------------------------------------


def test_queues_are_created_listed_described_changed_and_deleted(arun: Run):
    async def fn(a: AsyncRedisSMQ) -> None:
        await a.create_queue("q1", vt=40, delay=2, maxsize=2048)
        await a.create_queue("q2")
        assert await a.list_queues() == ["q1", "q2"]
        attrs = await a.get_queue_attributes("q1")
        assert (attrs.vt, attrs.delay, attrs.maxsize, attrs.msgs) == (40, 2, 2048, 0)
        changed = await a.set_queue_attributes("q1", vt=10, maxsize=-1)
        assert (changed.vt, changed.delay, changed.maxsize) == (10, 2, -1)
        await a.delete_queue("q2")
        assert await a.list_queues() == ["q1"]

    arun(fn)


def test_a_message_is_sent_received_hidden_browsed_and_deleted(arun: Run, queue: str):
    async def fn(a: AsyncRedisSMQ) -> None:
        mid = await a.send_message(queue, "hello")
        msg = await a.receive_message(queue, vt=60)
        assert isinstance(msg, Message)
        assert (msg.id, msg.message, msg.rc) == (mid, "hello", 1)
        assert await a.receive_message(queue) is None
        info = await a.get_message(queue, mid)
        assert info is not None and (info.state, info.rc, info.fr) == ("inflight", 1, msg.fr)
        assert await a.change_message_visibility(queue, mid, 0) is True
        again = await a.receive_message(queue)
        assert again is not None and again.rc == 2
        assert await a.delete_message(queue, mid) is True
        assert await a.delete_message(queue, mid) is False
        assert await a.get_message(queue, mid) is None

    arun(fn)


def test_pop_receives_and_deletes_in_one_step(arun: Run, queue: str):
    async def fn(a: AsyncRedisSMQ) -> None:
        mid = await a.send_message(queue, "x")
        popped = await a.pop_message(queue)
        assert popped is not None and (popped.id, popped.rc) == (mid, 1)
        assert await a.pop_message(queue) is None
        assert (await a.get_queue_attributes(queue)).msgs == 0

    arun(fn)


def test_batches_send_receive_pop_and_delete_many_in_fifo_order(arun: Run, queue: str):
    async def fn(a: AsyncRedisSMQ) -> None:
        ids = await a.send_messages(queue, [f"m{i}" for i in range(500)])
        got = await a.receive_messages(queue, 200, vt=60)
        assert [m.id for m in got] == ids[:200]
        assert await a.delete_messages(queue, [m.id for m in got]) == 200
        popped = await a.pop_messages(queue, 300)
        assert [m.message for m in popped] == [f"m{i}" for i in range(200, 500)]
        assert (await a.get_queue_attributes(queue)).msgs == 0

    arun(fn)


def test_a_batch_with_one_invalid_message_writes_nothing(arun: Run, queue: str, ns_state):
    before = ns_state()

    async def fn(a: AsyncRedisSMQ) -> None:
        with pytest.raises(MessageNotString):
            await a.send_messages(queue, ["ok", 42, "ok"])  # type: ignore[list-item]

    arun(fn)
    assert ns_state() == before


def test_browse_search_requeue_move_and_purge(arun: Run, queue: str):
    async def fn(a: AsyncRedisSMQ) -> None:
        await a.create_queue("other")
        ids = await a.send_messages(queue, ["apple", "banana", "cherry", "date"])
        await a.receive_messages(queue, 2, vt=100)
        await a.send_message(queue, "later", delay=100)
        assert (await a.list_messages(queue, state="inflight")).total == 2
        assert (await a.list_messages(queue, state="delayed")).total == 1
        visible = await a.list_messages(queue, state="visible")
        assert [m.id for m in visible.items] == ids[2:]
        found = await a.browse(queue, contains="an")
        assert [m.message for m in found.items] == ["banana"]
        assert await a.requeue(queue, [ids[0]]) == 1
        assert await a.requeue_state(queue, "delayed") == 1
        assert await a.move_messages(queue, "other", [ids[3]]) == 1
        assert await a.delete_state(queue, "inflight") == 1
        assert await a.purge_queue(queue) == 3  # id0, id2 and the delayed one
        assert [s.msgs for s in await a.queue_stats()] == [1, 0]

    arun(fn)


def test_concurrent_coroutines_on_one_client_never_receive_a_message_twice(arun: Run, queue: str):
    async def fn(a: AsyncRedisSMQ) -> None:
        ids = await asyncio.gather(*(a.send_message(queue, f"m{i}") for i in range(80)))
        got = await asyncio.gather(*(a.receive_message(queue, vt=60) for _ in range(100)))
        received = [m.id for m in got if m is not None]
        assert sorted(received) == sorted(ids)
        assert (await a.get_queue_attributes(queue)).totalrecv == 80

    arun(fn)


def test_more_concurrent_operations_than_pooled_connections_wait_for_a_connection(
    arun: Run, queue: str
):
    async def fn(a: AsyncRedisSMQ) -> None:
        ids = await asyncio.gather(*(a.send_message(queue, f"m{i}") for i in range(300)))
        assert len(set(ids)) == 300

    arun(fn)


def test_ping(arun: Run):
    async def fn(a: AsyncRedisSMQ) -> None:
        assert await a.ping() is True

    arun(fn)


def test_a_realtime_client_publishes_the_queue_size_on_send(arun: Run, queue: str):
    async def fn(a: AsyncRedisSMQ) -> list[str]:
        sub = a.redis.pubsub()
        await sub.subscribe(a.realtime_channel(queue))
        await sub.get_message(timeout=1)
        await a.send_messages(queue, ["a", "b"])
        await a.send_message(queue, "c")
        got = []
        while len(got) < 2 and (m := await sub.get_message(timeout=1)) is not None:
            if m["type"] == "message":
                got.append(m["data"].decode())
        await sub.aclose()
        return got

    assert arun(fn, realtime=True) == ["2", "3"]


# -- NOSCRIPT, errors ------------------------------------------------------------------


def test_script_flush_is_survived_by_a_script_call_and_a_pipelined_batch(
    arun: Run, queue: str, r: redis.Redis
):
    async def fn(a: AsyncRedisSMQ) -> None:
        mid = await a.send_message(queue, "x")
        r.script_flush()
        msg = await a.receive_message(queue)
        assert msg is not None and msg.id == mid
        r.script_flush()
        (stats,) = await a.queue_stats([queue])
        assert (stats.msgs, stats.inflight) == (1, 1)

    arun(fn)


@pytest.mark.parametrize(
    ("call", "error", "attribute"),
    [
        (lambda a: a.get_queue_attributes("nope"), QueueNotFound, ("qname", "nope")),
        (lambda a: a.send_message("nope", "x"), QueueNotFound, ("qname", "nope")),
        (lambda a: a.receive_messages("nope", 5), QueueNotFound, ("qname", "nope")),
        (lambda a: a.move_messages("q1", "nope"), QueueNotFound, ("qname", "nope")),
        (lambda a: a.create_queue("q1"), QueueExists, ("qname", "q1")),
        (lambda a: a.create_queue("bad name"), InvalidArgument, ("field", "qname")),
        (lambda a: a.receive_message("q1", vt=-1), InvalidArgument, ("field", "vt")),
        (lambda a: a.delete_message("q1", "short"), InvalidArgument, ("field", "id")),
        (lambda a: a.receive_messages("q1", 1001), InvalidArgument, ("field", "n")),
        (lambda a: a.send_message("q1", "x" * 70_000), MessageTooLong, ("size", 70_000)),
        (lambda a: a.set_queue_attributes("q1"), NoAttributeSupplied, None),
    ],
)
def test_errors_are_the_rsmq_errors_of_the_sync_client(
    arun: Run, queue: str, call: Callable, error: type, attribute: tuple[str, Any] | None
):
    async def fn(a: AsyncRedisSMQ) -> None:
        with pytest.raises(error) as caught:
            await call(a)
        if attribute:
            assert getattr(caught.value, attribute[0]) == attribute[1]

    arun(fn)


# -- one pipeline for many queues ------------------------------------------------------


def test_queue_stats_of_450_queues_is_one_pipelined_round_trip_of_three_scripts(
    redis_url: str, ns: str, rsmq: RedisSMQ, r: redis.Redis
):
    names = [f"q{i:03d}" for i in range(450)]
    for name in names:
        rsmq.create_queue(name)
    rsmq.send_messages("q123", ["a", "b"])

    async def main() -> tuple[int, int, list[Any]]:
        pool = aioredis.ConnectionPool.from_url(redis_url, connection_class=CountingConnection)
        async with AsyncRedisSMQ(client=aioredis.Redis(connection_pool=pool), ns=ns) as a:
            await a.queue_stats(["q000"])  # connected, scripts loaded
            CountingConnection.writes = 0
            before = r.info("commandstats")["cmdstat_evalsha"]["calls"]
            stats = await a.queue_stats(names)
            after = r.info("commandstats")["cmdstat_evalsha"]["calls"]
            return CountingConnection.writes, after - before, stats

    writes, scripts, stats = asyncio.run(main())

    assert (writes, scripts) == (1, 3)
    assert [s.qname for s in stats] == names
    assert {s.qname: s.msgs for s in stats if s.msgs} == {"q123": 2}


# -- dead-letter policy, redrive, send_at ---------------------------------------------


def test_dead_letter_policy_and_redrive(arun: Run, queue: str):
    async def fn(a: AsyncRedisSMQ) -> None:
        await a.create_queue("dlq")
        await a.set_dead_letter_policy(queue, "dlq", 1)
        assert await a.get_dead_letter_policy(queue) == DeadLetterPolicy("dlq", 1, 0)
        mid = await a.send_message(queue, "poison")
        assert (await a.receive_message(queue, vt=0)).rc == 1
        assert await a.receive_message(queue) is None
        assert [m.id for m in (await a.list_messages("dlq")).items] == [mid]
        assert (await a.get_dead_letter_policy(queue)).deadlettered == 1
        assert await a.redrive("dlq") == 1
        back = await a.receive_message(queue)
        assert back is not None and (back.id, back.rc) == (mid, 1)
        await a.clear_dead_letter_policy(queue)
        assert await a.get_dead_letter_policy(queue) is None

    arun(fn)


def test_send_at_is_visible_at_the_given_time(arun: Run, queue: str, r: redis.Redis):
    sec, usec = r.time()
    when = sec + usec / 1e6 + 100

    async def fn(a: AsyncRedisSMQ) -> None:
        mid = await a.send_at(queue, "later", when)
        info = await a.get_message(queue, mid)
        assert info is not None
        assert (info.state, info.visible_at) == ("delayed", math.ceil(when * 1000))
        with pytest.raises(InvalidArgument) as caught:
            await a.send_at(queue, "x", -1)
        assert caught.value.field == "when"

    arun(fn)


# -- sync and async on one queue -------------------------------------------------------


def test_sync_and_async_clients_share_one_queue(arun: Run, rsmq: RedisSMQ, queue: str):
    sync_ids = rsmq.send_messages(queue, ["s1", "s2"])

    async def fn(a: AsyncRedisSMQ) -> list[str]:
        got = await a.receive_messages(queue, 2, vt=60)
        assert [m.id for m in got] == sync_ids
        return await a.send_messages(queue, ["a1", "a2"])

    async_ids = arun(fn)
    got = rsmq.receive_messages(queue, 5, vt=60)
    assert [m.id for m in got] == async_ids
    assert rsmq.delete_messages(queue, sync_ids) == 2

    async def counters(a: AsyncRedisSMQ) -> tuple[int, ...]:
        assert await a.delete_messages(queue, async_ids) == 2
        attrs = await a.get_queue_attributes(queue)
        return attrs.totalsent, attrs.totalrecv, attrs.msgs

    assert arun(counters) == (4, 4, 0)
    assert rsmq.get_queue_attributes(queue).totalrecv == 4
