"""The snapshot lake, the one contract between its writer (the console's snapshot task,
dashboard/lake.py) and its reader (the pipeline): Parquet files in Hive-style
``date=YYYY-MM-DD`` folders with the columns of ``SCHEMA``.

``SCHEMA`` (pyarrow) is the one definition; Spark's schema is derived from it when a job
asks (``spark_schema()``), so that the console, which writes the lake, imports neither
pyspark nor a JVM.
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

PARTITION = "date="

SCHEMA = pa.schema(
    [
        ("connection", pa.string()),
        ("namespace", pa.string()),
        ("queue", pa.string()),
        ("taken_at", pa.timestamp("ms", tz="UTC")),  # the Redis server's TIME
        ("msgs", pa.int64()),
        ("hiddenmsgs", pa.int64()),
        ("inflight", pa.int64()),
        ("delayed", pa.int64()),
        ("totalsent", pa.int64()),
        ("totalrecv", pa.int64()),
        ("oldest_age", pa.float64()),  # seconds; null: no visible message
        ("created", pa.int64()),  # the queue's creation, epoch s: a change = counters reset
    ]
)


@cache
def spark_schema() -> StructType:
    """``SCHEMA`` as Spark types (timestamps as Spark's UTC instants)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(SCHEMA)


def folder(lake_dir: Path, day: dt.date) -> Path:
    return lake_dir / f"{PARTITION}{day.isoformat()}"


def files(lake_dir: Path) -> dict[dt.date, list[str]]:
    """The lake's finished files by day: their names, sorted. Files still being written
    (dot names) and folders that are not days are left out."""
    found: dict[dt.date, list[str]] = {}
    if not lake_dir.is_dir():
        return found
    for entry in lake_dir.iterdir():
        if not (entry.is_dir() and entry.name.startswith(PARTITION)):
            continue
        try:
            day = dt.date.fromisoformat(entry.name.removeprefix(PARTITION))
        except ValueError:
            continue
        names = sorted(
            f.name
            for f in entry.iterdir()
            if f.suffix == ".parquet" and not f.name.startswith((".", "_")) and f.is_file()
        )
        if names:
            found[day] = names
    return dict(sorted(found.items()))


def path(lake_dir: Path, day: dt.date, name: str) -> str:
    return str(folder(lake_dir, day) / name)


def read(spark: SparkSession, lake_dir: Path, days: dict[dt.date, list[str]]) -> DataFrame:
    """The snapshots of the given files (by day), with the lake's schema."""
    paths = [path(lake_dir, day, name) for day, names in days.items() for name in names]
    if not paths:
        return spark.createDataFrame([], spark_schema())
    return spark.read.schema(spark_schema()).parquet(*paths)
