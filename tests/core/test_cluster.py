"""The core on a real 3-master Redis Cluster: ``redis+cluster://`` URLs, namespaces
held by one slot through their hash tag, and the slot's node followed when it moves."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.crc import key_slot
from support.redis_topologies import EXPECTED, RedisClusterGroup, every_operation

from queues import AsyncRedisSMQ, InvalidArgument, RedisSMQ
from queues.cli import EXIT_ERROR, main


@pytest.fixture
def tag() -> str:
    return "t" + uuid.uuid4().hex[:10]


@pytest.fixture
def crsmq(redis_cluster: RedisClusterGroup, tag: str) -> Iterator[RedisSMQ]:
    client = RedisSMQ(url=redis_cluster.url, ns=f"{{{tag}}}:orders")
    yield client
    client.close()


def node_of(cluster: RedisClusterGroup, key: str) -> int:
    """The port of the master that holds ``key``'s slot."""
    rc = cluster.client()
    try:
        return int(rc.get_node_from_key(key).port)
    finally:
        rc.close()


def test_every_operation_works_on_a_cluster(crsmq: RedisSMQ) -> None:
    got = every_operation(crsmq)
    assert got.pop("policy").dlq == "dlq"  # type: ignore[attr-defined]
    assert got == EXPECTED


def test_a_namespaces_keys_all_live_on_its_slots_node(
    redis_cluster: RedisClusterGroup, crsmq: RedisSMQ, tag: str
) -> None:
    crsmq.create_queue("q1")
    crsmq.send_message("q1", "hello")
    port = node_of(redis_cluster, f"{{{tag}}}")
    on_node = redis.Redis(port=port, decode_responses=True)
    keys = on_node.keys(f"{{{tag}}}:*")
    on_node.close()
    assert sorted(keys) == [
        f"{{{tag}}}:orders:QUEUES",
        f"{{{tag}}}:orders:q1",
        f"{{{tag}}}:orders:q1:Q",
    ]


@pytest.mark.parametrize("ns", ["orders", "shop{:orders", "{}:orders", "orders}{"])
def test_a_namespace_without_a_hash_tag_is_refused(
    redis_cluster: RedisClusterGroup, ns: str
) -> None:
    with pytest.raises(InvalidArgument) as e:
        RedisSMQ(url=redis_cluster.url, ns=ns)
    assert e.value.field == "ns"  # type: ignore[attr-defined]
    assert str(e.value).count("\n") == 0
    assert "hash tag" in str(e.value) and "{shop}:" in str(e.value)
    with pytest.raises(InvalidArgument):
        AsyncRedisSMQ(url=redis_cluster.url, ns=ns)


def test_the_async_client_pipelines_on_the_slots_node(
    redis_cluster: RedisClusterGroup, tag: str
) -> None:
    async def run() -> tuple[int, int, int]:
        async with AsyncRedisSMQ(url=redis_cluster.url, ns=f"{{{tag}}}") as a:
            await a.create_queue("q")
            ids = await asyncio.gather(*(a.send_message("q", f"m{i}") for i in range(200)))
            got = await asyncio.gather(*(a.pop_message("q") for _ in range(200)))
            stats = await a.queue_stats()
            return len(set(ids)), sum(m is not None for m in got), stats[0].totalsent

    assert asyncio.run(run()) == (200, 200, 200)


def test_namespaces_on_different_shards_each_reach_their_own(
    redis_cluster: RedisClusterGroup,
) -> None:
    by_port: dict[int, str] = {}
    rc = redis_cluster.client()
    for i in range(100):
        tag = f"shard{i}-{uuid.uuid4().hex[:6]}"
        by_port.setdefault(int(rc.get_node_from_key(f"{{{tag}}}").port), tag)
    rc.close()
    assert len(by_port) == 3  # one namespace on each master
    clients = [RedisSMQ(url=redis_cluster.url, ns=f"{{{t}}}") for t in by_port.values()]
    for i, c in enumerate(clients):
        c.create_queue("q")
        c.send_messages("q", ["x"] * (i + 1))
    assert [c.queue_stats()[0].msgs for c in clients] == [1, 2, 3]
    for c in clients:
        c.close()


def move_slot(cluster: RedisClusterGroup, slot: int, src: int, dst: int) -> None:
    """Reshard one slot, as redis-cli --cluster reshard does: IMPORTING / MIGRATING,
    MIGRATE its keys, then give it to ``dst`` on every master."""
    a, b = redis.Redis(port=src), redis.Redis(port=dst)
    a_id, b_id = a.execute_command("CLUSTER", "MYID"), b.execute_command("CLUSTER", "MYID")
    b.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", a_id)
    a.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", b_id)
    keys = a.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 1000)
    if keys:
        a.execute_command("MIGRATE", "127.0.0.1", dst, "", 0, 5000, "KEYS", *keys)
    for node in cluster.nodes:
        c = redis.Redis(port=node.port)
        c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", b_id)
        c.close()
    a.close()
    b.close()


