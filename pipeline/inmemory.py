"""The rules of rollups.py and anomalies.py over Arrow tables, in this process: for an
hourly increment (an hour of 1,000 queues is 360,000 snapshots) a Spark job costs far
more in planning, tasks and shuffles than the work itself. jobs.py does an increment
here when it is small (``jobs.ON_THE_DRIVER_ROWS``, in rollup_driver.py) and Spark does
the rest (rollup_spark.py). A rule changed here changes there too: the property test
tests/pipeline/test_engines_agree.py holds both to the same results, and to a plain
Python computation of the rules.

Same rules, same arithmetic: sums of integers as integers, averages as a double sum over
a count, rates as a double division, so that a bucket is the same to the last bit
whichever engine made it.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from . import lake
from .anomalies import Rules
from .rollups import GRAINS, KEY, MINUTE, TIE_BREAK

# The rollups as stored (jobs.py's partitions: minute by date and hour, hour by date),
# the columns of the files, with the types Spark gives them.
STORED = pa.schema(
    [
        *((c, pa.string()) for c in KEY),
        ("bucket_start", pa.timestamp("us", tz="UTC")),
        ("snapshots", pa.int64()),
        ("sent", pa.int64()),
        ("received", pa.int64()),
        ("seconds", pa.float64()),
        ("send_rate", pa.float64()),
        ("receive_rate", pa.float64()),
        ("backlog_avg", pa.float64()),
        ("backlog_max", pa.int64()),
        ("backlog_last", pa.int64()),
        ("visible_min", pa.int64()),
        ("visible_avg", pa.float64()),
        ("visible_max", pa.int64()),
        ("hidden_avg", pa.float64()),
        ("hidden_max", pa.int64()),
        ("inflight_avg", pa.float64()),
        ("inflight_max", pa.int64()),
        ("delayed_avg", pa.float64()),
        ("delayed_max", pa.int64()),
        ("oldest_age_max", pa.float64()),
    ]
)


def millis(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A timestamp column as epoch ms (int64)."""
    ms = pc.cast(column, pa.timestamp("ms", tz="UTC"))
    return pc.cast(ms, pa.int64())


def in_order(snapshots: pa.Table) -> pa.Table:
    """By queue, then ``rollups.in_order()``: time, then every other column highest first
    (nulls last); with ``at`` (epoch ms)."""
    t = snapshots.append_column("at", millis(snapshots.column("taken_at")))
    keys = [(c, "ascending", "at_end") for c in (*KEY, "at")] + [
        (c, "descending", "at_end") for c in TIE_BREAK
    ]
    return t.combine_chunks().sort_by(keys)


