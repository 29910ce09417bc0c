"""The real thing: a Celery worker and a `celery beat` process against the test Redis
take a snapshot every second while messages come and go; the rows, the lake's Parquet
files and the rates computed from them tell what happened.

The worker runs in this process (celery.contrib.testing), so it writes to the test
database; beat is a separate process, as in production, talking to it through the broker.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from celery.contrib.testing.worker import start_worker
from django.db import OperationalError

from dashboard.celery import app
from dashboard.models import Snapshot
from dashboard.snapshots.rates import Counters, Interval, intervals, merge
from queues import RedisSMQ

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def worker(lake: Path, broker_url: str) -> Iterator[None]:
    before = app.conf.broker_url
    app.conf.broker_url = broker_url
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            yield
    finally:
        app.conf.broker_url = before


@pytest.fixture
def beat(worker, broker_url: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "CELERY_BROKER_URL": broker_url,
        "RSMQ_SNAPSHOT_INTERVAL": "1",
        "RSMQ_DATA_DIR": str(tmp_path),
    }
    log = (tmp_path / "beat.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "--app", "dashboard.beat", "beat", "--loglevel", "INFO",
         "--schedule", str(tmp_path / "beat-schedule")],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    yield process
    process.terminate()
    process.wait(timeout=10)
    log.close()


def _snapshots(queue: str) -> list[Snapshot]:
    # The test database is SQLite in memory, shared with the worker's thread through
    # SQLite's shared cache, where a read that meets the worker's write fails at once
    # ("database table is locked") instead of waiting for it: read again.
    for _ in range(100):
        try:
            return list(Snapshot.objects.filter(queue=queue).order_by("taken_at"))
        except OperationalError as e:
            if "locked" not in str(e):
                raise
            time.sleep(0.02)
    raise AssertionError("the snapshot table stayed locked for 2 s")


def snapshot_after(queue: str, after: int, timeout: float = 15) -> Snapshot:
    """Wait for the worker to store a row of the queue read after ``after`` (Redis TIME,
    epoch ms): one that sees everything done before then."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = _snapshots(queue)
        if rows and rows[-1].taken_at > after:
            return rows[-1]
        time.sleep(0.05)
    raise AssertionError(f"no snapshot of {queue} within {timeout} s")


def test_beat_and_a_worker_snapshot_the_queues_every_interval(
    console, beat, lake: Path, rsmq: RedisSMQ, redis_now
) -> None:
    rsmq.create_queue("jobs")
    first = snapshot_after("jobs", redis_now(), timeout=30)  # beat and the worker are up
    rsmq.send_messages("jobs", [f"job {i}" for i in range(30)])
    after_send = snapshot_after("jobs", redis_now())
    received = rsmq.receive_messages("jobs", 12, vt=600)
    after_receive = snapshot_after("jobs", redis_now())
    rsmq.delete_messages("jobs", [m.id for m in received])
    rsmq.delete_queue("jobs")  # and recreated: its counters start again
    rsmq.create_queue("jobs")
    rsmq.send_messages("jobs", ["a", "b", "c"])
    rsmq.receive_message("jobs", vt=600)
    recreated = snapshot_after("jobs", redis_now())
    last = snapshot_after("jobs", recreated.taken_at)
    beat.terminate()

    # The rows: the counters as they were at each snapshot.
    assert (first.msgs, first.totalsent, first.totalrecv) == (0, 0, 0)
    assert (after_send.msgs, after_send.totalsent, after_send.totalrecv) == (30, 30, 0)
    assert (after_receive.visible, after_receive.inflight) == (18, 12)
    assert (after_receive.totalsent, after_receive.totalrecv) == (30, 12)
    assert (recreated.msgs, recreated.inflight, recreated.totalsent) == (3, 1, 3)
    assert (last.totalsent, last.totalrecv) == (3, 1)

    # About one a second (beat's clock, the worker's pace), each at a later Redis TIME.
    # Up to the last one waited for: a task already queued may still add one.
    rows = [r for r in _snapshots("jobs") if r.taken_at <= last.taken_at]
    gaps = [b.taken_at - a.taken_at for a, b in zip(rows, rows[1:], strict=False)]
    assert all(g > 0 for g in gaps)
    assert 700 <= sorted(gaps)[len(gaps) // 2] <= 1500, gaps

    # The lake holds the same rows.
    table = pq.read_table(lake).filter(
        (pc.field("queue") == "jobs") & (pc.field("taken_at") <= last.taken)
    )
    table = table.sort_by("taken_at")
    columns = ("taken_at", "msgs", "inflight", "totalsent", "totalrecv", "created")
    in_lake = list(zip(*(table.column(c).to_pylist() for c in columns), strict=True))
    assert in_lake == [(r.taken, *(getattr(r, c) for c in columns[1:])) for r in rows]

    # The rates: each interval's messages over its real time, the recreated queue's
    # counters counted from 0.
    parts = intervals(Counters(r.taken_at, r.totalsent, r.totalrecv, r.created) for r in rows)

    def between(a: Snapshot, b: Snapshot) -> Interval:
        return merge([p for p in parts if a.taken_at < p.end <= b.taken_at])

    sending = between(first, after_send)
    assert (sending.sent, sending.received) == (30, 0)
    seconds = (after_send.taken_at - first.taken_at) / 1000
    assert sending.send_rate == pytest.approx(30 / seconds)
    assert 0.5 < seconds < 3
    receiving = between(after_send, after_receive)
    assert (receiving.sent, receiving.received) == (0, 12)
    seconds = (after_receive.taken_at - after_send.taken_at) / 1000
    assert receiving.receive_rate == pytest.approx(12 / seconds)
    assert (between(after_receive, last).sent, between(after_receive, last).received) == (3, 1)
    assert all(p.sent >= 0 and p.received >= 0 for p in parts)
    assert merge(parts).sent == 33
