"""The snapshot lake: every snapshot's rows as Parquet files the Spark pipeline reads.

    RSMQ_LAKE_DIR/date=2026-11-21/1763683200000-<uuid>.parquet

One file per snapshot run and day (Hive-style ``date=`` partitions: Spark and pyarrow
read ``date`` as a column), with the columns of the lake's one contract,
``pipeline.lake.SCHEMA``. Files appear whole (written under a dot name, then renamed:
readers skip dot files); the pipeline's hourly run compacts the files of each finished
hour into one (pipeline/lake.py); retention removes whole days.
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
import pyarrow.parquet as pq

from pipeline.lake import PARTITION, SCHEMA, folder


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
            where = folder(lake_dir, day)
            where.mkdir(parents=True, exist_ok=True)
            first = min(r["taken_at"] for r in day_rows)
            path = where / f"{first}-{uuid.uuid4().hex}.parquet"
            tmp = where / f".{path.name}.tmp"
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
        shutil.rmtree(folder(lake_dir, day))
    return gone
