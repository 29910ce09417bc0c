"""Snapshots: every queue's counters, read on a schedule (dashboard/tasks.py), kept in
the database for the charts and appended to the lake (dashboard/snapshots/lake.py) for the
pipeline; and their retention."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import redis
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from dashboard.models import Snapshot
from dashboard.places.connections import Connection, connections, get_rsmq, stats_of_all
from dashboard.snapshots import lake, latest, locks, timing
from pipeline.lake import SCHEMA
from queues.errors import RsmqError
from queues.locks import Busy
from queues.models import QueueStats, WaitReading
from queues.urls import redacted

log = logging.getLogger(__name__)

PRUNE_BATCH = 10_000
#: queues of a namespace whose wait times one run reads at most (one script call each,
#: in one pipeline): past that, the ones that received the most since their last snapshot
WAIT_QUEUES_MAX = 2_000


@dataclass
class Run:
    """What one snapshot run did."""

    rows: int = 0
    files: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "connection/namespace": Redis failed
    unreadable: list[str] = field(default_factory=list)  # "connection/namespace/queue"
    locked: bool = False  # another run was going on: this one did nothing
    #: each namespace read, with its queues' stats (what the conditions are judged from)
    read: list[tuple[Connection, str, list[QueueStats]]] = field(default_factory=list)


def lock_timeout() -> float:
    # Long enough for a run that waits on a slow Redis for every namespace, short enough
    # that a worker killed in the middle of one holds the next ones up only briefly.
    return max(60.0, 6 * settings.RSMQ_SNAPSHOT_INTERVAL)


LOCK = "snapshot"


def take() -> Run:
    """Read every configured namespace once and store the rows; never two at a time."""
    try:
        with locks.only_one(LOCK, lock_timeout()):
            return _take()
    except Busy:
        log.warning("snapshot skipped: another one is still running")
        return Run(locked=True)


def _take() -> Run:
    run = Run()
    rows: list[Row] = []
    places = [(conn, ns) for conn in connections() for ns in conn.namespaces]
    for (conn, ns), stats in zip(places, stats_of_all(places), strict=True):
        if isinstance(stats, Exception):
            # Nothing of this namespace this time; the others still count.
            error = " ".join(str(stats).split())
            log.warning(
                "snapshot of %s/%s skipped: Redis at %s: %s",
                conn.name, ns, redacted(conn.url), error,
            )  # fmt: skip
            run.skipped.append(f"{conn.name}/{ns}")
            continue
        rows += _rows(conn, ns, stats, run, _wait_readings(conn, ns, stats))
        run.read.append((conn, ns, stats))
    if rows:
        run.files = store(rows)
        run.rows = len(rows)
    return run


#: a snapshot row: the columns of the table (``Snapshot``) and of the lake
#: (``pipeline.lake.SCHEMA``), in the lake's order (tests/console/snapshots/test_snapshots.py
#: checks that the three agree)
COLUMNS = tuple(SCHEMA.names)
Row = tuple[Any, ...]
#: the QueueStats attributes of COLUMNS after connection and namespace. A tuple per queue
#: straight from the stats: at 100,000 queues a model instance or a dict per row would be
#: most of a snapshot's time (bench/RESULTS.md, "Figures behind the code").
FROM_STATS = attrgetter(
    "qname", "now", "msgs", "hidden", "inflight", "delayed", "totalsent", "totalrecv",
    "oldest_age", "created",
)  # fmt: skip


def _rows(
    conn: Connection,
    ns: str,
    stats: list[QueueStats],
    run: Run,
    readings: dict[str, WaitReading] | None = None,
) -> list[Row]:
    readings = readings or {}
    slo = timing.slos(conn.name, ns)
    rows = []
    for s in stats:
        if s.unreadable:
            # No row of it (its counts can't be trusted); every other queue's is stored.
            log.warning(
                "snapshot of %s/%s skipped queue %r: %s", conn.name, ns, s.qname, s.unreadable
            )
            run.unreadable.append(f"{conn.name}/{ns}/{s.qname}")
            continue
        reading = readings.get(s.qname)
        times = timing.of_reading(reading).columns(slo(s.qname)) if reading else timing.NO_TIMING
        rows.append((conn.name, ns, *FROM_STATS(s), *times))
    return rows


def _wait_readings(conn: Connection, ns: str, stats: list[QueueStats]) -> dict[str, WaitReading]:
    """The wait readings of the queues that received or lost messages since their
    previous snapshot (the others have nothing new to time), each from that snapshot."""
    interval = round(settings.RSMQ_SNAPSHOT_INTERVAL * 1000)
    before: dict[str, tuple[int, int, int, int]] = {}
    run = latest.last_run(conn.name, ns)
    if run is not None:
        for q, at, recv, msgs, created in run[1].values_list(
            "queue", "taken_at", "totalrecv", "msgs", "created"
        ):
            before[q] = (at, recv, msgs, created)
    since: dict[str, int] = {}
    received: dict[str, int] = {}
    for s in stats:
        if s.unreadable:
            continue
        prev = before.get(s.qname)
        if prev is not None and prev[3] == s.created and prev[0] < s.now:
            if (prev[1], prev[2]) != (s.totalrecv, s.msgs):
                since[s.qname] = prev[0]
                received[s.qname] = s.totalrecv - prev[1]
        elif s.totalrecv:  # no previous snapshot of it: the interval before this one
            since[s.qname] = max(s.now - interval, s.created * 1000)
            received[s.qname] = s.totalrecv
    if not since:
        return {}
    if len(since) > WAIT_QUEUES_MAX:
        # Bounded: the queues that received the most since their previous snapshot.
        busiest = sorted(since, key=lambda q: -received[q])[:WAIT_QUEUES_MAX]
        since = {q: since[q] for q in busiest}
    try:
        readings = get_rsmq(conn, ns).wait_readings(since)
    except (redis.RedisError, RsmqError) as e:
        # The counts are stored all the same; only the times are missing this time.
        log.warning("wait times of %s/%s not read: %s", conn.name, ns, " ".join(str(e).split()))
        return {}
    return {r.qname: r for r in readings}


def store(rows: list[Row]) -> list[Path]:
    """Rows (``COLUMNS``) into the database and the lake: both, or (on an error) neither."""
    written: list[Path] = []
    try:
        with transaction.atomic():
            _insert(rows)
            columns = zip(*rows, strict=True)
            table = pa.Table.from_arrays(
                [pa.array(c, type=t) for c, t in zip(columns, SCHEMA.types, strict=True)],
                schema=SCHEMA,
            )
            written = lake.append_table(settings.RSMQ_LAKE_DIR, table)
    except BaseException:
        for path in written:  # the commit failed after the files were written
            path.unlink(missing_ok=True)
        raise
    return written


def _insert(rows: list[Row]) -> None:
    """The rows in one executemany: bulk_create prepares every value through its field in
    Python, most of a big snapshot's time (bench/RESULTS.md, "Figures behind the code");
    the values here are plain already."""
    meta = Snapshot._meta
    by_name = {f.name: f.column for f in meta.concrete_fields}
    columns = ", ".join(connection.ops.quote_name(by_name[c]) for c in COLUMNS)
    sql = (
        f"INSERT INTO {connection.ops.quote_name(meta.db_table)} ({columns})"
        f" VALUES ({', '.join(['%s'] * len(COLUMNS))})"
    )
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def prune(now: dt.datetime | None = None) -> tuple[int, list[dt.date]]:
    """Delete what is older than RSMQ_SNAPSHOT_RETENTION days: rows, and the lake's
    days that lie wholly before that. Returns (rows deleted, days removed)."""
    cutoff = (now or timezone.now()) - dt.timedelta(days=settings.RSMQ_SNAPSHOT_RETENTION)
    cutoff_ms = round(cutoff.timestamp() * 1000)
    deleted = 0
    # In batches: a day of 1,000 queues is 8.6 million rows, too many for one statement
    # that holds the database's write lock.
    while ids := list(
        Snapshot.objects.filter(taken_at__lt=cutoff_ms).values_list("pk", flat=True)[:PRUNE_BATCH]
    ):
        deleted += Snapshot.objects.filter(pk__in=ids).delete()[0]
    return deleted, lake.prune(settings.RSMQ_LAKE_DIR, cutoff)
