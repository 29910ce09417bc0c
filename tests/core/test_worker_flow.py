"""`rsmq worker` and a queue's flow flag (queues/ops/flow.py): a pause holds it within one
poll, a resume lets it go on within one poll, a throttle paces it; it says in the live
worker registry that it honours them."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.workers.harness import Records, WorkerProcess, wait_for

from queues import RedisSMQ

POLL = 1.0

Start = Callable[..., WorkerProcess]


@pytest.fixture
def records(rsmq: RedisSMQ) -> Records:
    return Records(rsmq)


@pytest.fixture
def start(redis_url: str, ns: str, tmp_path: Path) -> Iterator[Start]:
    started: list[WorkerProcess] = []

    def start_worker(queues: str, **settings: Any) -> WorkerProcess:
        env = {"WORKER_QUEUES": queues, "WORKER_POLL": str(POLL)}
        env |= {f"WORKER_{k.upper()}": str(v) for k, v in settings.items()}
        worker = WorkerProcess(tmp_path / f"w{len(started)}.log", url=redis_url, ns=ns, env=env)
        started.append(worker)
        return worker

    yield start_worker
    for worker in started:
        worker.stop()


def test_a_paused_queue_gives_the_worker_nothing_from_its_next_poll_on(
    rsmq: RedisSMQ, records: Records, start: Start, redis_url: str, ns: str
) -> None:
    rsmq.create_queue("jobs")
    worker = start("jobs:batch=1")
    worker.wait_started()
    # a steady stream: each message takes 0.1 s, one at a time
    rsmq.send_messages("jobs", [json.dumps({"sleep": 0.1})] * 100)
    records.wait(3)
    rsmq.pause_queue("jobs", reason="deploy")
    paused = time.time()
    time.sleep(POLL + 0.5)
    late = [e for e in records.fetch() if e["start"] > paused + 0.05]
    assert late == []
    received = rsmq.get_queue_attributes("jobs").totalrecv
    # realtime sends announce new messages: the paused worker is not woken for them
    with RedisSMQ(url=redis_url, ns=ns, realtime=True) as loud:
        loud.send_message("jobs", json.dumps({}))
    time.sleep(POLL + 0.2)
    assert rsmq.get_queue_attributes("jobs").totalrecv == received
    flow = rsmq.queue_flow("jobs")
    assert flow is not None and flow.held >= 1 and flow.bypassed == 0
    assert "queue paused" in worker.output()

    rsmq.resume_queue("jobs")
    resumed = time.time()
    n = len(records.ends())
    after = records.wait(n + 1)[n]
    assert after["start"] - resumed < POLL + 0.3  # within one poll


def test_a_worker_registers_that_it_honours_the_flag(rsmq: RedisSMQ, start: Start) -> None:
    rsmq.create_queue("jobs")
    start("jobs").wait_started()
    (info,) = wait_for(lambda: rsmq.live_workers("jobs"), 5, "the worker's registration")
    assert info.flow is True


def test_a_throttled_worker_handles_about_its_rate(
    rsmq: RedisSMQ, records: Records, start: Start
) -> None:
    rsmq.create_queue("jobs")
    rsmq.send_messages("jobs", [json.dumps({})] * 200)
    rsmq.throttle_queue("jobs", 10)
    worker = start("jobs:concurrency=4:batch=10")
    worker.wait_started()
    first = records.wait(1)[0]["start"]
    time.sleep(3)
    ends = [e for e in records.ends() if e["start"] <= first + 3]
    # a full bucket (10) at once, then 10 a second
    assert 36 <= len(ends) <= 44
    assert "queue throttled" in worker.output()
