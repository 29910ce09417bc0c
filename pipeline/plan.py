"""Planning an increment of the rollups: which queues are redone from which hour, and
from which snapshots; what a run did; the keys, times and partitions both engines share."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa

from . import inmemory, rollups
from .state import Key, Row, State

KEY = rollups.KEY
MINUTE, HOUR, DAY = rollups.MINUTE, rollups.HOUR, 86_400_000
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
PARTITIONS = {"minute": ["date", "hour"], "hour": ["date"]}


@dataclass
class RollupRun:
    """What one rollups run did."""

    new_files: int = 0
    days: list[dt.date] = field(default_factory=list)  # the days whose hours were redone
    rows: int = 0  # rollup rows written (minutes and hours)
    flags: int = 0
    open_flags: int = 0
    watermark: int | None = None  # the newest snapshot rolled up, epoch ms
    compacted: int = 0  # lake files rewritten into fewer
    engine: str | None = None  # "spark", or "driver": rolled up in this process (inmemory.py)

    def as_dict(self) -> dict[str, object]:
        return {
            "new_files": self.new_files,
            "days": [d.isoformat() for d in self.days],
            "rows": self.rows,
            "flags": self.flags,
            "open_flags": self.open_flags,
            "watermark": self.watermark,
            "compacted": self.compacted,
            "engine": self.engine,
        }


def _floor(ms: int, width: int) -> int:
    return ms - ms % width


def _instant(ms: int) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=ms)


@dataclass
class Plan:
    """Where each queue of the new files is redone from, and from which snapshots."""

    starts: dict[Key, int] = field(default_factory=dict)  # the hour its redo starts, ms
    before: list[Row] = field(default_factory=list)  # its snapshot before, from the state
    again: dict[Key, int] = field(default_factory=dict)  # rolled-up snapshots from start on
    late: dict[Key, int] = field(default_factory=dict)  # ...the snapshot before in the lake


def _plan(state: State, spans: Iterable[tuple[Key, int, int]]) -> Plan:
    """From each queue's first and last new snapshot (and the state: its newest moves)."""
    plan = Plan()
    newest = state.newest
    for k, low, high in spans:
        start = plan.starts[k] = _floor(low, HOUR)
        newest = high if newest is None else max(newest, high)
        q = state.queues.get(k)
        if q is None:
            continue
        if start > q.last_at:
            plan.before.append(q.last)
        elif start == _floor(q.last_at, HOUR):
            plan.again[k] = start
            if q.before is not None:
                plan.before.append(q.before)
        else:
            plan.again[k] = plan.late[k] = start
    state.newest = newest
    return plan


def _queue_spans(table: pa.Table) -> list[tuple[Key, int, int]]:
    at = inmemory.millis(table.column("taken_at"))
    by = table.select(list(KEY)).append_column("at", at).group_by(list(KEY))
    found = by.aggregate([("at", "min"), ("at", "max")]).to_pylist()
    return [
        ((r["connection"], r["namespace"], r["queue"]), r["at_min"], r["at_max"]) for r in found
    ]


def _keyed(values: dict[Key, int], name: str) -> pa.Table:
    keys = list(values)
    return pa.table(
        {
            **{c: pa.array([k[i] for k in keys], pa.string()) for i, c in enumerate(KEY)},
            name: pa.array(list(values.values()), pa.int64()),
        }
    )
