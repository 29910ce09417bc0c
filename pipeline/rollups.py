"""Snapshots into per-minute and per-hour rollups of each queue.

The same rules as the dashboard's own rates (dashboard/rates.py), in window functions:

* the messages of an interval between two consecutive snapshots of a queue are the
  counter's growth, or, when it went down or the queue's ``created`` changed (the queue
  was deleted and made again), its whole new value: never negative;
* an interval belongs to the bucket its end falls in, and a bucket's rate is its
  intervals' messages over their real elapsed time, first start to last end: a missed
  snapshot (a gap) gives the average over the gap, not a spike, and no bucket is made up
  for the minutes without a snapshot;
* two snapshots of a queue at the same instant count once.

The counts (backlog = every message of the queue, visible, hidden, in flight, delayed,
oldest visible age) are those of the snapshots taken in the bucket.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from .lake import SNAPSHOTS

KEY = ["connection", "namespace", "queue"]
MINUTE = 60_000
HOUR = 3_600_000
GRAINS = {"minute": MINUTE, "hour": HOUR}  # bucket width, ms

ROLLUP_COLUMNS = [
    *KEY,
    "grain",
    "bucket_start",  # timestamp: the bucket is [bucket_start, bucket_start + width)
    "snapshots",
    "sent",  # messages sent over the bucket's intervals; null: no interval ends here
    "received",
    "seconds",  # the intervals' real elapsed time
    "send_rate",  # messages per second
    "receive_rate",
    "backlog_avg",  # backlog: all messages of the queue (msgs)
    "backlog_max",
    "backlog_last",  # at the bucket's last snapshot
    "visible_min",
    "visible_avg",
    "visible_max",
    "hidden_avg",
    "hidden_max",
    "inflight_avg",
    "inflight_max",
    "delayed_avg",
    "delayed_max",
    "oldest_age_max",  # s; null: nothing visible at any snapshot of the bucket
    "date",  # of bucket_start (UTC): the output's partition
]


def deduplicated(snapshots: DataFrame) -> DataFrame:
    """One snapshot per queue and instant (the file read twice, the same reading stored
    twice): the one with the highest counters, so that the choice never depends on order."""
    w = Window.partitionBy(*KEY, "taken_at").orderBy(
        *(F.col(c).desc_nulls_last() for c in ("totalsent", "totalrecv", "created", "msgs"))
    )
    return snapshots.withColumn("_n", F.row_number().over(w)).where("_n = 1").drop("_n")


def _growth(counter: str, reset: Column) -> Column:
    before = F.lag(counter).over(_by_queue())
    after = F.col(counter)
    return (
        F.when(before.isNull(), F.lit(None).cast("long"))
        .when(reset | (after < before), after)
        .otherwise(after - before)
    )


def _by_queue() -> Window:
    return Window.partitionBy(*KEY).orderBy("at")


def intervals(snapshots: DataFrame) -> DataFrame:
    """Each snapshot (deduplicated) with the interval that ends at it: ``at`` (epoch ms),
    ``prev_at`` and the messages ``sent`` and ``received`` since the queue's snapshot
    before (all null for its first snapshot)."""
    w = _by_queue()
    at = deduplicated(snapshots).withColumn("at", F.unix_millis("taken_at"))
    reset = F.col("created") != F.lag("created").over(w)
    return (
        at.withColumn("prev_at", F.lag("at").over(w))
        .withColumn("sent", _growth("totalsent", reset))
        .withColumn("received", _growth("totalrecv", reset))
        .withColumn("visible", F.col("msgs") - F.col("hiddenmsgs"))
    )


# What a bucket keeps of its snapshots and intervals so that buckets can be merged into
# coarser ones (minutes into hours) without going back to the snapshots.
_SUMS = {"msgs": "backlog", "visible": "visible", "hiddenmsgs": "hidden",
         "inflight": "inflight", "delayed": "delayed"}  # fmt: skip


def _kept() -> list[tuple[str, Column, Callable[[str], Column]]]:
    """What a bucket keeps: (name, how its snapshots make it, how buckets merge it)."""
    ended = F.when(F.col("prev_at").isNotNull(), F.col("at"))
    return [
        ("snapshots", F.count("*"), F.sum),
        ("sent", F.sum("sent"), F.sum),
        ("received", F.sum("received"), F.sum),
        ("first_start", F.min("prev_at"), F.min),  # the first interval's start
        ("last_end", F.max(ended), F.max),  # the last interval's end
        *((f"{name}_sum", F.sum(c), F.sum) for c, name in _SUMS.items()),
        *((f"{name}_max", F.max(c), F.max) for c, name in _SUMS.items()),
        ("visible_min", F.min("visible"), F.min),
        ("last_at", F.max("at"), F.max),
        ("backlog_last", F.max_by("msgs", "at"), lambda c: F.max_by(c, "last_at")),
        ("oldest_age_max", F.max("oldest_age"), F.max),
    ]


def _partials(intervals: DataFrame, width: int) -> DataFrame:
    return (
        intervals.withColumn("bucket", F.floor(F.col("at") / width) * width)
        .groupBy(*KEY, "bucket")
        .agg(*(made.alias(name) for name, made, _ in _kept()))
    )


def _coarser(partials: DataFrame, width: int) -> DataFrame:
    """Buckets merged into buckets ``width`` ms wide (a multiple of theirs)."""
    return (
        partials.withColumn("bucket", F.floor(F.col("bucket") / width) * width)
        .groupBy(*KEY, "bucket")
        .agg(*(merge(name).alias(name) for name, _, merge in _kept()))
    )


def _finished(partials: DataFrame, grain: str) -> DataFrame:
    start = F.timestamp_millis(F.col("bucket"))
    seconds = (F.col("last_end") - F.col("first_start")) / 1000
    averages = [
        (F.col(f"{name}_sum") / F.col("snapshots")).alias(f"{name}_avg") for name in _SUMS.values()
    ]
    return (
        partials.select("*", *averages)
        .withColumn("grain", F.lit(grain))
        .withColumn("bucket_start", start)
        .withColumn("seconds", seconds)
        .withColumn("send_rate", _per_second("sent"))
        .withColumn("receive_rate", _per_second("received"))
        .withColumn("date", F.to_date(start))
        .select(*ROLLUP_COLUMNS)
    )


def rollup(intervals: DataFrame, grain: str) -> DataFrame:
    """Buckets of ``grain`` ("minute" or "hour") per queue, from ``intervals(...)``."""
    return _finished(_partials(intervals, GRAINS[grain]), grain)


def _per_second(count: str) -> Column:
    return F.when(F.col("seconds") > 0, F.col(count) / F.col("seconds"))


def schema(spark: SparkSession) -> StructType:
    """The rollups' columns and types (to read them back without looking at the files)."""
    return rollups(spark.createDataFrame([], SNAPSHOTS)).schema


def rollups(snapshots: DataFrame) -> DataFrame:
    """Minute and hour buckets of every queue, one DataFrame (``grain`` tells them apart)."""
    minutes = _partials(intervals(snapshots), MINUTE)
    return _finished(minutes, "minute").unionByName(_finished(_coarser(minutes, HOUR), "hour"))
