"""The snapshot lake as the pipeline reads it: Parquet files in Hive-style
``date=YYYY-MM-DD`` folders, written whole by the console's snapshot task
(dashboard/lake.py, whose SCHEMA this mirrors) and never changed afterwards.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

PARTITION = "date="

SNAPSHOTS = StructType(
    [
        StructField("connection", StringType()),
        StructField("namespace", StringType()),
        StructField("queue", StringType()),
        StructField("taken_at", TimestampType()),  # the Redis server's TIME
        StructField("msgs", LongType()),
        StructField("hiddenmsgs", LongType()),
        StructField("inflight", LongType()),
        StructField("delayed", LongType()),
        StructField("totalsent", LongType()),
        StructField("totalrecv", LongType()),
        StructField("oldest_age", DoubleType()),  # s; null: no visible message
        StructField("created", LongType()),  # epoch s: a change = the counters were reset
    ]
)


def files(lake_dir: Path) -> dict[dt.date, list[str]]:
    """The lake's finished files by day: their names, sorted. Files still being written
    (dot names) and folders that are not days are left out."""
    found: dict[dt.date, list[str]] = {}
    if not lake_dir.is_dir():
        return found
    for folder in lake_dir.iterdir():
        if not (folder.is_dir() and folder.name.startswith(PARTITION)):
            continue
        try:
            day = dt.date.fromisoformat(folder.name.removeprefix(PARTITION))
        except ValueError:
            continue
        names = sorted(
            f.name
            for f in folder.iterdir()
            if f.suffix == ".parquet" and not f.name.startswith((".", "_")) and f.is_file()
        )
        if names:
            found[day] = names
    return dict(sorted(found.items()))


def path(lake_dir: Path, day: dt.date, name: str) -> str:
    return str(lake_dir / f"{PARTITION}{day.isoformat()}" / name)


def read(spark: SparkSession, lake_dir: Path, days: dict[dt.date, list[str]]) -> DataFrame:
    """The snapshots of the given files (by day), with the lake's schema."""
    paths = [path(lake_dir, day, name) for day, names in days.items() for name in names]
    if not paths:
        return spark.createDataFrame([], SNAPSHOTS)
    return spark.read.schema(SNAPSHOTS).parquet(*paths)
