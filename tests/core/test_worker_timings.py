"""The worker's timing records: each message it deletes, with its wait (from its id and
fr) and its processing (first receive -> delete), in the queue's timings key; none with
``timings=False``; a retried message's processing counts from its first receive."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
import redis

from queues import Message, RedisSMQ
from queues.worker import Worker


@pytest.fixture
def running(rsmq: RedisSMQ) -> Iterator[Callable[..., Worker]]:
    rsmq.create_queue("jobs", vt=30)
    workers: list[tuple[Worker, threading.Thread]] = []

    def run(fn: Callable[[Message], None], timings: bool = True, **options: object) -> Worker:
        worker = Worker(rsmq, poll_interval=0.05, realtime=False, grace=1, timings=timings)
        worker.handler("jobs", **options)(fn)  # type: ignore[arg-type]
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        workers.append((worker, thread))
        return worker

    yield run
    for worker, thread in workers:
        worker.stop()
        thread.join(10)


def entries(r: redis.Redis, ns: str, n: int, timeout: float = 10) -> list[list[float]]:
    deadline = time.monotonic() + timeout
    key = f"{ns}:jobs:x:timings"
    while time.monotonic() < deadline:
        if r.llen(key) >= n:
            return [[float(x) for x in e.split()] for e in r.lrange(key, 0, -1)]
        time.sleep(0.02)
    raise AssertionError(f"{r.llen(key)} of {n} timing records")


def test_each_deleted_message_is_timed(rsmq: RedisSMQ, r: redis.Redis, ns: str, running) -> None:
    seen: dict[str, Message] = {}

    def work(msg: Message) -> None:
        seen[msg.id] = msg
        time.sleep(0.1)

    ids = [rsmq.send_message("jobs", f"m{i}") for i in range(5)]
    time.sleep(0.05)
    running(work, concurrency=5)
    got = entries(r, ns, 5)
    assert rsmq.get_queue_attributes("jobs").msgs == 0
    recorded = sorted((e[1], e[2]) for e in got)
    expected = sorted((m.fr, m.fr - int(m.id[:10], 36) / 1000) for m in seen.values())
    assert sorted(seen) == sorted(ids)
    assert [fr for fr, _ in recorded] == [fr for fr, _ in expected]
    assert [w for _, w in recorded] == pytest.approx([w for _, w in expected], abs=0.001)
    for recorded, fr, _wait, took in got:
        assert 100 <= took < 1000  # the handler's 0.1 s, then its delete
        assert fr + took - 50 <= recorded <= fr + took + 250  # the Redis clock of the delete


def test_a_retried_message_counts_from_its_first_receive(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, running
) -> None:
    attempts: list[Message] = []

    def flaky(msg: Message) -> None:
        attempts.append(msg)
        if msg.rc == 1:
            raise RuntimeError("first time fails")

    rsmq.send_message("jobs", "x")
    running(flaky, backoff=0.5)
    [entry] = entries(r, ns, 1)
    assert [m.rc for m in attempts] == [1, 2]
    assert entry[1] == attempts[0].fr
    assert entry[3] >= 1000  # the backoff (1 s, rounded up) lies between the receives


def test_with_timings_off_nothing_is_recorded(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, running
) -> None:
    done = threading.Event()
    running(lambda msg: done.set(), timings=False)
    rsmq.send_message("jobs", "x")
    assert done.wait(10)
    deadline = time.monotonic() + 5
    while rsmq.get_queue_attributes("jobs").msgs and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)  # the heartbeat would have recorded by now
    assert r.exists(f"{ns}:jobs:x:timings") == 0
