"""The anomaly flags as stored: redone per queue from the first minute a new snapshot
can change, the others kept (closed once their queue is no longer snapshotted), saved
as one Parquet file. The flag rules themselves are in anomalies.py / inmemory.py."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import anomalies, results
from .plan import DAY, KEY, MINUTE, _floor, _keyed
from .state import Key, State


def _write_flags(
    out: Path,
    state: State,
    starts: dict[Key, int],
    rules: anomalies.Rules,
    days: int,
    full: bool,
    episodes: Callable[[dict[Key, int], int], pa.Table],
) -> tuple[int, int]:
    """Flags redone for the queues rolled up again, from the first minute any of their
    episodes could change; the others' kept, closed once their queue is no longer
    snapshotted; closed flags older than ``days`` days dropped. The kept ones are
    handled as one Arrow table: a run costs little however many flags there are."""
    assert state.newest is not None
    newest = _floor(state.newest, MINUTE)
    stored = None if full else results.flags_table(out)
    # A run of minutes that reaches a queue's start can change: an episode's, or a run
    # still too short to be one (shorter than the longest a rule needs).
    reach = (max(rules.growth_intervals, rules.stall_intervals, rules.storm_intervals) + 1) * MINUTE
    redo = {k: s - reach for k, s in starts.items()}
    if stored is not None and stored.num_rows:
        last = _last(stored)
        reaching = (
            stored.append_column("_last", last)
            .join(_keyed(starts, "_start"), list(KEY))
            .filter(pc.greater_equal(pc.field("_last"), pc.subtract(pc.field("_start"), reach)))
            .group_by(list(KEY))
            .aggregate([("start", "min")])
        )
        for r in reaching.to_pylist():
            k = (r["connection"], r["namespace"], r["queue"])
            redo[k] = min(redo[k], r["start_min"])
    made = episodes(redo, newest)
    flags = [made.select(FLAGS_MS.names).cast(FLAGS_MS)]
    if stored is not None and stored.num_rows:
        kept = _closed(_kept(stored, redo), state, newest, rules)
        flags.append(kept.select(FLAGS_MS.names).cast(FLAGS_MS))
    table = pa.concat_tables(flags)
    ended = pc.field("end")
    table = table.filter(pc.is_null(ended) | (ended >= state.newest - days * DAY))
    _save_flags(out, table)
    return table.num_rows, table.num_rows - pc.count(table.column("end")).as_py()


def _last(flags: pa.Table) -> pa.Array:
    """The start of each episode's last minute (its minutes follow each other)."""
    return pc.add(
        flags.column("start"), pc.multiply(pc.subtract(flags.column("intervals"), 1), MINUTE)
    )


def _kept(stored: pa.Table, redo: dict[Key, int]) -> pa.Table:
    """The stored flags not redone: other queues', and those before a redo."""
    joined = stored.join(_keyed(redo, "_redo"), list(KEY), join_type="left outer")
    keep = pc.is_null(pc.field("_redo")) | (pc.field("start") < pc.field("_redo"))
    return joined.filter(keep).drop_columns(["_redo"])


def _closed(kept: pa.Table, state: State, newest: int, rules: anomalies.Rules) -> pa.Table:
    """Kept flags, those still open closed if their queue's newest minute is no longer
    their last or has fallen behind the lake's."""
    queues = {k: _floor(q.last_at, MINUTE) for k, q in state.queues.items()}
    kept = kept.join(_keyed(queues, "_newest"), list(KEY), join_type="left outer")
    last = _last(kept)
    queue_newest = pc.coalesce(kept.column("_newest"), last)
    still = pc.and_(
        pc.equal(last, queue_newest),
        pc.greater_equal(queue_newest, newest - rules.open_grace * MINUTE),
    )
    closes = pc.and_(pc.is_null(kept.column("end")), pc.invert(still))
    end = pc.if_else(closes, pc.add(last, MINUTE), kept.column("end"))
    return kept.set_column(kept.schema.get_field_index("end"), "end", end).drop_columns(["_newest"])


FLAGS_MS = pa.schema(
    [
        *((c, pa.string()) for c in KEY),
        ("kind", pa.string()),
        ("start", pa.int64()),  # epoch ms
        ("end", pa.int64()),
        ("intervals", pa.int64()),
        ("figures", pa.string()),  # JSON
    ]
)
FLAGS = pa.schema(
    [
        f if f.name not in ("start", "end") else (f.name, pa.timestamp("ms", tz="UTC"))
        for f in FLAGS_MS
    ]
)


def _save_flags(out: Path, flags: pa.Table) -> None:
    """All flags as one file, replaced whole."""
    folder = results.flags_dir(out)
    folder.mkdir(parents=True, exist_ok=True)
    flags = flags.sort_by([(c, "ascending") for c in (*KEY, "kind", "start")]).cast(FLAGS)
    final = folder / "flags.parquet"
    tmp = folder / f".flags-{uuid.uuid4().hex}.tmp"
    pq.write_table(flags, tmp)
    os.replace(tmp, final)
    for old in folder.glob("*.parquet"):  # an older job's part files
        if old != final:
            old.unlink()
