"""The core through a real Sentinel group: ``redis+sentinel://`` URLs reach the master
the sentinels name, and ``wait_replicas`` makes a send wait for its replica (WAIT)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
import redis
from support.redis_topologies import EXPECTED, SentinelGroup, every_operation

from queues import AsyncRedisSMQ, NotReplicated, RedisSMQ


@pytest.fixture
def sns() -> str:
    return "s" + uuid.uuid4().hex[:10]


def test_every_operation_works_through_sentinel(sentinel_group: SentinelGroup, sns: str) -> None:
    with RedisSMQ(url=sentinel_group.url(), ns=sns) as rsmq:
        got = every_operation(rsmq)
    assert got.pop("policy").dlq == "dlq"  # type: ignore[attr-defined]
    assert got == EXPECTED


def test_it_writes_to_the_master_in_the_urls_db(sentinel_group: SentinelGroup, sns: str) -> None:
    with RedisSMQ(url=sentinel_group.url(db=3), ns=sns) as rsmq:
        rsmq.create_queue("q")
    master = redis.Redis(port=sentinel_group.master_port(), db=3, decode_responses=True)
    assert master.smembers(f"{sns}:QUEUES") == {"q"}
    assert master.info("replication")["role"] == "master"
    master.close()


def test_the_async_client_works_through_sentinel(sentinel_group: SentinelGroup, sns: str) -> None:
    async def run() -> tuple[int, int]:
        async with AsyncRedisSMQ(url=sentinel_group.url(query="wait_replicas=1"), ns=sns) as a:
            await a.create_queue("q")
            await asyncio.gather(*(a.send_message("q", f"m{i}") for i in range(50)))
            got = await a.pop_messages("q", 50)
            return len(got), (await a.get_queue_attributes("q")).totalsent

    assert asyncio.run(run()) == (50, 50)


def test_with_wait_replicas_a_send_returns_once_the_replica_has_it(
    sentinel_group: SentinelGroup, sns: str
) -> None:
    with RedisSMQ(
        url=sentinel_group.url(query="wait_replicas=1&wait_timeout=2000"), ns=sns
    ) as rsmq:
        rsmq.create_queue("q")
        mid = rsmq.send_message("q", "safe")
    # Read on the replica right away: WAIT returned, so it is there already.
    replica_port = next(
        s.port for s in sentinel_group.servers if s.port != sentinel_group.master_port()
    )
    replica = redis.Redis(port=replica_port, decode_responses=True)
    assert replica.hget(f"{sns}:q:Q", mid) == "safe"
    replica.close()


def test_a_send_not_confirmed_by_enough_replicas_raises_not_replicated(
    sentinel_group: SentinelGroup, sns: str
) -> None:
    # One replica in the group: waiting for two can't succeed.
    with RedisSMQ(url=sentinel_group.url(), ns=sns, wait_replicas=2, wait_timeout=50) as rsmq:
        rsmq.create_queue("q")
        with pytest.raises(NotReplicated) as e:
            rsmq.send_message("q", "unsure")
        assert (e.value.acked, e.value.wanted) == (1, 2)
        assert "1 of 2 replicas" in str(e.value)
        # It is written on the master (WAIT doesn't undo): only not acknowledged.
        assert rsmq.get_queue_attributes("q").msgs == 1
        # Other operations don't wait.
        assert rsmq.receive_message("q") is not None


def test_a_password_in_the_url_is_the_masters(tmp_path: Path) -> None:
    with SentinelGroup(tmp_path, password="s3cret") as group:
        hosts = group.url().split("//", 1)[1]
        with RedisSMQ(url=f"redis+sentinel://:s3cret@{hosts}", ns="pw") as rsmq:
            rsmq.create_queue("q")
            assert rsmq.send_message("q", "hello")
        with RedisSMQ(url=group.url(), ns="pw") as no_password:
            with pytest.raises(redis.AuthenticationError):
                no_password.list_queues()
