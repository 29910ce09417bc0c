"""The rollups run as Spark jobs (a large increment, a late file, ``--full``): read
the snapshots to redo, roll them up (rollups.py), replace their partitions, remember
each queue's last snapshots, redo their flags (anomalies.py)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, IntegerType, LongType, StructField, StructType

from . import anomalies, lake, results, rollups
from . import state as saved
from .flag_store import _write_flags
from .plan import HOUR, KEY, MINUTE, PARTITIONS, Plan, RollupRun, _instant
from .state import Key, Row, State


def _read(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    if not paths:
        return spark.createDataFrame([], lake.spark_schema())
    return spark.read.schema(lake.spark_schema()).parquet(*paths)


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
