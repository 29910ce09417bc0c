"""The jobs: read, transform (rollups.py, anomalies.py, census.py), write Parquet.

Output, under one folder (``out``; pipeline/results.py knows the layout and reads it for
the console):

    rollups/grain=minute/date=YYYY-MM-DD/hour=H/*.parquet   per queue per minute
    rollups/grain=hour/date=YYYY-MM-DD/*.parquet            per queue per hour
    flags/flags.parquet                                     anomaly episodes
    census/<part>/*.parquet                                 summary, histograms, poison
    _state.json                                             the rollups' state (state.py)

**Incremental rollups that cost what is new.** A run reads the lake files it has not
rolled up yet. Each queue in them is redone from the start of the hour of its first new
snapshot (``start``), from the snapshot before that hour, which the state keeps (a new
snapshot after the queue's last: its last; one in the last's hour: the one before that
hour; an older, late one: looked up in the lake), and the rolled-up snapshots from
``start`` on (none, or the files of one hour, unless late). Exactly those queues'
buckets from ``start`` on are replaced, in the minute partitions (one per hour) and hour
partitions (one per day) they fall in. Flags are redone per queue from the start of any
run of minutes that could reach ``start``; the others keep theirs, closing when their
queue is no longer snapshotted. ``full`` starts from an empty state (and keeps rollups
of days older than the lake). Any sequence of runs over the same files writes what one
``full`` run writes; the state is written last, so a run that dies half-way is simply
done again by the next one.

**Where an increment runs.** An increment of at most ``ON_THE_DRIVER_ROWS`` new
snapshots with no late file (an hour of 1,000 queues: 360,000) is rolled up in this
process with pyarrow (inmemory.py: the same rules, the same arithmetic, no Spark job);
a larger one, a late file, and ``full`` run as Spark jobs. Both write the same rows (the
property test in tests/pipeline/test_engines_agree.py holds them to each other, to
``full`` and to a plain Python computation).

**Compaction**: then the run rewrites the rolled-up files of each finished hour into one
file (pipeline/lake.py says how that stays atomic for readers).

**Where the code is.** This module holds the entry points (``run_rollups``,
``run_census``) and the choice of engine; ``plan.py`` what an increment redoes;
``rollup_driver.py`` the in-process engine (inmemory.py's rules), ``rollup_spark.py`` the
Spark one (rollups.py, anomalies.py); ``flag_store.py`` the stored flags;
``compaction.py`` the lake's compaction. The two engines write the same rows:
tests/pipeline/test_engines_agree.py holds them to it.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from . import anomalies, census, lake, results, source
from . import state as saved
from .compaction import _compact
from .plan import KEY, PARTITIONS, RollupRun, _plan, _queue_spans
from .rollup_driver import _fresh, _roll_up_here
from .rollup_spark import _millis, _read, _roll_up_spark, _spans
from .state import State


def run_rollups(
    spark: SparkSession,
    lake_dir: Path,
    out: Path,
    rules: anomalies.Rules | None = None,
    full: bool = False,
    flag_days: int = 7,
) -> RollupRun:
    """Roll up what is new in the lake (everything with ``full``), flag anomalies, and
    compact the lake's finished hours. Closed flags are kept ``flag_days`` days."""
    rules = rules or anomalies.Rules()
    out.mkdir(parents=True, exist_ok=True)
    since: dt.date | None = dt.date.min
    if saved.outdated(out):  # an older job's output: its layout goes too
        full, since = True, None
    if full:
        saved.forget(out)  # a full run that dies is done again from scratch
    state = saved.load(out)
    lake.clean(lake_dir, state.files)
    found = lake.files(lake_dir, state.files)
    new = {d: [n for n in names if not state.knows(lake_dir, d, n)] for d, names in found.items()}
    new = {d: names for d, names in new.items() if names}
    state.keep_only(found)
    run = RollupRun(new_files=sum(len(names) for names in new.values()), watermark=state.newest)
    if new:
        if full:
            _forget_rollups(out, since and min(found))
        _roll_up(spark, lake_dir, out, state, new, rules, flag_days, full, run)
        saved.save(out, state)
        run.watermark = state.newest
    run.compacted = _compact(lake_dir, out, state)
    return run


def _forget_rollups(out: Path, since: dt.date | None) -> None:
    """A full run redoes the days the lake has; older rollups stay (all go: None)."""
    for grain in PARTITIONS:
        for day in results.days(out, grain):
            if since is None or day >= since:
                shutil.rmtree(results.day_dir(out, grain, day))
    shutil.rmtree(results.flags_dir(out), ignore_errors=True)


