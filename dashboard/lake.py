"""The snapshot lake: every snapshot's rows as Parquet files the Spark pipeline reads.

    RSMQ_LAKE_DIR/date=2026-11-21/1763683200000-<uuid>.parquet

One file per snapshot run and day (Hive-style ``date=`` partitions: Spark and pyarrow
read ``date`` as a column). Files appear whole (written under a dot name, then renamed:
readers skip dot files), and are never changed; retention removes whole days.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

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
PARTITION = "date="


def _day(ms: int) -> dt.date:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).date()


def append(lake_dir: Path, rows: Sequence[Mapping[str, Any]]) -> list[Path]:
    """Write rows (``SCHEMA``'s fields; ``taken_at`` in epoch ms) as new files, one per
    day they fall on; returns the files. On failure none of them is left behind."""
    by_day: dict[dt.date, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        by_day[_day(row["taken_at"])].append(row)
    written: list[Path] = []
    try:
        for day, day_rows in sorted(by_day.items()):
            folder = lake_dir / f"{PARTITION}{day.isoformat()}"
            folder.mkdir(parents=True, exist_ok=True)
            first = min(r["taken_at"] for r in day_rows)
            path = folder / f"{first}-{uuid.uuid4().hex}.parquet"
            tmp = folder / f".{path.name}.tmp"
            table = pa.Table.from_pylist(list(day_rows), schema=SCHEMA)
            pq.write_table(table, tmp, compression="zstd")
            os.replace(tmp, path)
            written.append(path)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    return written


def days(lake_dir: Path) -> list[dt.date]:
    """The days the lake holds, oldest first."""
    if not lake_dir.is_dir():
        return []
    found = []
    for entry in lake_dir.iterdir():
        if entry.is_dir() and entry.name.startswith(PARTITION):
            try:
                found.append(dt.date.fromisoformat(entry.name.removeprefix(PARTITION)))
            except ValueError:
                continue  # not one of ours
    return sorted(found)


def prune(lake_dir: Path, before: dt.datetime) -> list[dt.date]:
    """Remove the days that end before ``before``: a day goes once all of it is older."""
    gone = [day for day in days(lake_dir) if day < before.astimezone(dt.UTC).date()]
    for day in gone:
        shutil.rmtree(lake_dir / f"{PARTITION}{day.isoformat()}")
    return gone


def read(lake_dir: Path) -> pa.Table:
    """The whole lake as one table, with its ``date`` partition column."""
    return ds.dataset(
        lake_dir, format="parquet", partitioning="hive", schema=_with_date()
    ).to_table()


def _with_date() -> pa.Schema:
    return SCHEMA.append(pa.field("date", pa.date32()))
