"""The live-worker registry (queues/ops/workers.py): each `rsmq worker` process registers
itself (host, pid, queues and their concurrency, started, last heartbeat) outside the RSMQ
layout, renews it with its heartbeat, removes it when it stops; a worker killed drops off
after its ttl. Real worker processes on the test Redis."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest
import redis
from support.workers.harness import WorkerProcess, wait_for

from queues import RedisSMQ
from queues.errors import InvalidArgument


def test_a_registration_reads_back_and_expires_after_its_ttl(
    rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    rsmq.register_worker("h:1:5", "h", 1, {"emails": 8, "orders": 1}, 5, ttl=0.4)
    rsmq.register_worker("h:2:6", "h", 2, {"orders": 2}, 6, ttl=30)
    everyone = rsmq.live_workers()
    assert {w.id for w in everyone} == {"h:1:5", "h:2:6"}
    emails = rsmq.live_workers("emails")
    assert [(w.host, w.pid, w.queues, w.started, w.concurrency) for w in emails] == [
        ("h", 1, {"emails": 8, "orders": 1}, 5, 9)
    ]
    assert emails[0].beat > 0
    # Outside the RSMQ layout: no queue appears, every key carries '@' and a ttl.
    assert rsmq.list_queues() == []
    keys = r.keys(f"{ns}:@*")
    assert keys and all(0 < r.pttl(k) <= 30_000 for k in keys)
    time.sleep(0.5)
    assert [w.id for w in rsmq.live_workers()] == ["h:2:6"]
    assert not r.exists(f"{ns}:@worker:h:1:5")
    rsmq.register_worker("h:2:6", "h", 2, {"orders": 2}, 6, ttl=0)  # it stops
    assert rsmq.live_workers() == [] and not r.keys(f"{ns}:@*")


def test_a_corrupt_record_is_skipped_not_fatal(rsmq: RedisSMQ, r: redis.Redis, ns: str) -> None:
    rsmq.register_worker("a", "h", 1, {"q": 1}, 5, ttl=30)
    rsmq.register_worker("b", "h", 2, {"q": 1}, 5, ttl=30)
    r.hset(f"{ns}:@worker:a", "pid", "not a number")
    assert [w.id for w in rsmq.live_workers()] == ["b"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"worker_id": ""}, "worker_id"),
        ({"ttl": -1}, "ttl"),
        ({"queues": {"bad name": 1}}, "queues"),
    ],
)
def test_bad_registrations_are_refused_naming_the_field(rsmq: RedisSMQ, kwargs, field) -> None:
    args = {"worker_id": "w", "host": "h", "pid": 1, "queues": {"q": 1}, "started": 1, "ttl": 5}
    with pytest.raises(InvalidArgument) as e:
        rsmq.register_worker(**(args | kwargs))
    assert e.value.field == field
    assert rsmq.live_workers() == []


def test_a_real_worker_is_listed_while_it_lives_and_drops_off(
    redis_url: str, ns: str, rsmq: RedisSMQ, tmp_path: Path
) -> None:
    rsmq.create_queue("jobs")
    env = {"WORKER_QUEUES": "jobs:noop=1:concurrency=3", "WORKER_REGISTRY_TTL": "1"}
    stopped = WorkerProcess(tmp_path / "a.log", url=redis_url, ns=ns, env=env)
    killed = WorkerProcess(tmp_path / "b.log", url=redis_url, ns=ns, env=env)
    try:
        stopped.wait_started()
        killed.wait_started()
        live = wait_for(lambda: len(rsmq.live_workers("jobs")) == 2 and rsmq.live_workers("jobs"),
                        10, "two registered workers")  # fmt: skip
        assert {(w.host, w.pid, w.queues["jobs"]) for w in live} == {
            (socket.gethostname(), stopped.pid, 3), (socket.gethostname(), killed.pid, 3)
        }  # fmt: skip
        time.sleep(1.5)  # past its ttl: the heartbeat renewed it
        assert len(rsmq.live_workers("jobs")) == 2
        stopped.stop()  # SIGTERM: it removes itself at once
        assert [w.pid for w in rsmq.live_workers("jobs")] == [killed.pid]
        os.kill(killed.pid, signal.SIGKILL)  # no word: it drops off after its ttl
        killed.wait(5)
        wait_for(lambda: rsmq.live_workers("jobs") == [], 3, "the killed worker to drop off")
    finally:
        stopped.stop()
        killed.stop()
