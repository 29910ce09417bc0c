"""The rollups run in this process with pyarrow (a small increment without late files):
``rollup_spark``'s steps with inmemory.py's rules, writing the same rows. A rule changed
in one engine changes in the other: tests/pipeline/test_engines_agree.py holds them equal."""

from __future__ import annotations

import datetime as dt
import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import anomalies, inmemory, lake, results
from . import state as saved
from .flag_store import FLAGS_MS, _write_flags
from .plan import DAY, HOUR, KEY, MINUTE, Plan, RollupRun, _instant, _keyed
from .state import Key, Row, State


def _fresh(paths: Sequence[str]) -> tuple[pa.Table, dict[tuple[dt.date, str], tuple[int, int]]]:
    """The new files' snapshots, read once with pyarrow, and each file's span (Spark pays
    a task's worth of overhead per small file: an hour is 360 of them)."""
    tables, spans = [], {}
    for p in paths:
        table = pq.read_table(p, schema=lake.SCHEMA)
        low, high = pc.min_max(inmemory.millis(table.column("taken_at"))).values()
        folder, name = p.rsplit("/", 2)[-2:]
        day = dt.date.fromisoformat(folder.removeprefix(lake.PARTITION))
        spans[(day, name)] = (low.as_py() or 0, high.as_py() or 0)  # 0: an empty file
        tables.append(table)
    return pa.concat_tables(tables), spans


def _roll_up_here(
    lake_dir: Path,
    out: Path,
    state: State,
    fresh: pa.Table,
    plan: Plan,
    rolled: list[tuple[dt.date, str, int, int]],
    rules: anomalies.Rules,
    flag_days: int,
    run: RollupRun,
) -> None:
    """``_roll_up_spark``'s steps in this process, for an increment without late files."""
    parts = [fresh, _lake_table(plan.before)]
    if plan.again:
        since = min(plan.again.values())
        files = [lake.path(lake_dir, d, n) for d, n, _, high in rolled if high >= since]
        if files:
            found = pa.concat_tables(pq.read_table(f, schema=lake.SCHEMA) for f in files)
            parts.append(_from_start(found, plan.again, "taken_at"))
    snapshots = inmemory.deduplicated(pa.concat_tables(parts))
    made = {
        grain: _from_start(buckets, plan.starts, "bucket_start")
        for grain, buckets in inmemory.rollups(snapshots).items()
    }
    run.rows = sum(t.num_rows for t in made.values())
    for grain, buckets in made.items():
        _replace_here(out, grain, buckets, plan.starts)
    run.days = sorted(set(pc.cast(made["hour"].column("bucket_start"), pa.date32()).to_pylist()))
    for k, last, before in inmemory.remember(snapshots):
        state.queues[k] = saved.Queue(last, before)

    def made_flags(redo: dict[Key, int], newest: int) -> pa.Table:
        if not redo:
            return FLAGS_MS.empty_table()
        since = min(redo.values()) - 2 * MINUTE
        minutes = _from_start(_stored_here(out, since), redo, "bucket_start", -2 * MINUTE)
        found = [
            f
            for f in inmemory.flags(minutes, rules, newest)
            if f["start"] >= redo[(f["connection"], f["namespace"], f["queue"])]
        ]
        return pa.Table.from_pylist(found, schema=FLAGS_MS)

    run.flags, run.open_flags = _write_flags(
        out, state, plan.starts, rules, flag_days, False, made_flags
    )


def _lake_table(rows: Sequence[Row]) -> pa.Table:
    """Lake rows kept in the state (``taken_at`` in epoch ms) as a lake table. A row kept
    before the lake had its later columns (they are nullable) has them as nulls."""
    names = lake.SCHEMA.names
    columns: dict[str, Any] = {
        c: [r[i] if i < len(r) else None for r in rows] for i, c in enumerate(names)
    }
    at = pa.array(columns["taken_at"], pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
    columns["taken_at"] = at
    return pa.table(columns, schema=lake.SCHEMA)


def _from_start(table: pa.Table, starts: dict[Key, int], column: str, shift: int = 0) -> pa.Table:
    """The rows of the queues in ``starts``, from their start (+ ``shift`` ms) on."""
    at = inmemory.millis(table.column(column))
    joined = table.append_column("_at", at).join(
        _keyed(starts, "_from"), list(KEY), join_type="inner"
    )
    kept = joined.filter(pc.field("_at") >= pc.add(pc.field("_from"), shift))
    return kept.drop_columns(["_at", "_from"]).select(table.column_names)


def _partition_of(grain: str, bucket_ms: int) -> Path:
    t = _instant(bucket_ms)
    day = Path(f"date={t.date().isoformat()}")
    return day / f"hour={t.hour}" if grain == "minute" else day


def _parquet_files(folder: Path) -> list[Path]:
    return sorted(
        f for f in folder.iterdir() if f.suffix == ".parquet" and not f.name.startswith((".", "_"))
    )


def _replace_here(out: Path, grain: str, made: pa.Table, starts: dict[Key, int]) -> None:
    """``_replace`` in this process: each partition the made buckets fall in is rewritten
    as one file (its other queues' buckets, and the redone queues' before their start,
    kept), renamed over the one before (the commit); files Spark wrote there go after.
    A run that dies half-way leaves each partition old or new, and the next run, from
    the same state, writes the same again."""
    root = results.grain_dir(out, grain)
    width = HOUR if grain == "minute" else DAY
    parts = pc.divide(inmemory.millis(made.column("bucket_start")), width)
    for part in sorted(pc.unique(parts).to_pylist()):
        folder = root / _partition_of(grain, part * width)
        folder.mkdir(parents=True, exist_ok=True)
        tables = [made.filter(pc.equal(parts, part))]
        old = _parquet_files(folder)
        final = folder / ROLLUP_FILE
        # Our file beside others: a run that died after its rename left them (Spark
        # replaces every file of a partition it writes): ours has their rows.
        current = [final] if final in old else old
        if current:
            before = pa.concat_tables(pq.read_table(f, schema=inmemory.STORED) for f in current)
            redone = inmemory.millis(before.column("bucket_start"))
            joined = before.append_column("_at", redone).join(
                _keyed(starts, "_from"), list(KEY), join_type="left outer"
            )
            keep = pc.is_null(pc.field("_from")) | (pc.field("_at") < pc.field("_from"))
            tables.append(joined.filter(keep).select(inmemory.STORED.names))
        tmp = folder / f".{ROLLUP_FILE}.{uuid.uuid4().hex}.tmp"
        pq.write_table(pa.concat_tables(tables).cast(inmemory.STORED), tmp)
        os.replace(tmp, final)
        for f in old:
            if f != final:
                f.unlink(missing_ok=True)


ROLLUP_FILE = "rollups.parquet"  # the one file of a partition rewritten in this process


def _stored_here(out: Path, since: int) -> pa.Table:
    """The minute rollups from the partition holding ``since`` on, as one table."""
    root = results.grain_dir(out, "minute")
    first = _instant(since)
    tables = []
    for day in results.days(out, "minute"):
        if day < first.date():
            continue
        for hour_dir in results.day_dir(out, "minute", day).glob("hour=*"):
            hour = int(hour_dir.name.removeprefix("hour="))
            if day == first.date() and hour < first.hour:
                continue
            tables += [pq.read_table(f, schema=inmemory.STORED) for f in _parquet_files(hour_dir)]
    del root
    return pa.concat_tables(tables) if tables else inmemory.STORED.empty_table()
