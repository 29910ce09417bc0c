"""Failover through a real Sentinel group while a producer sends and a worker consumes:
SENTINEL FAILOVER and kill -9 of the master. The producer sends with ``WAIT 1``
(``wait_replicas=1``), so a send it was told succeeded is on the replica too; the test
reports acknowledged vs received and finds none of the acknowledged lost."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from support.redis_topologies import SentinelGroup, wait_for

from queues import AsyncRedisSMQ, RedisSMQ, RsmqError
from queues.cli import main
from queues.worker import Worker

pytestmark = pytest.mark.slow

DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 3000
#: s from the failover's start to the clients' sends reaching the new master: the
#: Sentinel's own timeouts, and a margin for a 2-core machine shared with the suite (a
#: client that stayed on the old master until the sentinels demote it takes 10 s more)
FOLLOWED_WITHIN = (DOWN_AFTER_MS + FAILOVER_TIMEOUT_MS) / 1000 + 3


@pytest.fixture
def group(tmp_path: Path) -> Iterator[SentinelGroup]:
    with SentinelGroup(tmp_path, DOWN_AFTER_MS, FAILOVER_TIMEOUT_MS) as g:
        yield g


class Producer(threading.Thread):
    """Sends m0, m1, … as fast as it is answered; remembers which were acknowledged."""

    def __init__(self, url: str, ns: str) -> None:
        super().__init__(daemon=True)
        self.rsmq = RedisSMQ(url=url, ns=ns, wait_replicas=1, wait_timeout=500)
        self.acked: dict[str, float] = {}  # body -> when it was acknowledged
        self.failed = 0
        self.done = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.done.is_set():
            body = f"m{i}"
            i += 1
            try:
                self.rsmq.send_message("jobs", body)
                self.acked[body] = time.monotonic()
            except (redis.RedisError, RsmqError):
                self.failed += 1  # not acknowledged (NotReplicated, Redis unreachable)
                time.sleep(0.05)
        self.rsmq.close()

    def acked_after(self, t: float) -> int:
        return sum(1 for at in list(self.acked.values()) if at > t)


@pytest.mark.parametrize("how", ["sentinel-failover", "kill-9"])
def test_a_failover_loses_no_acknowledged_send(
    group: SentinelGroup, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = "f" + uuid.uuid4().hex[:8]
    with RedisSMQ(url=group.url(), ns=ns) as setup:
        setup.create_queue("jobs")
    received: set[str] = set()
    worker = Worker(url=group.url(), ns=ns, poll_interval=0.05, realtime=False, grace=1)

    @worker.handler("jobs", concurrency=2, vt=5)
    def handle(msg: object) -> None:
        received.add(msg.message)  # type: ignore[attr-defined]

    consumer = threading.Thread(target=worker.run, daemon=True)
    consumer.start()
    producer = Producer(group.url(), ns)
    producer.start()
    wait_for("traffic flowing", lambda: len(producer.acked) >= 20 and received)

    old = group.master_port()
    started = time.monotonic()
    if how == "sentinel-failover":
        group.failover()
    else:
        killed = group.kill_master()
    new = group.wait_for_new_master(old)
    promoted = time.monotonic() - started
    on_new = redis.Redis(port=new, decode_responses=True)
    base = int(on_new.hget(f"{ns}:jobs:Q", "totalsent") or 0)
    if how == "kill-9":
        killed.start()  # back as a replica of the new master (the sentinels make it one)
    # Followed: the producer's sends land on the new master...
    wait_for(
        "sends on the new master",
        lambda: int(on_new.hget(f"{ns}:jobs:Q", "totalsent") or 0) > base,
        30,
    )
    followed = time.monotonic() - started
    # ... and are acknowledged again once it has a replica to WAIT for.
    wait_for("sends acknowledged again", lambda: producer.acked_after(started + promoted) >= 20, 30)
    reacked = min(at for at in producer.acked.values() if at > started + promoted) - started
    producer.done.set()
    producer.join(10)
    acked = set(producer.acked)
    wait_for("every acknowledged send received", lambda: acked <= received, 30)
    worker.stop()
    consumer.join(10)

    # The CLI, started now with the same URL, reaches the new master.
    assert (
        main(["--url", group.url(), "--ns", ns, "message", "send", "-n", "jobs", "-m", "cli"]) == 0
    )
    assert json.loads(capsys.readouterr().out.strip())
    assert "cli" in on_new.hvals(f"{ns}:jobs:Q")
    on_new.close()

    lost = acked - received
    with capsys.disabled():
        print(
            f"\n{how}: master {old} -> {new}, promoted in {promoted:.1f} s; the producer's "
            f"sends reached it {followed:.1f} s after the failover began, and were "
            f"acknowledged again (WAIT 1: a replica back) {reacked:.1f} s after; "
            f"sends acknowledged {len(acked)}, "
            f"not acknowledged {producer.failed}, received {len(received & acked)} of the "
            f"acknowledged (+{len(received - acked)} unacknowledged that landed), lost {len(lost)}"
        )
    assert lost == set()
    assert followed < FOLLOWED_WITHIN


def test_the_async_client_follows_a_sentinel_failover(group: SentinelGroup) -> None:
    ns = "a" + uuid.uuid4().hex[:8]

    async def run() -> float:
        async with AsyncRedisSMQ(url=group.url(), ns=ns) as a:
            await a.create_queue("q")
            await a.send_message("q", "before")
            old = group.master_port()
            started = time.monotonic()
            group.failover()
            on_new = redis.Redis(port=group.wait_for_new_master(old))

            def sent_on_new() -> int:
                return int(on_new.hget(f"{ns}:q:Q", "totalsent") or 0)

            base = sent_on_new()
            # The same client, connected to the old master, keeps sending.
            while sent_on_new() <= base:
                with contextlib.suppress(redis.RedisError):
                    await a.send_message("q", "after")
                assert time.monotonic() - started < 20, "the async client stayed on the old master"
                await asyncio.sleep(0.05)
            on_new.close()
            return time.monotonic() - started

    took = asyncio.run(run())
    assert took < FOLLOWED_WITHIN
