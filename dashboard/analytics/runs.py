"""The console's side of the Spark pipeline (pipeline/): run its jobs with the console's
settings, load what they wrote into the database for the pages, and start a run as a
process of its own for Celery beat.

A run is ``python manage.py pipeline rollups|census``: Spark starts in that process (its
JVM, ``RSMQ_SPARK_MASTER``), so a Celery worker that starts one (``start``) goes back to
its snapshots at once. One run of each job at a time: a lock in the broker's Redis.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from django.conf import settings
from django.db import transaction

from dashboard.models import AnomalyFlag, CensusResult, Rollup
from dashboard.places.connections import connections
from dashboard.snapshots import locks
from pipeline import results
from pipeline.spark import java_problem, running
from queues.locks import Busy

if TYPE_CHECKING:  # PySpark: the [pipeline] extra, imported where a job runs
    from pipeline import jobs
    from pipeline.anomalies import Rules

log = logging.getLogger(__name__)

JOBS = ("rollups", "census")
LOCK_TIMEOUT = 6 * 3600.0  # a run longer than this is taken for dead
MANAGE = Path(__file__).resolve().parents[2] / "manage.py"


class PipelineError(Exception):
    """A run that could not start: no Java, another run going on."""


def lock_name(job: str) -> str:
    return f"pipeline-{job}"


#: what a run says where PySpark is not installed (a console installed without [pipeline])
NO_PYSPARK = (
    "the pipeline is not installed here: no PySpark (pip install 'rsmq-console[pipeline]'),"
    " and Java 17+"
)


def spark_problem() -> str | None:
    """Why the pipeline can't run in this process (no PySpark, no Java 17+); None: fine."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return NO_PYSPARK
    return java_problem()


@contextmanager
def _only_run(job: str) -> Iterator[None]:
    """PySpark and Java there and no other run of ``job`` going on, or PipelineError."""
    if problem := spark_problem():
        raise PipelineError(problem)
    try:
        with locks.only_one(lock_name(job), LOCK_TIMEOUT):
            yield
    except Busy:
        raise PipelineError(f"another {job} run is going on") from None


def rules() -> Rules:
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
    out = settings.RSMQ_PIPELINE_DIR
    with _only_run("rollups"), running(master or settings.RSMQ_SPARK_MASTER) as spark:
        from pipeline import jobs

        run = jobs.run_rollups(spark, settings.RSMQ_LAKE_DIR, out, rules(), full=full)
    loaded = load_rollups(out, run.days, full=full) if run.days else 0
    flags = load_flags(out) if run.days else AnomalyFlag.objects.count()
    return {**run.as_dict(), "hours_loaded": loaded, "flags_loaded": flags}


def load_rollups(out: Path, days: Sequence[dt.date], full: bool = False) -> int:
    """The hours of ``days`` (as the job just wrote them) in place of what the database had
    for those days; hours older than RSMQ_ROLLUP_RETENTION days go."""
    keep_from = round(
        (dt.datetime.now(dt.UTC) - dt.timedelta(days=settings.RSMQ_ROLLUP_RETENTION)).timestamp()
        * 1000
    )
    loaded = 0
    with transaction.atomic():
        if full and days:  # the days the lake has were redone; older ones stay, as there
            since = dt.datetime.combine(min(days), dt.time(), dt.UTC).timestamp() * 1000
            Rollup.objects.filter(grain=Rollup.Grain.HOUR, bucket_start__gte=since).delete()
        for day in days:
            start = round(dt.datetime.combine(day, dt.time(), dt.UTC).timestamp() * 1000)
            Rollup.objects.filter(
                grain=Rollup.Grain.HOUR,
                bucket_start__gte=start,
                bucket_start__lt=start + 86_400_000,
            ).delete()
            rows = [
                Rollup(grain=Rollup.Grain.HOUR, **dataclasses.asdict(h))
                for h in results.buckets(out, "hour", day)
                if h.bucket_start >= keep_from
            ]
            Rollup.objects.bulk_create(rows, batch_size=2000)
            loaded += len(rows)
        Rollup.objects.filter(bucket_start__lt=keep_from).delete()
    return loaded


def load_flags(out: Path) -> int:
    """Every flag the job wrote, in place of the ones before."""
    flags = [AnomalyFlag(**dataclasses.asdict(f)) for f in results.flags(out)]
    with transaction.atomic():
        AnomalyFlag.objects.filter(source=AnomalyFlag.Source.PIPELINE).delete()
        AnomalyFlag.objects.bulk_create(flags, batch_size=2000)
    return len(flags)


# -- census ----------------------------------------------------------------------------


def census_targets(
    connection: str | None = None, namespace: str | None = None, queues: Sequence[str] = ()
) -> list[jobs.Target]:
    """The configured namespaces to count (all, or the one asked for)."""
    from pipeline import jobs

    targets = [
        jobs.Target(c.name, c.url, ns, tuple(queues) or None)
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
    targets = census_targets(connection, namespace, queues)
    out = settings.RSMQ_PIPELINE_DIR
    with _only_run("census"), running(master or settings.RSMQ_SPARK_MASTER) as spark:
        from pipeline import jobs

        run = jobs.run_census(spark, targets, out, min_rc=settings.RSMQ_POISON_RC)
    load_census(out, [(t.connection, t.namespace) for t in targets], queues)
    return run.as_dict()


def load_census(out: Path, counted: Sequence[tuple[str, str]], queues: Sequence[str] = ()) -> int:
    """The census's results in place of the last ones of the namespaces counted (of their
    ``queues`` only, when the census was of those)."""
    rows = [
        CensusResult(**dataclasses.asdict(c), min_rc=settings.RSMQ_POISON_RC)
        for c in results.census(out)
    ]
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


class Started(TypedDict):
    """Whether a run was started: its process's pid, or why not."""

    started: bool
    reason: NotRequired[str]
    pid: NotRequired[int]


def start(job: str) -> Started:
    """Start a run of ``job`` in the background (a process of its own, its output in
    RSMQ_PIPELINE_DIR/<job>.log) unless one is going on; returns at once."""
    if job not in JOBS:
        raise ValueError(f"no pipeline job {job!r}")
    if locks.going_on(lock_name(job)):
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
