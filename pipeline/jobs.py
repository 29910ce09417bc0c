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
property tests hold each to ``full`` and to a plain Python computation).

**Compaction**: then the run rewrites the rolled-up files of each finished hour into one
file (pipeline/lake.py says how that stays atomic for readers).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, IntegerType, LongType, StructField, StructType

from . import anomalies, census, inmemory, lake, results, rollups, source
from . import state as saved
from .state import Key, Row, State

KEY = rollups.KEY
MINUTE, HOUR, DAY = rollups.MINUTE, rollups.HOUR, 86_400_000
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
PARTITIONS = {"minute": ["date", "hour"], "hour": ["date"]}


@dataclass
class RollupRun:
    """What one rollups run did."""

    new_files: int = 0
    days: list[dt.date] = field(default_factory=list)  # the days whose hours were redone
    rows: int = 0  # rollup rows written (minutes and hours)
    flags: int = 0
    open_flags: int = 0
    watermark: int | None = None  # the newest snapshot rolled up, epoch ms
    compacted: int = 0  # lake files rewritten into fewer
    engine: str | None = None  # "spark", or "driver": rolled up in this process (inmemory.py)

    def as_dict(self) -> dict[str, object]:
        return {
            "new_files": self.new_files,
            "days": [d.isoformat() for d in self.days],
            "rows": self.rows,
            "flags": self.flags,
            "open_flags": self.open_flags,
            "watermark": self.watermark,
            "compacted": self.compacted,
            "engine": self.engine,
        }


def _floor(ms: int, width: int) -> int:
    return ms - ms % width


def _instant(ms: int) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=ms)


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


