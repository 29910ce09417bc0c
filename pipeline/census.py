"""The census: what the messages of each queue look like right now, from the ``rsmq``
data source (source.py): counts by state, the receive-count (rc) distribution, age and
size histograms, and the top poison candidates (messages received ``min_rc`` times or
more: handed out again and again, never deleted).

Ages are measured against the Redis clock of the read (``read_at``), states as the core
tells them: visible (score <= now), in flight (hidden, rc >= 1), delayed (hidden, rc 0).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from .results import HISTOGRAMS

KEY = ["connection", "namespace", "queue"]


def with_state(messages: DataFrame) -> DataFrame:
    """Messages with their ``state`` and ``age`` (s since sent, at the read)."""
    state = (
        F.when(F.col("visible_at") <= F.col("read_at"), "visible")
        .when(F.col("rc") >= 1, "inflight")
        .otherwise("delayed")
    )
    age = (F.col("read_at") - F.col("sent")) / 1000
    return messages.withColumn("state", state).withColumn("age", age)


def summary(messages: DataFrame) -> DataFrame:
    """One row per queue: messages by state, the highest rc, body sizes, the oldest age."""
    m = with_state(messages)
    return m.groupBy(*KEY).agg(
        F.count("*").alias("messages"),
        F.count_if(F.col("state") == "visible").alias("visible"),
        F.count_if(F.col("state") == "inflight").alias("inflight"),
        F.count_if(F.col("state") == "delayed").alias("delayed"),
        F.max("rc").alias("rc_max"),
        F.sum("size").alias("bytes"),
        F.max("size").alias("size_max"),
        F.max("age").alias("age_max"),
        F.max("read_at").alias("read_at"),
    )


def _bin(value: Column, bins: Sequence[tuple[str, float | None]]) -> Column:
    """The bin's index (0-based) of a value."""
    out = None
    for i, (_, upper) in enumerate(bins):
        if upper is None:
            return out.otherwise(i) if out is not None else F.lit(i)
        out = (out if out is not None else F).when(value < upper, i)
    raise ValueError("the last bin must be open-ended")


def histograms(messages: DataFrame) -> DataFrame:
    """Per queue and histogram ("rc", "age", "size"): messages per bin, empty bins left
    out. Columns: the key, histogram, bin (its index), label, messages."""
    m = with_state(messages)
    parts = []
    for name, bins in HISTOGRAMS.items():
        value = F.col(name)
        labels = F.array(*(F.lit(label) for label, _ in bins))
        # an age that is unknown (an id with no time in it, go-rsmq's) is in no bin
        rows = m.where(value.isNotNull()) if name == "age" else m
        parts.append(
            rows.groupBy(*KEY, _bin(value, bins).alias("bin"))
            .agg(F.count("*").alias("messages"))
            .withColumn("histogram", F.lit(name))
            .withColumn("label", labels[F.col("bin")])
            .select(*KEY, "histogram", "bin", "label", "messages")
        )
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def poison(messages: DataFrame, min_rc: int = 5, top: int = 20) -> DataFrame:
    """Per queue, the ``top`` messages received at least ``min_rc`` times: most received
    first, then the oldest. Columns: the key, rank (1-based), id, rc, sent, fr, age,
    size, state, body (null unless read)."""
    w = Window.partitionBy(*KEY).orderBy(F.col("rc").desc(), F.col("sent"), F.col("id"))
    return (
        with_state(messages)
        .where(F.col("rc") >= min_rc)
        .withColumn("rank", F.row_number().over(w))
        .where(F.col("rank") <= top)
        .select(*KEY, "rank", "id", "rc", "sent", "fr", "age", "size", "state", "body")
    )