def test_a_slot_moved_to_another_node_is_followed(
    redis_cluster: RedisClusterGroup, crsmq: RedisSMQ, tag: str
) -> None:
    crsmq.create_queue("q1")
    sent = crsmq.send_message("q1", "before")
    src = node_of(redis_cluster, f"{{{tag}}}")
    dst = next(n.port for n in redis_cluster.nodes if n.port != src)
    move_slot(redis_cluster, key_slot(tag.encode()), src, dst)
    # The client's connection is still to the old node: MOVED, then the new one.
    msg = crsmq.receive_message("q1")
    assert msg is not None and msg.id == sent
    crsmq.send_message("q1", "after")
    assert crsmq.get_queue_attributes("q1").totalsent == 2
    assert node_of(redis_cluster, f"{{{tag}}}") == dst


def test_a_node_that_lost_its_scripts_gets_them_again(
    redis_cluster: RedisClusterGroup, crsmq: RedisSMQ, tag: str
) -> None:
    crsmq.create_queue("q1")
    node = redis.Redis(port=node_of(redis_cluster, f"{{{tag}}}"))
    node.script_flush()
    node.close()
    # NOSCRIPT: the scripts are loaded on the slot's node, and the send runs once.
    crsmq.send_message("q1", "after a flush")
    assert crsmq.get_queue_attributes("q1").totalsent == 1


def test_the_async_client_follows_a_moved_slot(redis_cluster: RedisClusterGroup, tag: str) -> None:
    async def run() -> tuple[int, int]:
        async with AsyncRedisSMQ(url=redis_cluster.url, ns=f"{{{tag}}}") as a:
            await a.create_queue("q")
            await a.send_message("q", "before")
            src = node_of(redis_cluster, f"{{{tag}}}")
            dst = next(n.port for n in redis_cluster.nodes if n.port != src)
            move_slot(redis_cluster, key_slot(tag.encode()), src, dst)
            await asyncio.gather(*(a.send_message("q", "after") for _ in range(10)))
            return (await a.get_queue_attributes("q")).msgs, node_of(
                redis_cluster, f"{{{tag}}}"
            ) - dst

    assert asyncio.run(run()) == (11, 0)


def test_realtime_sends_reach_a_subscriber_of_the_namespaces_node(
    redis_cluster: RedisClusterGroup, tag: str
) -> None:
    with RedisSMQ(url=redis_cluster.url, ns=f"{{{tag}}}", realtime=True) as rt:
        rt.create_queue("q1")
        pubsub = rt.redis.pubsub()  # as the worker listens: on the slot's node
        pubsub.subscribe(rt.realtime_channel("q1"))
        assert pubsub.get_message(timeout=2)["type"] == "subscribe"  # type: ignore[index]
        rt.send_messages("q1", ["a", "b"])
        got = pubsub.get_message(timeout=2)
        pubsub.close()
    assert got is not None and got["data"] == b"2"


def test_the_cli_works_on_a_cluster_and_says_why_a_namespace_is_refused(
    redis_cluster: RedisClusterGroup, tag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--url", redis_cluster.url, "--ns"]
    assert main([*base, f"{{{tag}}}", "queue", "create", "-n", "jobs"]) == 0
    assert main([*base, f"{{{tag}}}", "message", "send", "-n", "jobs", "-m", "hi"]) == 0
    assert main([*base, f"{{{tag}}}", "queue", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert json.loads(out[-1]) == ["jobs"]
    assert main([*base, "orders", "queue", "list"]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert err.startswith("rsmq: error: namespace 'orders' has no hash tag")
    assert err.count("\n") == 1


def test_a_password_in_the_url_is_every_nodes(tmp_path: Path) -> None:
    with RedisClusterGroup(tmp_path, password="s3cret") as cluster:
        with RedisSMQ(url=cluster.url, ns="{pw}") as rsmq:
            rsmq.create_queue("q")
            rsmq.send_message("q", "hello")
            assert rsmq.queue_stats()[0].msgs == 1
        hosts = cluster.url.split("@", 1)[1]
        with RedisSMQ(url=f"redis+cluster://{hosts}", ns="{pw}") as no_password:
            with pytest.raises(redis.RedisError):
                no_password.list_queues()
