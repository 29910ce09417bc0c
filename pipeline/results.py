"""The pipeline's output, the one module that knows its layout: where each job writes
(``jobs.py`` asks here), and the typed rows the console loads (``dashboard/analytics/runs.py``
reads them here). Plain pyarrow: reading results starts no Spark.

    rollups/grain=minute/date=YYYY-MM-DD/hour=H/*.parquet   per queue per minute
    rollups/grain=hour/date=YYYY-MM-DD/*.parquet            per queue per hour
    flags/flags.parquet                                     anomaly episodes
    census/summary|histograms|poison/*.parquet              the last census
    _state.json                                             the rollups' state
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

KEY = ("connection", "namespace", "queue")
_PER_MS = {"ms": 1, "us": 1000, "ns": 1_000_000}
STATE = "_state.json"

# The census's histogram bins: (label, upper bound, exclusive); the last bin has none.
AGE_BINS: Sequence[tuple[str, float | None]] = (
    ("< 1 min", 60),
    ("1–5 min", 300),
    ("5–15 min", 900),
    ("15 min–1 h", 3600),
    ("1–6 h", 6 * 3600),
    ("6–24 h", 86_400),
    ("1–7 days", 7 * 86_400),
    ("> 7 days", None),
)
SIZE_BINS: Sequence[tuple[str, float | None]] = (
    ("< 100 B", 100),
    ("100 B–1 KB", 1024),
    ("1–10 KB", 10 * 1024),
    ("10–64 KB", 64 * 1024),
    ("> 64 KB", None),
)
RC_BINS: Sequence[tuple[str, float | None]] = (
    ("0", 1),
    ("1", 2),
    ("2", 3),
    ("3", 4),
    ("4", 5),
    ("5–9", 10),
    ("10–99", 100),
    ("100+", None),
)
HISTOGRAMS = {"rc": RC_BINS, "age": AGE_BINS, "size": SIZE_BINS}


# -- where things go --------------------------------------------------------------------


def rollups_dir(out: Path) -> Path:
    return out / "rollups"


def grain_dir(out: Path, grain: str) -> Path:
    return rollups_dir(out) / f"grain={grain}"


def day_dir(out: Path, grain: str, day: dt.date) -> Path:
    return grain_dir(out, grain) / f"date={day.isoformat()}"


def days(out: Path, grain: str) -> list[dt.date]:
    """The days that have rollups of ``grain``, oldest first."""
    return sorted(
        dt.date.fromisoformat(p.name.removeprefix("date="))
        for p in grain_dir(out, grain).glob("date=*")
    )


def flags_dir(out: Path) -> Path:
    return out / "flags"


def census_dir(out: Path, part: str) -> Path:
    return out / "census" / part


def state_file(out: Path) -> Path:
    return out / STATE


# -- what the console reads -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bucket:
    """One queue over one minute or hour (pipeline/rollups.py says how each is made)."""

    connection: str
    namespace: str
    queue: str
    bucket_start: int  # epoch ms
    snapshots: int
    sent: int | None  # None: no interval between snapshots ends in the bucket
    received: int | None
    seconds: float | None
    send_rate: float | None
    receive_rate: float | None
    backlog_avg: float
    backlog_max: int
    backlog_last: int
    visible_min: int
    visible_avg: float
    visible_max: int
    hidden_avg: float
    hidden_max: int
    inflight_avg: float
    inflight_max: int
    delayed_avg: float
    delayed_max: int
    oldest_age_max: float | None


@dataclass(frozen=True, slots=True)
class Flag:
    """An anomaly episode (pipeline/anomalies.py): ``end`` None while it goes on."""

    connection: str
    namespace: str
    queue: str
    kind: str
    start: int  # epoch ms
    end: int | None
    intervals: int  # minutes
    figures: dict[str, float | None]


@dataclass(frozen=True, slots=True)
class Poison:
    id: str
    rc: int
    sent: int
    fr: int
    age: float
    size: int
    state: str


@dataclass(frozen=True, slots=True)
class CensusQueue:
    """One queue's messages at the census (pipeline/census.py)."""

    connection: str
    namespace: str
    queue: str
    read_at: int  # epoch ms, the Redis clock
    messages: int
    visible: int
    inflight: int
    delayed: int
    rc_max: int
    bytes: int
    size_max: int
    age_max: float
    # histogram name -> (label, messages) in bin order, empty bins included
    histograms: dict[str, list[tuple[str, int]]]
    poison: list[Poison]  # most received first


def buckets(out: Path, grain: str, day: dt.date) -> list[Bucket]:
    """The rollups of one grain and day (in no particular order)."""
    names = Bucket.__dataclass_fields__
    return [Bucket(**{k: r[k] for k in names}) for r in _rows(day_dir(out, grain, day))]


def flags(out: Path) -> list[Flag]:
    """Every flag the last rollups run wrote."""
    return [
        Flag(
            r["connection"], r["namespace"], r["queue"], r["kind"], r["start"], r["end"],
            r["intervals"], json.loads(r["figures"]),
        )
        for r in _rows(flags_dir(out))
    ]  # fmt: skip


def census(out: Path) -> list[CensusQueue]:
    """Every queue of the last census, with its histograms and poison candidates."""
    bins: dict[tuple[str, ...], dict[str, list[int]]] = defaultdict(
        lambda: {name: [0] * len(b) for name, b in HISTOGRAMS.items()}
    )
    for h in _rows(census_dir(out, "histograms")):
        bins[_key(h)][h["histogram"]][h["bin"]] = h["messages"]
    poison: dict[tuple[str, ...], list[Poison]] = defaultdict(list)
    for p in sorted(_rows(census_dir(out, "poison")), key=lambda p: p["rank"]):
        poison[_key(p)].append(Poison(**{f: p[f] for f in Poison.__dataclass_fields__}))
    summary = ("read_at", "messages", "visible", "inflight", "delayed", "rc_max", "bytes",
               "size_max", "age_max")  # fmt: skip
    return [
        CensusQueue(
            **{f: s[f] for f in (*KEY, *summary)},
            histograms={
                name: [(label, n) for (label, _), n in zip(HISTOGRAMS[name], c, strict=True)]
                for name, c in bins[_key(s)].items()
            },
            poison=poison[_key(s)],
        )
        for s in _rows(census_dir(out, "summary"))
    ]


def _key(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(row[k] for k in KEY)


def flags_table(out: Path) -> pa.Table | None:
    """The flags as one Arrow table (timestamps as epoch ms), None before the first."""
    return _table(flags_dir(out))


def _table(folder: Path) -> pa.Table | None:
    """A folder's Parquet rows, timestamps as epoch ms (the console's unit)."""
    if not folder.is_dir():
        return None
    table = ds.dataset(folder, format="parquet").to_table()
    for i, f in enumerate(table.schema):
        if pa.types.is_timestamp(f.type):
            ticks = pc.cast(table.column(i), pa.int64())
            table = table.set_column(i, f.name, pc.divide(ticks, _PER_MS[f.type.unit]))
    return table


def _rows(folder: Path) -> list[dict[str, Any]]:
    table = _table(folder)
    rows: list[dict[str, Any]] = [] if table is None else table.to_pylist()
    return rows
