"""The console's side of the Spark pipeline (pipeline/): run its jobs with the console's
settings, load what they wrote into the database for the pages, and start a run as a
process of its own for Celery beat.

A run is ``python manage.py pipeline rollups|census``: Spark starts in that process (its
JVM, ``RSMQ_SPARK_MASTER``), so a Celery worker that starts one (``start``) goes back to
its snapshots at once. One run of each job at a time: a lock in the broker's Redis.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import redis
from django.conf import settings
from django.db import transaction

from queues.locks import job_lock

from .connections import connections
from .models import AnomalyFlag, CensusResult, Rollup

log = logging.getLogger(__name__)

JOBS = ("rollups", "census")
LOCK_TIMEOUT = 6 * 3600.0  # a run longer than this is taken for dead
MANAGE = Path(__file__).resolve().parent.parent / "manage.py"


class PipelineError(Exception):
    """A run that could not start: no Java, another run going on."""


def _lock(job: str) -> redis.lock.Lock:
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=5)
    return job_lock(client, f"pipeline-{job}", LOCK_TIMEOUT)


def _check_java() -> None:
    from pipeline.spark import java_problem

    if problem := java_problem():
        raise PipelineError(problem)


@contextmanager
def _session(master: str | None) -> Iterator[Any]:
    """A Spark session (this process's own if it has one: tests, a shell), stopped after
    unless it was there before."""
    from pyspark.sql import SparkSession

    from pipeline.spark import session

    before = SparkSession.getActiveSession()
    spark = session(master or settings.RSMQ_SPARK_MASTER)
    try:
        yield spark
    finally:
        if before is None:
            spark.stop()


@contextmanager
def _only_run(job: str) -> Iterator[None]:
    lock = _lock(job)
    if not lock.acquire():
        raise PipelineError(f"another {job} run is going on")
    try:
        yield
    finally:
        try:
            lock.release()
        except redis.exceptions.LockNotOwnedError:
            log.warning("the %s run took longer than its lock (%.0f s)", job, LOCK_TIMEOUT)


def rules() -> Any:
    from pipeline.anomalies import Rules

    n = settings.RSMQ_FLAG_INTERVALS
    return Rules(
        growth_intervals=n,
        stall_intervals=n,
        slo=settings.RSMQ_OLDEST_AGE_SLO,
        slos={k: float(v) for k, v in settings.RSMQ_OLDEST_AGE_SLOS.items()},
    )


# -- rollups ---------------------------------------------------------------------------


def run_rollups(master: str | None = None, full: bool = False) -> dict[str, Any]:
    """Roll up what is new in the lake, then load the hours and the flags."""
    from pipeline import jobs

    _check_java()
    out = settings.RSMQ_PIPELINE_DIR
    with _only_run("rollups"), _session(master) as spark:
        run = jobs.run_rollups(spark, settings.RSMQ_LAKE_DIR, out, rules(), full=full)
    loaded = load_rollups(out, run.days, full=full) if run.days else 0
    flags = load_flags(out) if run.days else AnomalyFlag.objects.count()
    return {**run.as_dict(), "hours_loaded": loaded, "flags_loaded": flags}


def _table(folder: Path) -> list[dict[str, Any]]:
    return ds.dataset(folder, format="parquet").to_table().to_pylist() if folder.is_dir() else []


def _ms(value: dt.datetime | None) -> int | None:
    return None if value is None else round(value.timestamp() * 1000)


def load_rollups(out: Path, days: Sequence[dt.date], full: bool = False) -> int:
    """The hours of ``days`` (as the job just wrote them) in place of what the database had
    for those days; hours older than RSMQ_ROLLUP_RETENTION days go."""
    folder = out / "rollups" / "grain=hour"
    keep_from = round(
        (dt.datetime.now(dt.UTC) - dt.timedelta(days=settings.RSMQ_ROLLUP_RETENTION)).timestamp()
        * 1000
    )
    fields = [f.name for f in Rollup._meta.get_fields() if f.name not in ("id", "grain")]
    loaded = 0
    with transaction.atomic():
        if full:
            Rollup.objects.filter(grain=Rollup.Grain.HOUR).delete()
        for day in days:
            start = round(dt.datetime.combine(day, dt.time(), dt.UTC).timestamp() * 1000)
            Rollup.objects.filter(
                grain=Rollup.Grain.HOUR,
                bucket_start__gte=start,
                bucket_start__lt=start + 86_400_000,
            ).delete()
            rows = []
            for r in _table(folder / f"date={day.isoformat()}"):
                r["bucket_start"] = _ms(r["bucket_start"])
                if r["bucket_start"] >= keep_from:
                    rows.append(Rollup(grain=Rollup.Grain.HOUR, **{f: r[f] for f in fields}))
            Rollup.objects.bulk_create(rows, batch_size=2000)
            loaded += len(rows)
        Rollup.objects.filter(bucket_start__lt=keep_from).delete()
    return loaded


def load_flags(out: Path) -> int:
    """Every flag the job wrote, in place of the ones before."""
    rows = _table(out / "flags")
    flags = [
        AnomalyFlag(
            connection=r["connection"], namespace=r["namespace"], queue=r["queue"],
            kind=r["kind"], start=_ms(r["start"]), end=_ms(r["end"]),
            intervals=r["intervals"], figures=json.loads(r["figures"]),
        )
        for r in rows
    ]  # fmt: skip
    with transaction.atomic():
        AnomalyFlag.objects.all().delete()
        AnomalyFlag.objects.bulk_create(flags, batch_size=2000)
    return len(flags)


# -- census ----------------------------------------------------------------------------


def census_targets(
    connection: str | None = None, namespace: str | None = None, queues: Sequence[str] = ()
) -> list[Any]:
    """The configured namespaces to count (all, or the one asked for)."""
    from pipeline.jobs import Target

    targets = [
        Target(c.name, c.url, ns, tuple(queues) or None)
        for c in connections()
        for ns in c.namespaces
        if connection in (None, c.name) and namespace in (None, ns)
    ]
    if not targets:
        raise PipelineError(f"no configured connection {connection!r} with namespace {namespace!r}")
    return targets


def run_census(
    master: str | None = None,
    connection: str | None = None,
    namespace: str | None = None,
    queues: Sequence[str] = (),
) -> dict[str, Any]:
    """Count every message of the configured namespaces (or the one asked for), then load
    the results in place of the last census of those namespaces."""
    from pipeline import jobs

    _check_java()
    targets = census_targets(connection, namespace, queues)
    out = settings.RSMQ_PIPELINE_DIR
    with _only_run("census"), _session(master) as spark:
        run = jobs.run_census(spark, targets, out, min_rc=settings.RSMQ_POISON_RC)
    load_census(out, [(t.connection, t.namespace) for t in targets], queues)
    return run.as_dict()


def load_census(out: Path, counted: Sequence[tuple[str, str]], queues: Sequence[str] = ()) -> int:
    """The census's results in place of the last ones of the namespaces counted (of their
    ``queues`` only, when the census was of those)."""
    from pipeline.census import HISTOGRAMS

    folder = out / "census"
    key = ("connection", "namespace", "queue")
    bins: dict[tuple, dict[str, list[int]]] = defaultdict(
        lambda: {name: [0] * len(b) for name, b in HISTOGRAMS.items()}
    )
    for h in _table(folder / "histograms"):
        bins[tuple(h[k] for k in key)][h["histogram"]][h["bin"]] = h["messages"]
    poison: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for p in sorted(_table(folder / "poison"), key=lambda p: p["rank"]):
        poison[tuple(p[k] for k in key)].append(
            {f: p[f] for f in ("id", "rc", "sent", "fr", "age", "size", "state")}
        )
    rows = []
    for s in _table(folder / "summary"):
        k = tuple(s[f] for f in key)
        histograms = {
            name: [[label, n] for (label, _), n in zip(HISTOGRAMS[name], counts, strict=True)]
            for name, counts in bins[k].items()
        }
        rows.append(
            CensusResult(
                **{f: s[f] for f in (*key, "read_at", "messages", "visible", "inflight",
                                     "delayed", "rc_max", "bytes", "size_max", "age_max")},
                histograms=histograms, poison=poison[k], min_rc=settings.RSMQ_POISON_RC,
            )
        )  # fmt: skip
    with transaction.atomic():
        for conn, ns in counted:
            old = CensusResult.objects.filter(connection=conn, namespace=ns)
            if queues:
                old = old.filter(queue__in=queues)
            old.delete()
        CensusResult.objects.bulk_create(rows)
    return len(rows)


# -- a run of its own, for Celery beat ------------------------------------------------


def command(job: str) -> list[str]:
    """The command line of a run in a process of its own."""
    return [sys.executable, str(MANAGE), "pipeline", job]


def start(job: str) -> dict[str, Any]:
    """Start a run of ``job`` in the background (a process of its own, its output in
    RSMQ_PIPELINE_DIR/<job>.log) unless one is going on; returns at once."""
    if job not in JOBS:
        raise ValueError(f"no pipeline job {job!r}")
    if _lock(job).locked():
        log.info("pipeline %s not started: a run is going on", job)
        return {"started": False, "reason": "a run is going on"}
    logs = settings.RSMQ_PIPELINE_DIR
    logs.mkdir(parents=True, exist_ok=True)
    with (logs / f"{job}.log").open("ab") as out:
        process = subprocess.Popen(
            command(job), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    _children.append(process)
    _children[:] = [p for p in _children if p.poll() is None]  # reap the ones done
    log.info("pipeline %s started: pid %d", job, process.pid)
    return {"started": True, "pid": process.pid}


_children: list[subprocess.Popen[bytes]] = []