def _read(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    if not paths:
        return spark.createDataFrame([], lake.spark_schema())
    return spark.read.schema(lake.spark_schema()).parquet(*paths)


ON_THE_DRIVER = 256 << 20  # bytes of new files read with pyarrow, not file by file in Spark
# An increment of at most these many new snapshots, none of them late, is rolled up in
# this process (inmemory.py), not by Spark jobs: an hour of 1,000 queues is 360,000.
ON_THE_DRIVER_ROWS = 3_000_000


def _fresh(paths: Sequence[str]) -> tuple[pa.Table, dict[tuple[dt.date, str], tuple[int, int]]]:
    """The new files' snapshots, read once with pyarrow, and each file's span (Spark pays
    a task's worth of overhead per small file: an hour is 360 of them)."""
    tables, spans = [], {}
    for p in paths:
        table = pq.read_table(p, schema=lake.SCHEMA)
        low, high = pc.min_max(inmemory.millis(table.column("taken_at"))).values()
        folder, name = p.rsplit("/", 2)[-2:]
        day = dt.date.fromisoformat(folder.removeprefix(lake.PARTITION))
        spans[(day, name)] = (low.as_py() or 0, high.as_py() or 0)  # 0: an empty file
        tables.append(table)
    return pa.concat_tables(tables), spans


def _spans(spark: SparkSession, paths: Sequence[str]) -> dict[tuple[dt.date, str], tuple[int, int]]:
    """Each file's first and last snapshot (epoch ms), by day and name: one job however
    many files (only the ``taken_at`` column is read)."""
    at = _millis("taken_at")
    found = (
        _read(spark, paths)
        .select(F.input_file_name().alias("file"), at.alias("at"))
        .groupBy("file")
        .agg(F.min("at").alias("low"), F.max("at").alias("high"))
        .collect()
    )
    spans = {}
    for r in found:
        folder, name = r["file"].rsplit("/", 2)[-2:]
        day = dt.date.fromisoformat(folder.removeprefix(lake.PARTITION))
        spans[(day, name)] = (r["low"], r["high"])
    return spans


def _frame(spark: SparkSession, rows: Iterable[Row]) -> DataFrame:
    """Lake rows kept in the state as a DataFrame."""
    at = saved.AT
    return spark.createDataFrame(
        [(*r[:at], _instant(r[at]), *r[at + 1 :]) for r in rows], lake.spark_schema()
    )


def _starts(spark: SparkSession, starts: dict[Key, int]) -> DataFrame:
    schema = StructType([StructField(c, lake.spark_schema()[c].dataType) for c in KEY])
    schema = schema.add("_from", LongType())
    return F.broadcast(spark.createDataFrame([(*k, s) for k, s in starts.items()], schema))


def _millis(column: str) -> Column:
    return F.unix_millis(F.col(column))


@dataclass
class Plan:
    """Where each queue of the new files is redone from, and from which snapshots."""

    starts: dict[Key, int] = field(default_factory=dict)  # the hour its redo starts, ms
    before: list[Row] = field(default_factory=list)  # its snapshot before, from the state
    again: dict[Key, int] = field(default_factory=dict)  # rolled-up snapshots from start on
    late: dict[Key, int] = field(default_factory=dict)  # ...the snapshot before in the lake


def _plan(state: State, spans: Iterable[tuple[Key, int, int]]) -> Plan:
    """From each queue's first and last new snapshot (and the state: its newest moves)."""
    plan = Plan()
    newest = state.newest
    for k, low, high in spans:
        start = plan.starts[k] = _floor(low, HOUR)
        newest = high if newest is None else max(newest, high)
        q = state.queues.get(k)
        if q is None:
            continue
        if start > q.last_at:
            plan.before.append(q.last)
        elif start == _floor(q.last_at, HOUR):
            plan.again[k] = start
            if q.before is not None:
                plan.before.append(q.before)
        else:
            plan.again[k] = plan.late[k] = start
    state.newest = newest
    return plan


def _queue_spans(table: pa.Table) -> list[tuple[Key, int, int]]:
    at = inmemory.millis(table.column("taken_at"))
    by = table.select(list(KEY)).append_column("at", at).group_by(list(KEY))
    found = by.aggregate([("at", "min"), ("at", "max")]).to_pylist()
    return [
        ((r["connection"], r["namespace"], r["queue"]), r["at_min"], r["at_max"]) for r in found
    ]


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


def _roll_up_spark(
    spark: SparkSession,
    lake_dir: Path,
    out: Path,
    state: State,
    fresh: DataFrame,
    plan: Plan,
    rolled: list[tuple[dt.date, str, int, int]],
    rules: anomalies.Rules,
    flag_days: int,
    full: bool,
    run: RollupRun,
) -> None:
    starts, again, late = plan.starts, plan.again, plan.late
    parts = [fresh, _frame(spark, plan.before)]
    if again:
        since = min(again.values())
        files = [lake.path(lake_dir, d, n) for d, n, _, high in rolled if high >= since]
        parts.append(
            _read(spark, files)
            .join(_starts(spark, again), KEY)
            .where(_millis("taken_at") >= F.col("_from"))
            .drop("_from")
        )
    if late:
        until = max(late.values())
        files = [lake.path(lake_dir, d, n) for d, n, low, _ in rolled if low < until]
        earlier = rollups.deduplicated(
            _read(spark, files)
            .join(_starts(spark, late), KEY)
            .where(_millis("taken_at") < F.col("_from"))
            .drop("_from")
        )
        newest_first = Window.partitionBy(*KEY).orderBy(F.col("taken_at").desc())
        parts.append(
            earlier.withColumn("_n", F.row_number().over(newest_first)).where("_n = 1").drop("_n")
        )
    snapshots = parts[0]
    for p in parts[1:]:
        snapshots = snapshots.unionByName(p)
    snapshots = snapshots.localCheckpoint()  # for the rollups and the state

    made = (
        rollups.rollups(snapshots)
        .join(_starts(spark, starts), KEY)
        .where(_millis("bucket_start") >= F.col("_from"))
        .drop("_from")
        .localCheckpoint()
    )
    run.rows = made.count()
    for grain in PARTITIONS:
        _replace(spark, out, grain, made.where(F.col("grain") == grain), starts, full)
    run.days = sorted(
        r["date"] for r in made.where(F.col("grain") == "hour").select("date").distinct().collect()
    )
    _remember(state, snapshots)

    def episodes(redo: dict[Key, int], newest: int) -> DataFrame:
        if full:
            return anomalies.flags(_stored(spark, out, "minute", None), rules, newest)
        # The minute before each redo's first, for its backlog growth and continuity.
        minutes = (
            _stored(spark, out, "minute", min(redo.values()) - 2 * MINUTE)
            .join(_starts(spark, redo), KEY)
            .where(_millis("bucket_start") >= F.col("_from") - 2 * MINUTE)
            .drop("_from")
        )
        return (
            anomalies.flags(minutes, rules, newest)
            .join(_starts(spark, redo), KEY)
            .where(_millis("start") >= F.col("_from"))
            .drop("_from")
        )

    def made_flags(redo: dict[Key, int], newest: int) -> pa.Table:
        return episodes(redo, newest).select(
            *KEY, "kind", _millis("start").alias("start"), _millis("end").alias("end"),
            "intervals", "figures",
        ).toArrow()  # fmt: skip

    run.flags, run.open_flags = _write_flags(out, state, starts, rules, flag_days, full, made_flags)


def _roll_up_here(
    lake_dir: Path,
    out: Path,
    state: State,
    fresh: pa.Table,
    plan: Plan,
    rolled: list[tuple[dt.date, str, int, int]],
    rules: anomalies.Rules,
    flag_days: int,
    run: RollupRun,
) -> None:
    """``_roll_up_spark``'s steps in this process, for an increment without late files."""
    parts = [fresh, _lake_table(plan.before)]
    if plan.again:
        since = min(plan.again.values())
        files = [lake.path(lake_dir, d, n) for d, n, _, high in rolled if high >= since]
        if files:
            found = pa.concat_tables(pq.read_table(f, schema=lake.SCHEMA) for f in files)
            parts.append(_from_start(found, plan.again, "taken_at"))
    snapshots = inmemory.deduplicated(pa.concat_tables(parts))
    made = {
        grain: _from_start(buckets, plan.starts, "bucket_start")
        for grain, buckets in inmemory.rollups(snapshots).items()
    }
    run.rows = sum(t.num_rows for t in made.values())
    for grain, buckets in made.items():
        _replace_here(out, grain, buckets, plan.starts)
    run.days = sorted(set(pc.cast(made["hour"].column("bucket_start"), pa.date32()).to_pylist()))
    for k, last, before in inmemory.remember(snapshots):
        state.queues[k] = saved.Queue(last, before)

    def made_flags(redo: dict[Key, int], newest: int) -> pa.Table:
        if not redo:
            return FLAGS_MS.empty_table()
        since = min(redo.values()) - 2 * MINUTE
        minutes = _from_start(_stored_here(out, since), redo, "bucket_start", -2 * MINUTE)
        found = [
            f
            for f in inmemory.flags(minutes, rules, newest)
            if f["start"] >= redo[(f["connection"], f["namespace"], f["queue"])]
        ]
        return pa.Table.from_pylist(found, schema=FLAGS_MS)

    run.flags, run.open_flags = _write_flags(
        out, state, plan.starts, rules, flag_days, False, made_flags
    )


def _lake_table(rows: Sequence[Row]) -> pa.Table:
    """Lake rows kept in the state (``taken_at`` in epoch ms) as a lake table. A row kept
    before the lake had its later columns (they are nullable) has them as nulls."""
    names = lake.SCHEMA.names
    columns: dict[str, Any] = {
        c: [r[i] if i < len(r) else None for r in rows] for i, c in enumerate(names)
    }
    at = pa.array(columns["taken_at"], pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
    columns["taken_at"] = at
    return pa.table(columns, schema=lake.SCHEMA)


def _from_start(table: pa.Table, starts: dict[Key, int], column: str, shift: int = 0) -> pa.Table:
    """The rows of the queues in ``starts``, from their start (+ ``shift`` ms) on."""
    at = inmemory.millis(table.column(column))
    joined = table.append_column("_at", at).join(
        _keyed(starts, "_from"), list(KEY), join_type="inner"
    )
    kept = joined.filter(pc.field("_at") >= pc.add(pc.field("_from"), shift))
    return kept.drop_columns(["_at", "_from"]).select(table.column_names)


def _partition_of(grain: str, bucket_ms: int) -> Path:
    t = _instant(bucket_ms)
    day = Path(f"date={t.date().isoformat()}")
    return day / f"hour={t.hour}" if grain == "minute" else day


def _parquet_files(folder: Path) -> list[Path]:
    return sorted(
        f for f in folder.iterdir() if f.suffix == ".parquet" and not f.name.startswith((".", "_"))
    )


def _replace_here(out: Path, grain: str, made: pa.Table, starts: dict[Key, int]) -> None:
    """``_replace`` in this process: each partition the made buckets fall in is rewritten
    as one file (its other queues' buckets, and the redone queues' before their start,
    kept), renamed over the one before (the commit); files Spark wrote there go after.
    A run that dies half-way leaves each partition old or new, and the next run, from
    the same state, writes the same again."""
    root = results.grain_dir(out, grain)
    width = HOUR if grain == "minute" else DAY
    parts = pc.divide(inmemory.millis(made.column("bucket_start")), width)
    for part in sorted(pc.unique(parts).to_pylist()):
        folder = root / _partition_of(grain, part * width)
        folder.mkdir(parents=True, exist_ok=True)
        tables = [made.filter(pc.equal(parts, part))]
        old = _parquet_files(folder)
        final = folder / ROLLUP_FILE
        # Our file beside others: a run that died after its rename left them (Spark
        # replaces every file of a partition it writes): ours has their rows.
        current = [final] if final in old else old
        if current:
            before = pa.concat_tables(pq.read_table(f, schema=inmemory.STORED) for f in current)
            redone = inmemory.millis(before.column("bucket_start"))
            joined = before.append_column("_at", redone).join(
                _keyed(starts, "_from"), list(KEY), join_type="left outer"
            )
            keep = pc.is_null(pc.field("_from")) | (pc.field("_at") < pc.field("_from"))
            tables.append(joined.filter(keep).select(inmemory.STORED.names))
        tmp = folder / f".{ROLLUP_FILE}.{uuid.uuid4().hex}.tmp"
        pq.write_table(pa.concat_tables(tables).cast(inmemory.STORED), tmp)
        os.replace(tmp, final)
        for f in old:
            if f != final:
                f.unlink(missing_ok=True)


ROLLUP_FILE = "rollups.parquet"  # the one file of a partition rewritten in this process


def _stored_here(out: Path, since: int) -> pa.Table:
    """The minute rollups from the partition holding ``since`` on, as one table."""
    root = results.grain_dir(out, "minute")
    first = _instant(since)
    tables = []
    for day in results.days(out, "minute"):
        if day < first.date():
            continue
        for hour_dir in results.day_dir(out, "minute", day).glob("hour=*"):
            hour = int(hour_dir.name.removeprefix("hour="))
            if day == first.date() and hour < first.hour:
                continue
            tables += [pq.read_table(f, schema=inmemory.STORED) for f in _parquet_files(hour_dir)]
    del root
    return pa.concat_tables(tables) if tables else inmemory.STORED.empty_table()


@lru_cache(maxsize=4)
def _stored_schema(spark: SparkSession, grain: str) -> StructType:
    """The rollups of ``grain`` as stored: the columns, then the partitions."""
    schema = StructType([f for f in rollups.schema(spark) if f.name not in ("grain", "date")])
    schema = schema.add("date", DateType())
    return schema.add("hour", IntegerType()) if grain == "minute" else schema


def _stored(spark: SparkSession, out: Path, grain: str, since: int | None) -> DataFrame:
    """The rollups of ``grain`` (from the partition holding ``since`` on)."""
    schema = _stored_schema(spark, grain)
    root = results.grain_dir(out, grain)
    if not root.is_dir():
        return spark.createDataFrame([], schema)
    rows = spark.read.schema(schema).parquet(str(root))
    if since is None:
        return rows
    t = _instant(since)
    date = F.col("date")
    if grain == "hour":
        return rows.where(date >= F.lit(t.date()))
    return rows.where(
        (date > F.lit(t.date())) | ((date == F.lit(t.date())) & (F.col("hour") >= t.hour))
    )


def _replace(
    spark: SparkSession, out: Path, grain: str, made: DataFrame, starts: dict[Key, int], full: bool
) -> None:
    """Write the buckets made in place of those of their queues from their start on, in
    the partitions they fall in (the other queues' buckets there stay)."""
    schema = _stored_schema(spark, grain)
    made = made.withColumn("hour", F.hour("bucket_start")).select(*schema.names)
    if not full:
        before = _stored(spark, out, grain, min(starts.values())).alias("b")
        s = _starts(spark, starts).alias("s")
        same = [F.col(f"b.{c}") == F.col(f"s.{c}") for c in KEY]
        redone = F.unix_millis(F.col("b.bucket_start")) >= F.col("s._from")
        kept = before.join(s, [*same, redone], "left_anti")
        made = kept.unionByName(made).localCheckpoint()  # read before the overwrite
    made.write.mode("overwrite").partitionBy(*PARTITIONS[grain]).parquet(
        str(results.grain_dir(out, grain))
    )


def _remember(state: State, snapshots: DataFrame) -> None:
    """Each queue's last snapshot and the newest one before that snapshot's hour."""
    at = _millis("taken_at")
    by_queue = Window.partitionBy(*KEY)
    kept = rollups.deduplicated(snapshots).withColumn("_last", F.max(at).over(by_queue))
    hour = F.floor(F.col("_last") / HOUR) * HOUR
    kept = kept.where((at == F.col("_last")) | (at < hour)).withColumn(
        "_is_last", at == F.col("_last")
    )
    w = Window.partitionBy(*KEY, "_is_last").orderBy(F.col("taken_at").desc())
    names = lake.SCHEMA.names
    picked = kept.withColumn("_n", F.row_number().over(w)).where("_n = 1")
    picked = picked.select(
        *(at.alias(c) if c == "taken_at" else F.col(c) for c in names), "_is_last"
    )
    found: dict[Key, dict[bool, Row]] = defaultdict(dict)
    for r in picked.collect():
        found[(r["connection"], r["namespace"], r["queue"])][r["_is_last"]] = tuple(
            r[c] for c in names
        )
    for k, rows in found.items():
        state.queues[k] = saved.Queue(rows[True], rows.get(False))


# -- flags -------------------------------------------------------------------------------


def _write_flags(
    out: Path,
    state: State,
    starts: dict[Key, int],
    rules: anomalies.Rules,
    days: int,
    full: bool,
    episodes: Callable[[dict[Key, int], int], pa.Table],
) -> tuple[int, int]:
    """Flags redone for the queues rolled up again, from the first minute any of their
    episodes could change; the others' kept, closed once their queue is no longer
    snapshotted; closed flags older than ``days`` days dropped. The kept ones are
    handled as one Arrow table: a run costs little however many flags there are."""
    assert state.newest is not None
    newest = _floor(state.newest, MINUTE)
    stored = None if full else results.flags_table(out)
    # A run of minutes that reaches a queue's start can change: an episode's, or a run
    # still too short to be one (shorter than the longest a rule needs).
    reach = (max(rules.growth_intervals, rules.stall_intervals, rules.storm_intervals) + 1) * MINUTE
    redo = {k: s - reach for k, s in starts.items()}
    if stored is not None and stored.num_rows:
        last = _last(stored)
        reaching = (
            stored.append_column("_last", last)
            .join(_keyed(starts, "_start"), list(KEY))
            .filter(pc.greater_equal(pc.field("_last"), pc.subtract(pc.field("_start"), reach)))
            .group_by(list(KEY))
            .aggregate([("start", "min")])
        )
        for r in reaching.to_pylist():
            k = (r["connection"], r["namespace"], r["queue"])
            redo[k] = min(redo[k], r["start_min"])
    made = episodes(redo, newest)
    flags = [made.select(FLAGS_MS.names).cast(FLAGS_MS)]
    if stored is not None and stored.num_rows:
        kept = _closed(_kept(stored, redo), state, newest, rules)
        flags.append(kept.select(FLAGS_MS.names).cast(FLAGS_MS))
    table = pa.concat_tables(flags)
    ended = pc.field("end")
    table = table.filter(pc.is_null(ended) | (ended >= state.newest - days * DAY))
    _save_flags(out, table)
    return table.num_rows, table.num_rows - pc.count(table.column("end")).as_py()


def _keyed(values: dict[Key, int], name: str) -> pa.Table:
    keys = list(values)
    return pa.table(
        {
            **{c: pa.array([k[i] for k in keys], pa.string()) for i, c in enumerate(KEY)},
            name: pa.array(list(values.values()), pa.int64()),
        }
    )


def _last(flags: pa.Table) -> pa.Array:
    """The start of each episode's last minute (its minutes follow each other)."""
    return pc.add(
        flags.column("start"), pc.multiply(pc.subtract(flags.column("intervals"), 1), MINUTE)
    )


def _kept(stored: pa.Table, redo: dict[Key, int]) -> pa.Table:
    """The stored flags not redone: other queues', and those before a redo."""
    joined = stored.join(_keyed(redo, "_redo"), list(KEY), join_type="left outer")
    keep = pc.is_null(pc.field("_redo")) | (pc.field("start") < pc.field("_redo"))
    return joined.filter(keep).drop_columns(["_redo"])


def _closed(kept: pa.Table, state: State, newest: int, rules: anomalies.Rules) -> pa.Table:
    """Kept flags, those still open closed if their queue's newest minute is no longer
    their last or has fallen behind the lake's."""
    queues = {k: _floor(q.last_at, MINUTE) for k, q in state.queues.items()}
    kept = kept.join(_keyed(queues, "_newest"), list(KEY), join_type="left outer")
    last = _last(kept)
    queue_newest = pc.coalesce(kept.column("_newest"), last)
    still = pc.and_(
        pc.equal(last, queue_newest),
        pc.greater_equal(queue_newest, newest - rules.open_grace * MINUTE),
    )
    closes = pc.and_(pc.is_null(kept.column("end")), pc.invert(still))
    end = pc.if_else(closes, pc.add(last, MINUTE), kept.column("end"))
    return kept.set_column(kept.schema.get_field_index("end"), "end", end).drop_columns(["_newest"])


FLAGS_MS = pa.schema(
    [
        *((c, pa.string()) for c in KEY),
        ("kind", pa.string()),
        ("start", pa.int64()),  # epoch ms
        ("end", pa.int64()),
        ("intervals", pa.int64()),
        ("figures", pa.string()),  # JSON
    ]
)
FLAGS = pa.schema(
    [
        f if f.name not in ("start", "end") else (f.name, pa.timestamp("ms", tz="UTC"))
        for f in FLAGS_MS
    ]
)


def _save_flags(out: Path, flags: pa.Table) -> None:
    """All flags as one file, replaced whole."""
    folder = results.flags_dir(out)
    folder.mkdir(parents=True, exist_ok=True)
    flags = flags.sort_by([(c, "ascending") for c in (*KEY, "kind", "start")]).cast(FLAGS)
    final = folder / "flags.parquet"
    tmp = folder / f".flags-{uuid.uuid4().hex}.tmp"
    pq.write_table(flags, tmp)
    os.replace(tmp, final)
    for old in folder.glob("*.parquet"):  # an older job's part files
        if old != final:
            old.unlink()


# -- compaction --------------------------------------------------------------------------


def _compact(lake_dir: Path, out: Path, state: State) -> int:
    """Rewrite the rolled-up files of each finished hour (one before the newest
    snapshot's) into one: a day ends as 24 files however often it was snapshotted, plus
    what arrived late. Returns how many files were rewritten."""
    if state.newest is None:
        return 0
    finished = _floor(state.newest, HOUR)
    groups: dict[tuple[dt.date, int], list[tuple[str, int, int]]] = defaultdict(list)
    for day, name, low, high in state.spans():
        if _floor(low, HOUR) + HOUR <= finished:
            groups[(day, _floor(low, HOUR))].append((name, low, high))
    done = 0
    for (day, _), group in sorted(groups.items()):
        if len(group) < 2:
            continue
        names = [n for n, _, _ in group]
        name = lake.compact(lake_dir, day, names)
        files = state.files[day.isoformat()]
        for n in names:
            del files[n]
        files[name] = (min(low for _, low, _ in group), max(high for _, _, high in group))
        done += len(names)
    if done:
        saved.save(out, state)
    return done


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