ON_THE_DRIVER = 256 << 20  # bytes of new files read with pyarrow, not file by file in Spark
# An increment of at most these many new snapshots, none of them late, is rolled up in
# this process (inmemory.py), not by Spark jobs: an hour of 1,000 queues is 360,000.
ON_THE_DRIVER_ROWS = 3_000_000


def _roll_up(
    spark: SparkSession,
    lake_dir: Path,
    out: Path,
    state: State,
    new: dict[dt.date, list[str]],
    rules: anomalies.Rules,
    flag_days: int,
    full: bool,
    run: RollupRun,
) -> None:
    fresh_names = {(d, n) for d, names in new.items() for n in names}
    paths = [lake.path(lake_dir, d, n) for d, n in sorted(fresh_names)]
    table: pa.Table | None = None
    if sum(os.path.getsize(p) for p in paths) <= ON_THE_DRIVER:
        table, spans = _fresh(paths)
        plan = _plan(state, _queue_spans(table))
    else:
        fresh = _read(spark, paths).localCheckpoint()
        spans = _spans(spark, paths)
        firsts = fresh.groupBy(*KEY).agg(
            F.min(_millis("taken_at")).alias("low"), F.max(_millis("taken_at")).alias("high")
        )
        plan = _plan(
            state,
            (((r["connection"], r["namespace"], r["queue"]), r["low"], r["high"])
             for r in firsts.collect()),
        )  # fmt: skip
    for (d, n), span in spans.items():
        state.files.setdefault(d.isoformat(), {})[n] = span
    rolled = [(d, n, low, high) for d, n, low, high in state.spans() if (d, n) not in fresh_names]
    if table is not None and not full and not plan.late and table.num_rows <= ON_THE_DRIVER_ROWS:
        run.engine = "driver"
        _roll_up_here(lake_dir, out, state, table, plan, rolled, rules, flag_days, run)
        return
    run.engine = "spark"
    if table is not None:
        fresh = spark.createDataFrame(table)
    _roll_up_spark(spark, lake_dir, out, state, fresh, plan, rolled, rules, flag_days, full, run)


@dataclass(frozen=True)
class Target:
    """One namespace of one Redis server to count."""

    connection: str
    url: str
    namespace: str
    queues: tuple[str, ...] | None = None


def census_messages(spark: SparkSession, targets: Sequence[Target], **options: object) -> DataFrame:
    """Every message of the targets, from the ``rsmq`` data source, with the key columns."""
    source.register(spark)
    frames = []
    for t in targets:
        reader = (
            spark.read.format(source.NAME).option("url", t.url).option("namespace", t.namespace)
        )
        if t.queues is not None:
            reader = reader.option("queues", ",".join(t.queues))
        for key, value in options.items():
            reader = reader.option(key, str(value))
        frames.append(
            reader.load()
            .withColumn("connection", F.lit(t.connection))
            .withColumn("namespace", F.lit(t.namespace))
        )
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


@dataclass
class CensusRun:
    queues: int = 0
    messages: int = 0
    poison: int = 0

    def as_dict(self) -> dict[str, object]:
        return {"queues": self.queues, "messages": self.messages, "poison": self.poison}


def run_census(
    spark: SparkSession,
    targets: Sequence[Target],
    out: Path,
    min_rc: int = 5,
    top: int = 20,
    body: bool = False,
    partition_size: int = source.DEFAULT_PARTITION_SIZE,
) -> CensusRun:
    """Read every message of the targets once (kept in memory and disk by Spark for the
    three results), write summary, histograms and poison candidates."""
    messages = census_messages(
        spark, targets, body=str(body).lower(), partitionSize=partition_size
    ).persist()
    queues, poison = Observation("summary"), Observation("poison")
    count = F.count(F.lit(1)).alias("rows")
    frames = {
        "summary": census.summary(messages).observe(queues, count, F.sum("messages").alias("n")),
        "histograms": census.histograms(messages),
        "poison": census.poison(messages, min_rc, top).observe(poison, count),
    }
    try:
        for name, frame in frames.items():
            frame.coalesce(1).write.mode("overwrite").parquet(str(results.census_dir(out, name)))
    finally:
        messages.unpersist()
    return CensusRun(queues.get["rows"], queues.get["n"] or 0, poison.get["rows"])
