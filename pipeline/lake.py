"""The snapshot lake, the one contract between its writer (the console's snapshot task,
dashboard/snapshots/lake.py) and its reader (the pipeline): Parquet files in Hive-style
``date=YYYY-MM-DD`` folders with the columns of ``SCHEMA``.

``SCHEMA`` (pyarrow) is the one definition; Spark's schema is derived from it when a job
asks (``spark_schema()``), so that the console, which writes the lake, imports neither
pyspark nor a JVM.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from collections.abc import Container, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

PARTITION = "date="
Known = Mapping[str, Container[str]]  # file names by day (ISO)
NOTHING: Known = {}

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
        # Wait (send -> first receive) and processing (first receive -> delete, recorded
        # by the project's worker) of the messages since the previous snapshot, seconds;
        # null: none seen (and in files written before these columns existed).
        ("wait_p50", pa.float64()),
        ("wait_p95", pa.float64()),
        ("wait_p99", pa.float64()),
        ("wait_samples", pa.int64()),
        ("processing_p50", pa.float64()),
        ("processing_p95", pa.float64()),
        ("processing_p99", pa.float64()),
        ("processing_samples", pa.int64()),
        ("timings_sampled", pa.bool_()),  # true: from a sample of the messages, not all
        # Of the wait samples, those over the queue's SLO (the console's
        # RSMQ_OLDEST_AGE_SLO(S)): its wait-time SLO's bad events; null as above.
        ("wait_slow", pa.int64()),
    ]
)


@cache
def spark_schema() -> StructType:
    """``SCHEMA`` as Spark types (timestamps as Spark's UTC instants)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(SCHEMA)


def folder(lake_dir: Path, day: dt.date) -> Path:
    return lake_dir / f"{PARTITION}{day.isoformat()}"


def files(lake_dir: Path, known: Known = NOTHING) -> dict[dt.date, list[str]]:
    """The lake's finished files by day: their names, sorted. Files still being written
    (dot names), files a compacted file replaces, and folders that are not days are left
    out: every snapshot is in exactly one of the files listed. Compacted files ``known``
    (by day, ISO) are not opened: the files they replaced were gone before anyone knew
    them (``compact`` removes them first)."""
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
        names = {
            f.name
            for f in entry.iterdir()
            if f.suffix == ".parquet" and not f.name.startswith((".", "_")) and f.is_file()
        }
        trusted = known.get(day.isoformat(), ())
        replaced = {
            old
            for name in names
            if is_compacted(name) and name not in trusted
            for old in covers(entry / name)
        }
        if names - replaced:
            found[day] = sorted(names - replaced)
    return dict(sorted(found.items()))


def path(lake_dir: Path, day: dt.date, name: str) -> str:
    return str(folder(lake_dir, day) / name)


def read(spark: SparkSession, lake_dir: Path, days: dict[dt.date, list[str]]) -> DataFrame:
    """The snapshots of the given files (by day), with the lake's schema."""
    paths = [path(lake_dir, day, name) for day, names in days.items() for name in names]
    if not paths:
        return spark.createDataFrame([], spark_schema())
    return spark.read.schema(spark_schema()).parquet(*paths)


# -- compaction --------------------------------------------------------------------------
#
# The snapshot task writes one small file per run (8,640 a day at 10 s); Spark reads a few
# large ones far faster. ``compact`` rewrites a group of a day's files into one, and that
# file names the files it replaces in its own footer (``COVERS``). Its rename is the one
# moment the lake changes: before it, readers see the small files; after it, ``files()``
# lists the compacted file and hides the ones it covers, whether or not they are deleted
# yet. A crash leaves either a dot file (ignored, removed by the next compaction) or
# covered files (hidden, removed by the next compaction): never a snapshot twice or not
# at all.

COVERS = b"rsmq.covers"
COMPACTED = "-compact-"


def is_compacted(name: str) -> bool:
    return COMPACTED in name


def covers(file: Path) -> list[str]:
    """The names of the files a compacted file replaces (in its folder)."""
    try:
        meta = pq.read_schema(file).metadata or {}
    except FileNotFoundError:
        return []
    names: list[str] = json.loads(meta.get(COVERS, b"[]"))
    return names


def span(file: Path) -> tuple[int, int]:
    """The first and last ``taken_at`` of a file's rows, epoch ms."""
    at = pq.read_table(file, columns=["taken_at"]).column(0)
    ms = pc.cast(pc.cast(at, pa.timestamp("ms", tz="UTC")), pa.int64())
    low, high = pc.min_max(ms).values()
    return low.as_py(), high.as_py()


def compact(lake_dir: Path, day: dt.date, names: Sequence[str]) -> str:
    """Rewrite ``names`` (files of ``day``) as one file, then remove them; returns its
    name. Rows in time order, so that a reader filtering by time skips row groups."""
    where = folder(lake_dir, day)
    table = pa.concat_tables(pq.read_table(where / n, schema=SCHEMA) for n in names)
    table = table.sort_by([("taken_at", "ascending"), ("queue", "ascending")])
    first = pc.min(table.column("taken_at")).cast(pa.int64()).as_py()
    name = f"{first}{COMPACTED}{uuid.uuid4().hex}.parquet"
    tmp = where / f".{name}.tmp"
    meta = {COVERS: json.dumps(sorted(names)).encode()}
    pq.write_table(table.replace_schema_metadata(meta), tmp, compression="zstd")
    os.replace(tmp, where / name)
    for n in names:
        (where / n).unlink(missing_ok=True)
    return name


def clean(lake_dir: Path, known: Known = NOTHING) -> int:
    """Remove what a compaction that died left behind: its unfinished dot files, and
    files a compacted file (not ``known``: see ``files``) covers. Returns how many files
    went."""
    gone = 0
    for day in files(lake_dir, known):
        where = folder(lake_dir, day)
        trusted = known.get(day.isoformat(), ())
        for f in where.iterdir():
            if f.name.startswith(".") and COMPACTED in f.name and f.name.endswith(".tmp"):
                f.unlink(missing_ok=True)
                gone += 1
            elif is_compacted(f.name) and not f.name.startswith(".") and f.name not in trusted:
                for n in covers(f):
                    if (where / n).exists():
                        (where / n).unlink(missing_ok=True)
                        gone += 1
    return gone
