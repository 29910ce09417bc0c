"""Compaction: the rolled-up lake files of each finished hour rewritten into one."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path

from . import lake
from . import state as saved
from .plan import HOUR, _floor
from .state import State

# -- compaction --------------------------------------------------------------------------


def _compact(lake_dir: Path, out: Path, state: State) -> int:
    """Rewrite the rolled-up files of each finished hour (one before the newest
    snapshot's) into one: a day ends as 24 files however often it was snapshotted, plus
    what arrived late. Returns how many files were rewritten."""
    if state.newest is None:
        return 0
    finished = _floor(state.newest, HOUR)
    groups: dict[tuple[dt.date, int], list[tuple[str, int, int]]] = defaultdict(list)
    for day, name, low, high in state.spans():
        if _floor(low, HOUR) + HOUR <= finished:
            groups[(day, _floor(low, HOUR))].append((name, low, high))
    done = 0
    for (day, _), group in sorted(groups.items()):
        if len(group) < 2:
            continue
        names = [n for n, _, _ in group]
        name = lake.compact(lake_dir, day, names)
        files = state.files[day.isoformat()]
        for n in names:
            del files[n]
        files[name] = (min(low for _, low, _ in group), max(high for _, _, high in group))
        done += len(names)
    if done:
        saved.save(out, state)
    return done