def _before(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The column shifted down one row (null first)."""
    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return pa.concat_arrays([pa.nulls(1, col.type), col.slice(0, max(len(col) - 1, 0))])[: len(col)]


def _changes(*columns: pa.Array | pa.ChunkedArray) -> pa.Array:
    """True where a row differs from the one before in any of the columns (the first)."""
    out = None
    for c in columns:
        differs = pc.fill_null(pc.not_equal(c, _before(c)), True)
        out = differs if out is None else pc.or_(out, differs)
    assert out is not None
    return out


def deduplicated(snapshots: pa.Table) -> pa.Table:
    """``in_order`` and one snapshot per queue and instant (the first)."""
    t = in_order(snapshots)
    if not t.num_rows:
        return t
    return t.filter(_changes(*(t.column(c) for c in (*KEY, "at"))))


def _segment(starts: pa.Array) -> pa.Array:
    """Segment numbers from where segments start."""
    return pc.subtract(pc.cumulative_sum(pc.cast(starts, pa.int64())), 1)


def rollups(snapshots: pa.Table, grains: tuple[str, ...] = tuple(GRAINS)) -> dict[str, pa.Table]:
    """Each grain's buckets (``STORED``'s columns) of ``deduplicated`` snapshots, as
    ``rollups.rollups`` makes them."""
    t = snapshots
    if not t.num_rows:
        return {g: STORED.empty_table() for g in grains}
    first = _changes(*(t.column(c) for c in KEY))
    at = t.column("at").combine_chunks()
    prev_at = pc.if_else(first, pa.scalar(None, pa.int64()), _before(at))
    created = t.column("created")
    reset = pc.fill_null(pc.not_equal(created, _before(created)), False)
    growth = {}
    for c in ("totalsent", "totalrecv"):
        after = t.column(c).combine_chunks()
        before = _before(after)
        grown = pc.if_else(pc.or_(reset, pc.less(after, before)), after, pc.subtract(after, before))
        growth[c] = pc.if_else(pc.is_null(prev_at), pa.scalar(None, pa.int64()), grown)
    msgs, hidden = t.column("msgs"), t.column("hiddenmsgs")
    ended = pc.if_else(pc.is_null(prev_at), pa.scalar(None, pa.int64()), at)
    base = pa.table(
        {
            **{c: t.column(c) for c in KEY},
            "at": at,
            "prev_at": prev_at,
            "ended": ended,
            "sent": growth["totalsent"],
            "received": growth["totalrecv"],
            "backlog": msgs,
            "visible": pc.subtract(msgs, hidden),
            "hidden": hidden,
            "inflight": t.column("inflight"),
            "delayed": t.column("delayed"),
            "oldest_age": t.column("oldest_age"),
        }
    )
    out = {}
    for grain in grains:
        width = GRAINS[grain]
        bucket = pc.multiply(pc.divide(at, width), width)
        seg = _segment(pc.or_(first, _changes(bucket)))
        rows = base.append_column("bucket", bucket).append_column("_seg", seg)
        counts = ("backlog", "visible", "hidden", "inflight", "delayed")
        g = rows.group_by("_seg", use_threads=False).aggregate(
            [
                *((c, "first") for c in (*KEY, "bucket")),
                ("at", "count"),
                ("sent", "sum"),
                ("received", "sum"),
                ("ended", "max"),
                ("prev_at", "min"),
                *((c, "sum") for c in counts),
                *((c, "max") for c in counts),
                ("visible", "min"),
                ("backlog", "last"),
                ("oldest_age", "max"),
            ]
        )
        n = pc.cast(g.column("at_count"), pa.float64())
        seconds = pc.divide(
            pc.cast(pc.subtract(g.column("ended_max"), g.column("prev_at_min")), pa.float64()),
            1000.0,
        )
        positive = pc.greater(seconds, 0.0)
        none = pa.scalar(None, pa.float64())

        def rate(count: str) -> pa.Array:
            # (called within this iteration only: the loop's values are the ones meant)
            per = pc.divide(pc.cast(g.column(f"{count}_sum"), pa.float64()), seconds)  # noqa: B023
            return pc.if_else(positive, per, none)  # noqa: B023

        def avg(c: str) -> pa.Array:
            return pc.divide(pc.cast(g.column(f"{c}_sum"), pa.float64()), n)  # noqa: B023

        cols: dict[str, Any] = {c: g.column(f"{c}_first") for c in KEY}
        cols["bucket_start"] = pc.cast(
            pc.multiply(g.column("bucket_first"), 1000), pa.int64()
        ).cast(STORED.field("bucket_start").type)
        cols.update(
            snapshots=g.column("at_count"),
            sent=g.column("sent_sum"),
            received=g.column("received_sum"),
            seconds=seconds,
            send_rate=rate("sent"),
            receive_rate=rate("received"),
            backlog_avg=avg("backlog"),
            backlog_max=g.column("backlog_max"),
            backlog_last=g.column("backlog_last"),
            visible_min=g.column("visible_min"),
            visible_avg=avg("visible"),
            visible_max=g.column("visible_max"),
            oldest_age_max=g.column("oldest_age_max"),
        )
        for c in ("hidden", "inflight", "delayed"):
            cols[f"{c}_avg"] = avg(c)
            cols[f"{c}_max"] = g.column(f"{c}_max")
        out[grain] = pa.table(cols).select(STORED.names).cast(STORED)
    return out


def remember(snapshots: pa.Table) -> Iterator[tuple[tuple[str, str, str], Any, Any]]:
    """Each queue's last snapshot and its newest before the last's hour (None: none), as
    lake rows (``SCHEMA``'s order, ``taken_at`` in epoch ms), from ``deduplicated``
    snapshots."""
    t = snapshots
    if not t.num_rows:
        return
    at = t.column("at").to_pylist()
    starts = [i for i, x in enumerate(_changes(*(t.column(c) for c in KEY)).to_pylist()) if x]
    lasts, befores = [], []
    for lo, hi in zip(starts, [*starts[1:], t.num_rows], strict=True):
        last = hi - 1
        lasts.append(last)
        befores.append(bisect.bisect_left(at, at[last] - at[last] % 3_600_000, lo, hi) - 1)
        if befores[-1] < lo:
            befores[-1] = -1
    rows = (
        t.drop_columns(["taken_at"])
        .rename_columns(
            ["taken_at" if c == "at" else c for c in t.drop_columns(["taken_at"]).column_names]
        )
        .select(lake.SCHEMA.names)
    )
    last_rows = rows.take(pa.array(lasts, pa.int64())).to_pylist()
    found = [b for b in befores if b >= 0]
    before_rows = iter(rows.take(pa.array(found, pa.int64())).to_pylist())
    for last_row, b in zip(last_rows, befores, strict=True):
        before = next(before_rows) if b >= 0 else None
        key = (last_row["connection"], last_row["namespace"], last_row["queue"])
        yield key, tuple(last_row.values()), before and tuple(before.values())


# -- flags -------------------------------------------------------------------------------

FIGURES = {
    "backlog_growing": ("backlog_from", "backlog_to"),
    "consumers_stalled": ("visible_max", "received"),
    "oldest_age": ("oldest_age_max", "slo"),
    "redelivery_storm": ("received", "sent", "receive_rate_max", "redelivered"),
}


def flags(minutes: pa.Table, rules: Rules, newest: int) -> list[dict[str, Any]]:
    """Every rule's episodes over minute rollups (``STORED``'s columns), as
    ``anomalies.flags`` finds them: rows of the key, kind, start and end (epoch ms; end
    None while open), intervals and figures (JSON)."""
    t = minutes.append_column("bucket", millis(minutes.column("bucket_start"))).sort_by(
        [(c, "ascending") for c in (*KEY, "bucket")]
    )
    cols = {
        c: t.column(c).to_pylist()
        for c in (*KEY, "bucket", "backlog_last", "visible_min", "visible_max", "received",
                  "sent", "oldest_age_max", "receive_rate", "send_rate")
    }  # fmt: skip
    at_least = {
        "backlog_growing": rules.growth_intervals,
        "consumers_stalled": rules.stall_intervals,
        "oldest_age": 1,
        "redelivery_storm": rules.storm_intervals,
    }
    out: list[dict[str, Any]] = []
    idx = [i for i, x in enumerate(_changes(*(t.column(c) for c in KEY)).to_pylist()) if x]
    for lo, hi in zip(idx, [*idx[1:], t.num_rows], strict=True):
        key = (cols["connection"][lo], cols["namespace"][lo], cols["queue"][lo])
        slo = rules.slos.get("/".join(key), rules.slos.get(key[2], rules.slo))
        queue_newest = cols["bucket"][hi - 1]
        is_open_at = queue_newest >= newest - rules.open_grace * MINUTE
        open_runs: dict[str, list[dict[str, Any]]] = {}
        prev_hit = dict.fromkeys(at_least, False)
        for i in range(lo, hi):
            b = cols["bucket"][i]
            follows = i > lo and b - cols["bucket"][i - 1] == MINUTE
            prev = cols["backlog_last"][i - 1] if i > lo else None
            last = cols["backlog_last"][i]
            grew = follows and prev is not None and last is not None and last > prev
            shrank = follows and prev is not None and last is not None and last < prev
            rr, sr = cols["receive_rate"][i], cols["send_rate"][i]
            vmin, rec, age = cols["visible_min"][i], cols["received"][i], cols["oldest_age_max"][i]
            hits = {
                "backlog_growing": grew,
                "consumers_stalled": vmin is not None and rec is not None and vmin > 0 and rec == 0,
                "oldest_age": age is not None and age > slo,
                "redelivery_storm": rr is not None and sr is not None
                and rr >= rules.storm_factor * sr and rr - sr >= rules.storm_min_rate
                and not shrank,
            }  # fmt: skip
            for kind, hit in hits.items():
                if not hit:
                    prev_hit[kind] = False
                    continue
                if not (prev_hit[kind] and follows):
                    open_runs.setdefault(kind, []).append({"rows": []})
                open_runs[kind][-1]["rows"].append((i, prev))
                prev_hit[kind] = True
        for kind, runs in open_runs.items():
            for run in runs:
                rows = run["rows"]
                if len(rows) < at_least[kind]:
                    continue
                first_b, last_b = cols["bucket"][rows[0][0]], cols["bucket"][rows[-1][0]]
                is_open = last_b == queue_newest and is_open_at
                out.append({
                    "connection": key[0], "namespace": key[1], "queue": key[2], "kind": kind,
                    "start": first_b, "end": None if is_open else last_b + MINUTE,
                    "intervals": len(rows),
                    "figures": _figures(kind, rows, cols, slo),
                })  # fmt: skip
    return out


def _figures(kind: str, rows: list[tuple[int, Any]], cols: dict[str, list[Any]], slo: float) -> str:
    at = [i for i, _ in rows]

    def total(c: str) -> float | None:
        values = [cols[c][i] for i in at if cols[c][i] is not None]
        return float(sum(values)) if values else None

    def most(c: str) -> float | None:
        values = [cols[c][i] for i in at if cols[c][i] is not None]
        return float(max(values)) if values else None

    figures: dict[str, float | None]
    if kind == "backlog_growing":
        first_prev, last = rows[0][1], cols["backlog_last"][at[-1]]
        figures = {
            "backlog_from": None if first_prev is None else float(first_prev),
            "backlog_to": None if last is None else float(last),
        }
    elif kind == "consumers_stalled":
        figures = {"visible_max": most("visible_max"), "received": total("received")}
    elif kind == "oldest_age":
        figures = {"oldest_age_max": most("oldest_age_max"), "slo": float(slo)}
    else:
        both = [
            cols["received"][i] - cols["sent"][i]
            for i in at
            if cols["received"][i] is not None and cols["sent"][i] is not None
        ]
        figures = {
            "received": total("received"),
            "sent": total("sent"),
            "receive_rate_max": most("receive_rate"),
            "redelivered": float(sum(both)) if both else None,
        }
    # Spark's to_json leaves null fields out.
    return json.dumps({k: v for k, v in figures.items() if v is not None}, separators=(",", ":"))
