"""What the rollups job keeps between runs (``_state.json`` in its output): the lake files
already rolled up, each with the span of its snapshots; each queue's last snapshot and
the newest one before that snapshot's hour; the lake's newest snapshot.

With it a run starts each queue's redo from the right previous snapshot, whatever lies
between (a day without snapshots, a queue silent for a day), and reads only what is new
and what shares an hour with it. Written whole (a dot file renamed), after the outputs:
a run that dies half-way is done again by the next one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import lake, results

Key = tuple[str, str, str]  # connection, namespace, queue
Row = tuple[Any, ...]  # a lake row in SCHEMA's order, taken_at in epoch ms
AT = lake.SCHEMA.names.index("taken_at")
VERSION = 2


@dataclass
class Queue:
    last: Row  # its newest snapshot rolled up
    before: Row | None  # its newest snapshot before the hour of ``last``

    @property
    def last_at(self) -> int:
        at: int = self.last[AT]
        return at


@dataclass
class State:
    files: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)  # day, name: span
    queues: dict[Key, Queue] = field(default_factory=dict)
    newest: int | None = None  # the lake's newest snapshot rolled up, epoch ms

    def knows(self, lake_dir: Path, day: dt.date, name: str) -> bool:
        """Is this file rolled up? A compacted file is when every file it replaced was
        (a compaction that died before it could say so)."""
        done = self.files.setdefault(day.isoformat(), {})
        if name in done:
            return True
        if not lake.is_compacted(name):
            return False
        file = lake.folder(lake_dir, day) / name
        replaced = lake.covers(file)
        if not replaced or not all(n in done for n in replaced):
            return False
        done[name] = lake.span(file)
        return True

    def spans(self) -> list[tuple[dt.date, str, int, int]]:
        return [
            (dt.date.fromisoformat(day), name, low, high)
            for day, names in self.files.items()
            for name, (low, high) in names.items()
        ]

    def keep_only(self, found: dict[dt.date, list[str]]) -> None:
        """Forget files no longer in the lake (compacted, or gone with their day)."""
        self.files = {
            d.isoformat(): {
                n: self.files[d.isoformat()][n]
                for n in names
                if n in self.files.get(d.isoformat(), {})
            }
            for d, names in found.items()
        }


def load(out: Path) -> State:
    try:
        raw = json.loads(results.state_file(out).read_text())
    except FileNotFoundError:
        return State()
    if raw.get("version") != VERSION:
        return State()  # an older job's state: start from scratch
    return State(
        files={d: {n: (s[0], s[1]) for n, s in names.items()} for d, names in raw["files"].items()},
        queues={
            (q["key"][0], q["key"][1], q["key"][2]): Queue(
                tuple(q["last"]), tuple(q["before"]) if q["before"] is not None else None
            )
            for q in raw["queues"]
        },
        newest=raw["newest"],
    )


def outdated(out: Path) -> bool:
    """Is there a state of an older job (another layout)?"""
    try:
        return bool(json.loads(results.state_file(out).read_text()).get("version") != VERSION)
    except FileNotFoundError:
        return False


def save(out: Path, state: State) -> None:
    raw = {
        "version": VERSION,
        "files": state.files,
        "queues": [
            {"key": list(k), "last": list(q.last), "before": q.before and list(q.before)}
            for k, q in sorted(state.queues.items())
        ],
        "newest": state.newest,
    }
    final = results.state_file(out)
    tmp = final.with_name(f".{final.name}.tmp")
    tmp.write_text(json.dumps(raw, sort_keys=True))
    os.replace(tmp, final)


def forget(out: Path) -> None:
    results.state_file(out).unlink(missing_ok=True)
