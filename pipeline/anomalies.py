"""Anomaly flags from the minute rollups: runs of consecutive minutes in which a rule
holds, as episodes with a start, an end (null while it still holds) and the figures
that triggered it.

* ``backlog_growing``: the backlog at the end of each minute higher than at the end of
  the minute before, ``growth_intervals`` minutes in a row;
* ``consumers_stalled``: visible messages all minute long and not one received,
  ``stall_intervals`` minutes in a row;
* ``oldest_age``: the oldest visible message older than the queue's SLO (seconds;
  ``slo``, or an override by queue name or ``connection/namespace/queue``);
* ``redelivery_storm``: messages received far faster than they are sent (receive rate
  at least ``storm_factor`` times the send rate and ``storm_min_rate``/s above it) while
  the backlog does not shrink: the same messages come back again and again, their rc
  growing (totalrecv - totalsent growth is the proxy), ``storm_intervals`` minutes in a row.

Minutes are consecutive when they follow each other without a missing minute: a gap in
the snapshots ends a run. An episode is open while it reaches its queue's newest minute
and that minute is at most ``open_grace`` minutes behind the lake's newest (a queue no
longer snapshotted, deleted, or of a connection no longer snapshotted, closes its
episodes), and then ends where its last minute ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from .rollups import KEY, MINUTE

FLAG_COLUMNS = [*KEY, "kind", "start", "end", "intervals", "figures"]
KINDS = ("backlog_growing", "consumers_stalled", "oldest_age", "redelivery_storm")


@dataclass(frozen=True)
class Rules:
    growth_intervals: int = 5
    stall_intervals: int = 5
    slo: float = 300.0  # s
    slos: Mapping[str, float] = field(default_factory=dict)  # "queue" or "conn/ns/queue"
    storm_factor: float = 5.0
    storm_min_rate: float = 1.0  # receives per second above the send rate
    storm_intervals: int = 3
    open_grace: int = 2  # minutes


def _figures() -> dict[str, dict[str, Column]]:
    """Each kind's figures: name -> how the episode's minutes make it (a function: columns
    need a running Spark session)."""
    return {
        "backlog_growing": {
            "backlog_from": F.min_by("prev_backlog", "bucket"),
            "backlog_to": F.max_by("backlog_last", "bucket"),
        },
        "consumers_stalled": {"visible_max": F.max("visible_max"), "received": F.sum("received")},
        "oldest_age": {"oldest_age_max": F.max("oldest_age_max"), "slo": F.max("slo")},
        "redelivery_storm": {
            "received": F.sum("received"),
            "sent": F.sum("sent"),
            "receive_rate_max": F.max("receive_rate"),
            "redelivered": F.sum(F.col("received") - F.col("sent")),
        },
    }


def flags(minutes: DataFrame, rules: Rules = Rules(), newest: int | None = None) -> DataFrame:
    """Every rule's episodes over minute rollups (``rollups.rollup(...)``); ``newest``:
    the lake's newest minute (epoch ms; default: the newest of ``minutes``).

    One pass: each minute becomes one row per rule (hit or not), runs are numbered per
    queue and rule (gaps and islands: a run starts at a hit whose minute before was no
    hit, or is missing), and each run of hits long enough is an episode.
    """
    by_queue = Window.partitionBy(*KEY)
    w = by_queue.orderBy("bucket")
    rows = (
        minutes.withColumn("bucket", F.unix_millis("bucket_start"))
        .withColumn("prev_backlog", F.lag("backlog_last").over(w))
        .withColumn("follows", (F.col("bucket") - F.lag("bucket").over(w)) == MINUTE)
        .withColumn("queue_newest", F.max("bucket").over(by_queue))
    )
    if newest is None:
        lake = minutes.agg(F.max(F.unix_millis("bucket_start")).alias("lake_newest"))
        rows = rows.crossJoin(F.broadcast(lake))
    else:
        rows = rows.withColumn("lake_newest", F.lit(newest))
    rows = _with_slo(rows, rules)
    follows = F.coalesce(F.col("follows"), F.lit(False))
    shrank = follows & (F.col("backlog_last") < F.col("prev_backlog"))
    hits = {
        "backlog_growing": follows & (F.col("backlog_last") > F.col("prev_backlog")),
        "consumers_stalled": (F.col("visible_min") > 0) & (F.col("received") == 0),
        "oldest_age": F.col("oldest_age_max") > F.col("slo"),
        "redelivery_storm": (F.col("receive_rate") >= rules.storm_factor * F.col("send_rate"))
        & (F.col("receive_rate") - F.col("send_rate") >= rules.storm_min_rate)
        & ~F.coalesce(shrank, F.lit(False)),
    }
    at_least = {
        "backlog_growing": rules.growth_intervals,
        "consumers_stalled": rules.stall_intervals,
        "oldest_age": 1,
        "redelivery_storm": rules.storm_intervals,
    }
    per_rule = F.explode(
        F.array(
            *(
                F.struct(F.lit(kind).alias("kind"), F.coalesce(hit, F.lit(False)).alias("hit"))
                for kind, hit in hits.items()
            )
        )
    )
    rw = Window.partitionBy(*KEY, "kind").orderBy("bucket")
    continues = F.coalesce(F.lag("hit").over(rw) & follows, F.lit(False))
    runs = (
        rows.withColumn("rule", per_rule)
        .select("*", "rule.kind", "rule.hit")
        .withColumn("starts", (F.col("hit") & ~continues).cast("int"))
        .withColumn("run", F.sum("starts").over(rw.rowsBetween(Window.unboundedPreceding, 0)))
        .where("hit")
    )
    kinds = _figures()
    figures = {
        f"{kind}.{name}": agg.cast("double")
        for kind, fs in kinds.items()
        for name, agg in fs.items()
    }
    episodes = runs.groupBy(*KEY, "kind", "run").agg(
        F.min("bucket").alias("first"),
        F.max("bucket").alias("last"),
        F.count("*").alias("intervals"),
        F.max("queue_newest").alias("queue_newest"),
        F.max("lake_newest").alias("lake_newest"),
        *(agg.alias(name) for name, agg in figures.items()),
    )
    long_enough = F.col("intervals") >= F.coalesce(
        *(F.when(F.col("kind") == k, F.lit(n)) for k, n in at_least.items())
    )
    figures_json = F.coalesce(
        *(
            F.when(
                F.col("kind") == kind,
                F.to_json(F.struct(*(F.col(f"`{kind}.{n}`").alias(n) for n in fs))),
            )
            for kind, fs in kinds.items()
        )
    )
    is_open = (F.col("last") == F.col("queue_newest")) & (
        F.col("queue_newest") >= F.col("lake_newest") - rules.open_grace * MINUTE
    )
    return (
        episodes.where(long_enough)
        .withColumn("start", F.timestamp_millis("first"))
        .withColumn("end", F.when(~is_open, F.timestamp_millis(F.col("last") + MINUTE)))
        .withColumn("figures", figures_json)
        .select(*FLAG_COLUMNS)
    )


def _with_slo(rows: DataFrame, rules: Rules) -> DataFrame:
    """Each row's SLO: an override for its ``connection/namespace/queue``, else for its
    queue name, else the default."""
    if not rules.slos:
        return rows.withColumn("slo", F.lit(float(rules.slo)))
    overrides = F.create_map(
        *(
            x
            for name, seconds in sorted(rules.slos.items())
            for x in (F.lit(name), F.lit(float(seconds)))
        )
    )
    full = F.concat_ws("/", *KEY)
    return rows.withColumn(
        "slo",
        F.coalesce(
            F.try_element_at(overrides, full),
            F.try_element_at(overrides, F.col("queue")),
            F.lit(float(rules.slo)),
        ),
    )
