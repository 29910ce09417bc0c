"""The worker records why a handler failed, in the call that sets the message's backoff."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from queues import Failure, Message, RedisSMQ
from queues.worker import Worker


class PaymentDeclined(Exception):
    pass


def charge(msg: Message) -> None:
    raise PaymentDeclined(f"card of {msg.message} declined")


@pytest.fixture
def running(rsmq: RedisSMQ) -> Iterator[Callable[..., Worker]]:
    """``running(fn, **handler options)``: a worker on queue "jobs" in a thread."""
    rsmq.create_queue("jobs", vt=30)
    workers: list[tuple[Worker, threading.Thread]] = []

    def run(fn: Callable[[Message], None], **options: object) -> Worker:
        worker = Worker(rsmq, poll_interval=0.05, realtime=False, grace=1)
        worker.handler("jobs", **options)(fn)  # type: ignore[arg-type]
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        workers.append((worker, thread))
        return worker

    yield run
    for worker, thread in workers:
        worker.stop()
        thread.join(10)


def wait_for_failures(rsmq: RedisSMQ, mid: str, n: int = 1) -> list[Failure]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        got = rsmq.failures("jobs", mid)
        if len(got) >= n:
            return got
        time.sleep(0.02)
    raise AssertionError(f"{n} failure(s) of {mid} never recorded")


def test_a_handler_that_raises_records_the_failure(rsmq: RedisSMQ, running) -> None:
    mid = rsmq.send_message("jobs", "alice")
    running(charge, backoff=600)

    (f,) = wait_for_failures(rsmq, mid)

    assert f.type == f"{__name__}.PaymentDeclined"
    assert (f.message, f.attempt) == ("card of alice declined", 1)
    assert f.trace[0] == "Traceback (most recent call last):"
    assert any("in charge" in line for line in f.trace)
    assert f.trace[-1].endswith("PaymentDeclined: card of alice declined")
    info = rsmq.get_message("jobs", mid)
    assert (
        info is not None and info.visible_at - info.read_at > 200_000
    )  # its backoff (max_backoff 300 s)


def test_each_retry_adds_its_attempt(rsmq: RedisSMQ, running) -> None:
    mid = rsmq.send_message("jobs", "bob")
    running(charge, backoff=0)

    got = wait_for_failures(rsmq, mid, 3)

    newest = got[0].attempt
    assert newest >= 3 and [f.attempt for f in got] == list(range(newest, newest - len(got), -1))


def test_a_timed_out_handler_is_recorded_as_a_timeout(rsmq: RedisSMQ, running) -> None:
    mid = rsmq.send_message("jobs", "slow")
    done = threading.Event()
    running(lambda _: done.wait(5) and None, timeout=0.1, backoff=600)

    (f,) = wait_for_failures(rsmq, mid)
    done.set()

    assert (f.type, f.message) == (
        "queues.worker.HandlerTimeout",
        "handler still running after 0.1 s",
    )
