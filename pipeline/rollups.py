"""Snapshots into per-minute and per-hour rollups of each queue.

The same rules as the dashboard's own rates (dashboard/snapshots/rates.py), in window functions:

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

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession, Window, WindowSpec
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from . import lake

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


# Snapshots of a queue in a total order: by time, then (two at one instant) by every
# other column, the highest first. Which of two readings at one instant counts never
# depends on how the files were laid out.
TIE_BREAK = ("totalsent", "totalrecv", "created", "msgs", "hiddenmsgs", "inflight", "delayed",
             "oldest_age")  # fmt: skip


def in_order() -> list[Column]:
    return [F.col("taken_at"), *(F.col(c).desc_nulls_last() for c in TIE_BREAK)]


def deduplicated(snapshots: DataFrame) -> DataFrame:
    """One snapshot per queue and instant (the file read twice, the same reading stored
    twice): the first in ``in_order()``. Partitioned by queue like ``intervals``' window,
    so both share one shuffle."""
    w = Window.partitionBy(*KEY).orderBy(*in_order())
    before = F.lag("taken_at").over(w)
    return (
        snapshots.withColumn("_before", before)
        .where(F.col("_before").isNull() | (F.col("_before") != F.col("taken_at")))
        .drop("_before")
    )


def _growth(counter: str, reset: Column) -> Column:
    before = F.lag(counter).over(_by_queue())
    after = F.col(counter)
    return (
        F.when(before.isNull(), F.lit(None).cast("long"))
        .when(reset | (after < before), after)
        .otherwise(after - before)
    )


def _by_queue() -> WindowSpec:
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


def rollup(intervals: DataFrame, grains: Sequence[str] = ("minute",)) -> DataFrame:
    """Buckets of each grain ("minute", "hour") per queue, from ``intervals(...)``, in one
    aggregation: each snapshot counts once per grain (``grain`` tells the rows apart)."""
    buckets = F.explode(
        F.array(
            *(
                F.struct(
                    F.lit(g).alias("grain"),
                    (F.floor(F.col("at") / GRAINS[g]) * GRAINS[g]).alias("bucket"),
                )
                for g in grains
            )
        )
    )
    ended = F.when(F.col("prev_at").isNotNull(), F.col("at"))
    seconds = (F.max(ended) - F.min("prev_at")) / 1000  # first interval's start to last end
    out = (
        intervals.withColumn("_b", buckets)
        .select("*", "_b.grain", "_b.bucket")
        .groupBy(*KEY, "grain", "bucket")
        .agg(
            F.count("*").alias("snapshots"),
            F.sum("sent").alias("sent"),
            F.sum("received").alias("received"),
            seconds.alias("seconds"),
            F.avg("msgs").alias("backlog_avg"),
            F.max("msgs").alias("backlog_max"),
            F.max_by("msgs", "at").alias("backlog_last"),
            F.min("visible").alias("visible_min"),
            F.avg("visible").alias("visible_avg"),
            F.max("visible").alias("visible_max"),
            F.avg("hiddenmsgs").alias("hidden_avg"),
            F.max("hiddenmsgs").alias("hidden_max"),
            F.avg("inflight").alias("inflight_avg"),
            F.max("inflight").alias("inflight_max"),
            F.avg("delayed").alias("delayed_avg"),
            F.max("delayed").alias("delayed_max"),
            F.max("oldest_age").alias("oldest_age_max"),
        )
    )
    start = F.timestamp_millis(F.col("bucket"))
    return (
        out.withColumn("bucket_start", start)
        .withColumn("send_rate", _per_second("sent"))
        .withColumn("receive_rate", _per_second("received"))
        .withColumn("date", F.to_date(start))
        .select(*ROLLUP_COLUMNS)
    )


def _per_second(count: str) -> Column:
    return F.when(F.col("seconds") > 0, F.col(count) / F.col("seconds"))


def schema(spark: SparkSession) -> StructType:
    """The rollups' columns and types (to read them back without looking at the files)."""
    return rollups(spark.createDataFrame([], lake.spark_schema())).schema


def rollups(snapshots: DataFrame) -> DataFrame:
    """Minute and hour buckets of every queue, one DataFrame (``grain`` tells them apart)."""
    return rollup(intervals(snapshots), tuple(GRAINS))
