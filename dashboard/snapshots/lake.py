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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.lake import PARTITION, SCHEMA, folder

DAY_MS = 86_400_000
EPOCH = dt.date(1970, 1, 1)


def append(lake_dir: Path, rows: Sequence[Mapping[str, Any]]) -> list[Path]:
    """Write rows (``SCHEMA``'s fields; ``taken_at`` in epoch ms) as new files, one per
    day they fall on; returns the files. On failure none of them is left behind."""
    return append_table(lake_dir, pa.Table.from_pylist(list(rows), schema=SCHEMA))


def append_table(lake_dir: Path, table: pa.Table) -> list[Path]:
    """``append`` of a table with ``SCHEMA``: a snapshot of 100,000 queues is built
    column by column, without a dict per row."""
    taken = table.column("taken_at").cast(pa.int64())
    day_numbers = pc.divide(taken, DAY_MS)  # epoch days (integer division)
    written: list[Path] = []
    try:
        for number in sorted(pc.unique(day_numbers).to_pylist()):
            on_day = pc.equal(day_numbers, number)
            part = table if pc.all(on_day).as_py() else table.filter(on_day)
            where = folder(lake_dir, EPOCH + dt.timedelta(days=number))
            where.mkdir(parents=True, exist_ok=True)
            first = pc.min(part.column("taken_at").cast(pa.int64())).as_py()
            path = where / f"{first}-{uuid.uuid4().hex}.parquet"
            tmp = where / f".{path.name}.tmp"
            pq.write_table(part, tmp, compression="zstd")
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
