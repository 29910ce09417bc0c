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

**Compaction**: then the run rewrites the rolled-up files of each finished hour into one
file (pipeline/lake.py says how that stays atomic for readers).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, IntegerType, LongType, StructField, StructType

from . import anomalies, census, lake, results, rollups, source
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

    def as_dict(self) -> dict[str, object]:
        return {
            "new_files": self.new_files,
            "days": [d.isoformat() for d in self.days],
            "rows": self.rows,
            "flags": self.flags,
            "open_flags": self.open_flags,
            "watermark": self.watermark,
            "compacted": self.compacted,
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


def _fresh(
    spark: SparkSession, paths: Sequence[str]
) -> tuple[DataFrame, dict[tuple[dt.date, str], tuple[int, int]]]:
    """The new files' snapshots, read once, and each file's span. An hour's small files
    (360 at 10 s) are read here with pyarrow and handed to Spark as one Arrow table:
    Spark pays a task's worth of overhead per small file."""
    if sum(os.path.getsize(p) for p in paths) > ON_THE_DRIVER:
        return _read(spark, paths).localCheckpoint(), _spans(spark, paths)
    tables, spans = [], {}
    for p in paths:
        table = pq.read_table(p, schema=lake.SCHEMA)
        low, high = pc.min_max(pc.cast(table.column("taken_at"), pa.int64())).values()
        folder, name = p.rsplit("/", 2)[-2:]
        day = dt.date.fromisoformat(folder.removeprefix(lake.PARTITION))
        spans[(day, name)] = (low.as_py() or 0, high.as_py() or 0)  # 0: an empty file
        tables.append(table)
    return spark.createDataFrame(pa.concat_tables(tables)), spans


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
    fresh, spans = _fresh(spark, paths)
    for (d, n), span in spans.items():
        state.files.setdefault(d.isoformat(), {})[n] = span
    firsts = fresh.groupBy(*KEY).agg(
        F.min(_millis("taken_at")).alias("low"), F.max(_millis("taken_at")).alias("high")
    )

    starts: dict[Key, int] = {}
    before: list[Row] = []  # each queue's snapshot before its start, from the state
    again: dict[Key, int] = {}  # queues with snapshots rolled up at or after their start
    late: dict[Key, int] = {}  # ...whose snapshot before their start is in the lake
    newest = state.newest
    for r in firsts.collect():
        k: Key = (r["connection"], r["namespace"], r["queue"])
        start = starts[k] = _floor(r["low"], HOUR)
        newest = r["high"] if newest is None else max(newest, r["high"])
        q = state.queues.get(k)
        if q is None:
            continue
        if start > q.last_at:
            before.append(q.last)
        elif start == _floor(q.last_at, HOUR):
            again[k] = start
            if q.before is not None:
                before.append(q.before)
        else:
            again[k] = late[k] = start
    state.newest = newest

    parts = [fresh, _frame(spark, before)]
    rolled = [(d, n, low, high) for d, n, low, high in state.spans() if (d, n) not in fresh_names]
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
    run.flags, run.open_flags = _write_flags(spark, out, state, starts, rules, flag_days, full)


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
    spark: SparkSession,
    out: Path,
    state: State,
    starts: dict[Key, int],
    rules: anomalies.Rules,
    days: int,
    full: bool,
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
    if full:
        minutes = _stored(spark, out, "minute", None)
        episodes = anomalies.flags(minutes, rules, newest)
    else:
        # The minute before each redo's first, for its backlog growth and continuity.
        minutes = (
            _stored(spark, out, "minute", min(redo.values()) - 2 * MINUTE)
            .join(_starts(spark, redo), KEY)
            .where(_millis("bucket_start") >= F.col("_from") - 2 * MINUTE)
            .drop("_from")
        )
        episodes = (
            anomalies.flags(minutes, rules, newest)
            .join(_starts(spark, redo), KEY)
            .where(_millis("start") >= F.col("_from"))
            .drop("_from")
        )
    made = episodes.select(
        *KEY, "kind", _millis("start").alias("start"), _millis("end").alias("end"),
        "intervals", "figures",
    ).toArrow()  # fmt: skip
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
