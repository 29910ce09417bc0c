"""Wait-time percentiles at each snapshot equal an independent computation: from the
messages' ids and ``fr`` (read raw from Redis with redis-py, or as a real worker's
handlers saw them) and the worker's own timings; in the first snapshot after the
messages were received (within one snapshot interval)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import redis
from support.workers.harness import Monitor, Records, WorkerProcess, wait_for

from dashboard.models import Snapshot
from dashboard.snapshots import runs
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ
from queues import scripts as S

pytestmark = pytest.mark.django_db


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The smallest value with at least a share ``q`` of the values at or under it."""
    return min(v for v in values if sum(1 for w in values if w <= v) >= q * len(values))


def quantiles(values: Sequence[float]) -> tuple[float, float, float]:
    return tuple(nearest_rank(values, q) for q in (0.5, 0.95, 0.99))  # type: ignore[return-value]


def sent_ms(mid: str) -> float:
    return int(mid[:10], 36) / 1000  # the id's base36 microseconds


def rows(queue: str) -> list[Snapshot]:
    return list(Snapshot.objects.filter(queue=queue).order_by("taken_at"))


def waits(row: Snapshot) -> tuple[float | None, ...]:
    return (row.wait_p50, row.wait_p95, row.wait_p99)


def processing(row: Snapshot) -> tuple[float | None, ...]:
    return (row.processing_p50, row.processing_p95, row.processing_p99)


@pytest.fixture
def worker(redis_url: str, ns: str, tmp_path: Path, rsmq: RedisSMQ) -> Iterator[WorkerProcess]:
    rsmq.create_queue("jobs")
    env = {"WORKER_QUEUES": "jobs:concurrency=8", "WORKER_RESULTS": "results"}
    w = WorkerProcess(tmp_path / "worker.log", "support.workers.app:worker", redis_url, ns, (), env)
    yield w
    w.stop()


def test_any_clients_receives_are_timed_from_the_raw_ids_and_fr(
    console, lake: Path, rsmq: RedisSMQ, r: redis.Redis, ns: str, redis_url: str
) -> None:
    rsmq.create_queue("other")
    rsmq.send_messages("other", [f"m{i}" for i in range(30)])
    rsmq.receive_messages("other", 2, vt=600)  # before the first snapshot
    take_snapshot()
    [first] = rows("other")
    # no snapshot before it: it times the interval before it (these two)
    assert first.wait_samples == 2
    for n in (3, 5, 7):  # received by some other client, never deleted
        time.sleep(0.05)
        rsmq.receive_messages("other", n, vt=600)
    take_snapshot()
    second = rows("other")[-1]
    # independently: every first receive after the first snapshot, from the raw hash
    raw = r.hgetall(f"{ns}:other:Q")
    expected = [
        (int(v) - sent_ms(f.removesuffix(":fr"))) / 1000
        for f, v in raw.items()
        if f.endswith(":fr") and int(v) > first.taken_at
    ]
    assert len(expected) == 15
    assert waits(second) == pytest.approx(quantiles(expected), abs=1e-9)
    assert (second.wait_samples, second.timings_sampled) == (15, False)
    assert processing(second) == (None, None, None)
    # and in the lake, for the pipeline
    table = pq.read_table(lake).to_pylist()
    stored = [t for t in table if t["queue"] == "other" and t["wait_p50"] is not None]
    assert [(t["wait_p50"], t["wait_p99"], t["wait_samples"]) for t in stored] == [
        (first.wait_p50, first.wait_p99, 2),
        (second.wait_p50, second.wait_p99, 15),
    ]
    # nothing received since: the next snapshot has no times to tell, and reads none
    with Monitor(redis_url) as monitor:
        take_snapshot()
    assert waits(rows("other")[-1]) == (None, None, None)
    assert monitor.calls(S.STATS.sha, f"{ns}:other") != []
    assert monitor.calls(S.WAIT_SCAN.sha, f"{ns}:other") == []


