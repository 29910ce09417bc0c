"""The jobs: read, transform (rollups.py, anomalies.py, census.py), write Parquet.

Output, under one folder (``out``):

    rollups/grain=minute|hour/date=YYYY-MM-DD/*.parquet   per queue per bucket
    flags/*.parquet                                       anomaly episodes
    census/<part>/*.parquet                               summary, histograms, poison
    _state.json                                           the rollups' watermark

(pipeline/results.py knows these paths, and reads them for the console.)

**Incremental and idempotent rollups.** The state names every lake file already rolled
up. A run rolls up the days that got new files — late ones included, whatever their
date — and the day after each (its first interval starts in the day before), reading
one more day back for those intervals, and replaces exactly those days' partitions.
A run with nothing new changes nothing; a run from scratch (``full``) writes the same
rows as any sequence of incremental runs over the same files. The state is written
last, so a run that fails half-way is simply done again by the next one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from . import anomalies, census, lake, results, rollups, source


@dataclass
class RollupRun:
    """What one rollups run did."""

    new_files: int = 0
    days: list[dt.date] = field(default_factory=list)  # the days rolled up again
    rows: int = 0  # rollup rows written (minutes and hours)
    flags: int = 0
    open_flags: int = 0
    watermark: int | None = None  # the newest snapshot rolled up, epoch ms

    def as_dict(self) -> dict[str, object]:
        return {
            "new_files": self.new_files,
            "days": [d.isoformat() for d in self.days],
            "rows": self.rows,
            "flags": self.flags,
            "open_flags": self.open_flags,
            "watermark": self.watermark,
        }


def _load_state(out: Path) -> dict[str, object]:
    try:
        state: dict[str, object] = json.loads(results.state_file(out).read_text())
        return state
    except FileNotFoundError:
        return {"files": {}, "watermark": None}


def _save_state(out: Path, state: dict[str, object]) -> None:
    final = results.state_file(out)
    tmp = final.with_name(f".{final.name}.tmp")
    tmp.write_text(json.dumps(state, sort_keys=True))
    os.replace(tmp, final)


def run_rollups(
    spark: SparkSession,
    lake_dir: Path,
    out: Path,
    rules: anomalies.Rules | None = None,
    full: bool = False,
    flag_days: int = 7,
) -> RollupRun:
    """Roll up what is new in the lake (everything with ``full``), then flag anomalies
    over the last ``flag_days`` days of minutes."""
    rules = rules or anomalies.Rules()
    out.mkdir(parents=True, exist_ok=True)
    state = {"files": {}, "watermark": None} if full else _load_state(out)
    done: dict[str, list[str]] = state["files"]  # type: ignore[assignment]
    found = lake.files(lake_dir)
    new = {d: sorted(set(names) - set(done.get(d.isoformat(), []))) for d, names in found.items()}
    new = {d: names for d, names in new.items() if names}
    run = RollupRun(new_files=sum(len(n) for n in new.values()))
    run.watermark = state["watermark"]  # type: ignore[assignment]
    if not new:
        return run

    one = dt.timedelta(days=1)
    days = set(new) | {d + one for d in new if d + one in found}
    read_days = days | {d - one for d in days if d - one in found}
    snapshots = lake.read(spark, lake_dir, {d: found[d] for d in sorted(read_days)})
    seen = Observation("snapshots")
    snapshots = snapshots.observe(seen, F.max(F.unix_millis("taken_at")).alias("newest"))
    made = Observation("rollups")
    rows = rollups.rollups(snapshots).where(F.col("date").isin(*(F.lit(d) for d in sorted(days))))
    rows = rows.observe(made, F.count(F.lit(1)).alias("rows"))

    target = results.rollups_dir(out)
    if full and target.exists():
        shutil.rmtree(target)
    # Dynamic partition overwrite (pipeline/spark.py): only these days' partitions change.
    rows.write.mode("overwrite").partitionBy("grain", "date").parquet(str(target))
    run.days = sorted(days)
    run.rows = made.get["rows"]
    newest = seen.get["newest"]
    if newest is not None and (run.watermark is None or newest > run.watermark):
        run.watermark = newest

    run.flags, run.open_flags = _write_flags(spark, out, rules, flag_days)
    _save_state(
        out,
        {"files": {d.isoformat(): names for d, names in found.items()}, "watermark": run.watermark},
    )
    return run


def _write_flags(
    spark: SparkSession, out: Path, rules: anomalies.Rules, days: int
) -> tuple[int, int]:
    """Flags over the last ``days`` days of minute rollups, replacing the previous ones."""
    minute_days = results.days(out, "minute")
    if not minute_days:
        return 0, 0
    since = minute_days[-1] - dt.timedelta(days=days - 1)
    minutes = (
        spark.read.schema(rollups.schema(spark))
        .parquet(str(results.rollups_dir(out)))
        .where((F.col("grain") == "minute") & (F.col("date") >= F.lit(since)))
    )
    counted = Observation("flags")
    flags = anomalies.flags(minutes, rules).observe(
        counted, F.count(F.lit(1)).alias("flags"), F.count_if(F.col("end").isNull()).alias("open")
    )
    flags.coalesce(1).write.mode("overwrite").parquet(str(results.flags_dir(out)))
    return counted.get["flags"], counted.get["open"]


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
