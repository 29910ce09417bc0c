"""The snapshot run (dashboard/snapshots/runs.py take): every configured namespace read once,
the rows stored in the database and the lake together; never two runs at a time; a
Redis that fails skipped, with nothing of it written."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import redis

from dashboard.models import Snapshot
from dashboard.snapshots import locks, runs
from dashboard.triage.conditions import take_snapshot
from pipeline.lake import SCHEMA
from queues import RedisSMQ
from queues.server import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def queues(console, lake: Path, rsmq: RedisSMQ) -> RedisSMQ:
    """q1 with a message in each state (and totals), and an empty q2."""
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", ["a", "b", "c", "d"])
    rsmq.receive_messages("q1", 2, vt=600)  # in flight
    rsmq.send_message("q1", "later", delay=600)  # delayed
    rsmq.create_queue("q2")
    return rsmq


def _row(queue: str) -> Snapshot:
    return Snapshot.objects.get(queue=queue)


def test_it_stores_a_row_per_queue_with_its_counters(console, queues: RedisSMQ) -> None:
    run = take_snapshot()
    assert (run.rows, run.skipped, run.locked) == (2, [], False)
    q1 = _row("q1")
    assert (q1.connection, q1.namespace) == ("default", console.ns)
    counts = (q1.msgs, q1.hiddenmsgs, q1.inflight, q1.delayed, q1.visible)
    assert counts == (5, 3, 2, 1, 2)
    assert (q1.totalsent, q1.totalrecv) == (5, 2)
    assert q1.created == queues.get_queue_attributes("q1").created
    assert q1.oldest_age is not None and 0 <= q1.oldest_age < 5
    q2 = _row("q2")
    assert (q2.msgs, q2.totalsent, q2.oldest_age) == (0, 0, None)


def test_it_stamps_rows_with_the_redis_servers_time(queues, redis_now) -> None:
    before = redis_now()
    take_snapshot()
    after = redis_now()
    assert before <= _row("q1").taken_at <= after


def test_it_appends_the_same_rows_to_the_lake(console, queues, lake: Path) -> None:
    run = take_snapshot()
    today = dt.datetime.now(dt.UTC).date().isoformat()
    assert [p.parent.name for p in run.files] == [f"date={today}"]
    assert pq.read_schema(run.files[0]).remove_metadata() == SCHEMA
    table = pq.read_table(lake)
    by_queue = {row["queue"]: row for row in table.to_pylist()}
    assert set(by_queue) == {"q1", "q2"}
    db = _row("q1")
    q1 = by_queue["q1"]
    assert q1["taken_at"] == db.taken  # the same ms, as a timestamp
    assert q1["date"] == db.taken.date().isoformat()  # the file's folder
    for field in ("connection", "namespace", "msgs", "hiddenmsgs", "inflight", "delayed",
                  "totalsent", "totalrecv", "oldest_age", "created"):  # fmt: skip
        assert q1[field] == getattr(db, field), field


def test_it_writes_one_lake_file_per_run(queues, lake: Path) -> None:
    for _ in range(3):
        take_snapshot()
    assert len(list(lake.glob("date=*/*.parquet"))) == 3
    assert pq.read_table(lake).num_rows == 6 == Snapshot.objects.count()


def test_it_reads_every_configured_connection_and_namespace(
    settings, lake, redis_url: str, ns: str, queues: RedisSMQ
) -> None:
    with RedisSMQ(url=redis_url, ns=ns + "b") as other:
        other.create_queue("b1")
        settings.RSMQ_CONNECTIONS = [
            {"name": "one", "url": redis_url, "namespaces": [ns]},
            {"name": "two", "url": redis_url, "namespaces": [ns + "b", ns]},
        ]
        assert take_snapshot().rows == 5
        other.delete_queue("b1")
    got = set(Snapshot.objects.values_list("connection", "namespace", "queue"))
    assert got == {
        ("one", ns, "q1"), ("one", ns, "q2"),
        ("two", ns + "b", "b1"), ("two", ns, "q1"), ("two", ns, "q2"),
    }  # fmt: skip


def test_a_deleted_queue_simply_stops_appearing(queues: RedisSMQ) -> None:
    take_snapshot()
    queues.delete_queue("q2")
    assert take_snapshot().rows == 1
    assert list(Snapshot.objects.filter(queue="q2").values_list("msgs", flat=True)) == [0]
    assert Snapshot.objects.filter(queue="q1").count() == 2


def test_it_writes_nothing_when_there_is_no_queue(console, lake: Path) -> None:
    run = take_snapshot()
    assert (run.rows, run.files, run.skipped) == (0, [], [])
    assert not lake.exists()


# -- a Redis that fails -----------------------------------------------------------------


def test_it_skips_a_redis_that_is_down_and_logs_it(
    settings, lake: Path, redis_url: str, ns: str, queues, caplog
) -> None:
    down = f"redis://:s3cret@127.0.0.1:{free_port()}/0"
    settings.RSMQ_CONNECTIONS = [
        {"name": "down", "url": down, "namespaces": [ns]},
        {"name": "up", "url": redis_url, "namespaces": [ns]},
    ]
    with caplog.at_level(logging.WARNING, logger="dashboard.snapshots.runs"):
        run = take_snapshot()
    assert run.skipped == [f"down/{ns}"]
    assert run.rows == 2
    assert set(Snapshot.objects.values_list("connection", flat=True)) == {"up"}
    assert set(pq.read_table(lake).column("connection").to_pylist()) == {"up"}
    [message] = caplog.messages
    assert f"snapshot of down/{ns} skipped" in message
    assert "Connection refused" in message
    assert "s3cret" not in message


def test_it_writes_nothing_at_all_when_the_only_redis_is_down(
    settings, lake: Path, ns: str
) -> None:
    down = f"redis://127.0.0.1:{free_port()}/0"
    settings.RSMQ_CONNECTIONS = [{"name": "down", "url": down, "namespaces": [ns]}]
    run = take_snapshot()
    assert (run.rows, run.skipped) == (0, [f"down/{ns}"])
    assert Snapshot.objects.count() == 0
    assert not lake.exists()


def test_it_stores_rows_in_both_places_or_neither(settings, queues, tmp_path: Path) -> None:
    settings.RSMQ_LAKE_DIR = tmp_path / "not-a-folder"
    settings.RSMQ_LAKE_DIR.write_text("a file where the lake should be")
    with pytest.raises(OSError):
        take_snapshot()
    assert Snapshot.objects.count() == 0


# -- the lock ---------------------------------------------------------------------------


def test_it_does_nothing_while_another_run_holds_the_lock(queues, lake: Path, caplog) -> None:
    with (
        locks.only_one("snapshot", 60),
        caplog.at_level(logging.WARNING, logger="dashboard.snapshots.runs"),
    ):
        run = take_snapshot()
    assert run.locked
    assert (run.rows, run.files) == (0, [])
    assert Snapshot.objects.count() == 0
    assert not lake.exists()
    assert caplog.messages == ["snapshot skipped: another one is still running"]
    assert take_snapshot().rows == 2  # released: the next run goes ahead


def test_it_releases_the_lock_when_a_run_fails(settings, queues, tmp_path: Path) -> None:
    settings.RSMQ_LAKE_DIR = tmp_path / "file"
    settings.RSMQ_LAKE_DIR.write_text("")
    with pytest.raises(OSError):
        take_snapshot()
    assert not locks.going_on("snapshot")


def test_it_keeps_the_lock_in_the_brokers_redis(
    settings, queues, broker_url: str, monkeypatch
) -> None:
    # Looked at during a run (the task's own lock, in the broker's Redis).
    real_take = runs._take
    ttls: list[int] = []

    def take_and_look() -> runs.Run:
        with redis.Redis.from_url(broker_url) as broker:
            ttls.append(broker.pttl(locks.key("snapshot")))
        return real_take()

    monkeypatch.setattr(runs, "_take", take_and_look)
    take_snapshot()
    [ttl] = ttls
    # It frees itself if its holder dies: after a minute, or six snapshot intervals.
    assert 59_000 < ttl <= 60_000
    settings.RSMQ_SNAPSHOT_INTERVAL = 30
    assert runs.lock_timeout() == 180


def test_it_says_when_a_run_outlived_its_lock(
    settings, queues, broker_url: str, monkeypatch, logged
) -> None:
    # The lock expired during the run (and maybe another run took it): say so, no crash.
    real_take = runs._take

    def slow_take() -> runs.Run:
        with redis.Redis.from_url(broker_url) as broker:
            broker.delete(locks.key("snapshot"))
        return real_take()

    monkeypatch.setattr(runs, "_take", slow_take)
    messages = logged("queues.locks")
    assert take_snapshot().rows == 2
    assert messages == ["snapshot took longer than its lock (60 s)"]


def test_a_row_has_the_columns_of_the_table_and_of_the_lake() -> None:
    table = {f.name for f in Snapshot._meta.concrete_fields if not f.primary_key}
    assert set(runs.COLUMNS) == table
    assert runs.COLUMNS == tuple(SCHEMA.names)


def test_a_run_across_midnight_writes_a_file_per_day(console, lake: Path) -> None:
    from dashboard.snapshots.lake import append_table

    midnight = dt.datetime(2026, 11, 22, tzinfo=dt.UTC).timestamp() * 1000
    rows = [
        ("c", "ns", f"q{i}", int(midnight) + ms, 1, 0, 0, 0, 1, 0, None, 1, *[None] * 10)
        for i, ms in enumerate((-20, -10, 0, 10))
    ]
    columns = [list(c) for c in zip(*rows, strict=True)]
    import pyarrow as pa

    table = pa.Table.from_arrays(
        [pa.array(c, type=t) for c, t in zip(columns, SCHEMA.types, strict=True)], schema=SCHEMA
    )
    written = append_table(lake, table)
    assert [p.parent.name for p in written] == ["date=2026-11-21", "date=2026-11-22"]
    assert [pq.read_table(p).column("queue").to_pylist() for p in written] == [
        ["q0", "q1"],
        ["q2", "q3"],
    ]
    assert written[0].name.startswith(f"{int(midnight) - 20}-")