def test_a_real_workers_messages_are_timed_from_its_own_records(
    console, lake: Path, rsmq: RedisSMQ, r: redis.Redis, ns: str, worker: WorkerProcess,
    tmp_path: Path,
) -> None:  # fmt: skip
    records = Records(rsmq)
    worker.wait_started()
    take_snapshot()
    since = rows("jobs")[-1].taken_at
    hold = tmp_path / "release"
    for i in range(24):  # quick ones, deleted before the next snapshot
        rsmq.send_message("jobs", json.dumps({"sleep": [0.01, 0.05, 0.12, 0.2][i % 4]}))
    for _ in range(4):  # held: still in flight at the next snapshot
        rsmq.send_message("jobs", json.dumps({"wait_for": str(hold), "record_start": True}))
    ends = records.wait(24, event="end")
    starts = records.wait(4, event="start")
    # the worker records its timings within 0.2 s of a delete
    key = f"{ns}:jobs:x:timings"
    wait_for(lambda: r.llen(key) >= 24, 5, "the worker's 24 timing records")
    take_snapshot()
    second = rows("jobs")[-1]

    # Wait: from each message's id and fr, as the handlers got them (24 deleted, 4 held).
    expected = [(m["fr"] - sent_ms(m["id"])) / 1000 for m in ends + starts]
    assert all(m["fr"] > since for m in ends + starts)
    assert second.wait_samples == 28
    assert waits(second) == pytest.approx(quantiles(expected), abs=1e-6)

    # Processing: the worker's own timings (raw), and, independently, each handler's
    # end (this machine's clock) minus its first receive (Redis's): the delete follows
    # within the ack linger and one round trip.
    own = [float(e.split()[3]) / 1000 for e in r.lrange(key, 0, -1)]
    assert second.processing_samples == 24
    assert processing(second) == pytest.approx(quantiles(own), abs=1e-6)
    handler = [m["end"] - m["fr"] / 1000 for m in ends]
    for got, bound in zip(processing(second), quantiles(handler), strict=True):
        assert bound - 0.005 <= got <= bound + 0.25

    # Released: their processing comes in the next snapshot; their wait was told already.
    hold.touch()
    records.wait(28, event="end")
    wait_for(lambda: r.llen(key) >= 28, 5, "28 timing records")
    take_snapshot()
    third = rows("jobs")[-1]
    assert (third.wait_samples, third.processing_samples) == (None, 4)
    newest = [float(e.split()[3]) / 1000 for e in r.lrange(key, 0, 3)]
    assert processing(third) == pytest.approx(quantiles(newest), abs=1e-6)
    assert math.isclose(third.processing_p50 or 0, nearest_rank(newest, 0.5))


def test_the_queue_page_and_metrics_show_them(
    console, lake: Path, rsmq: RedisSMQ, viewer, worker: WorkerProcess
) -> None:
    records = Records(rsmq)
    worker.wait_started()
    take_snapshot()
    for _ in range(10):
        rsmq.send_message("jobs", json.dumps({"sleep": 0.02}))
    records.wait(10)
    time.sleep(0.5)
    take_snapshot()
    row = rows("jobs")[-1]
    page = viewer.get(console.queue("jobs")).content.decode()
    assert "data-wait>" in page and "10 messages</small>" in page
    body = b"".join(viewer.get("/metrics").streaming_content).decode()
    line = (
        f'rsmq_queue_wait_seconds{{connection="default",namespace="{console.ns}",'
        f'quantile="0.95",queue="jobs"}} {row.wait_p95!r}'
    )
    assert line in body
    assert (
        f'rsmq_queue_processing_samples{{connection="default",namespace="{console.ns}",'
        f'queue="jobs"}} 10.0'
    ) in body


def test_a_run_reads_the_busiest_queues_wait_times_at_most(
    console, lake: Path, rsmq: RedisSMQ, monkeypatch
) -> None:
    monkeypatch.setattr(runs, "WAIT_QUEUES_MAX", 2)
    for q in "abc":
        rsmq.create_queue(q)
        rsmq.send_messages(q, ["x"] * 5)
    take_snapshot()
    for q, n in (("a", 1), ("b", 3), ("c", 2)):
        rsmq.receive_messages(q, n, vt=600)
    take_snapshot()
    got = {q: rows(q)[-1].wait_samples for q in "abc"}
    assert got == {"a": None, "b": 3, "c": 2}
