"""The two rollup engines agree — the place to look when a rule changes.

pipeline/inmemory.py re-implements the Spark rules (pipeline/rollups.py,
pipeline/anomalies.py) over Arrow tables on purpose: a small increment is rolled up in
the job's process (pipeline/rollup_driver.py), a large one, a late file and ``--full``
as Spark jobs (pipeline/rollup_spark.py). A rule changed in one must change in the
other, and this property test says whether it did: for random lakes (queues appearing,
recreated with their counters reset, counters that drop, silent for days, duplicate
readings at one instant, gaps, late files) arriving in random batches, the same
sequence of runs (compacting the lake as they go) writes the same rollups and flags
whether its increments run in this process or all in Spark; both write what one
``--full`` run writes, and the rollups are what a plain Python computation of the rules
gives."""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dashboard.snapshots import lake as lake_writer
from pipeline import jobs, lake, results
from pipeline.anomalies import Rules

T0 = round(dt.datetime(2026, 11, 20, tzinfo=dt.UTC).timestamp() * 1000)
MINUTE, HOUR = 60_000, 3_600_000
RULES = Rules(growth_intervals=2, stall_intervals=2, storm_intervals=2, slo=300.0)
SEEDS = range(3)


def random_lake(rng: random.Random) -> list[list[dict]]:
    """Files of snapshot rows (one per snapshot run), in the order they were taken."""
    queues = [("c", rng.choice(["n1", "n2"]), f"q{i}") for i in range(rng.randint(2, 4))]
    counters = {q: [0, 0, 1] for q in queues}  # totalsent, totalrecv, created
    # Bursts of snapshots, 10 to 40 s apart, anywhere in three days: silent days between.
    instants: list[int] = []
    for _ in range(rng.randint(3, 5)):
        t = T0 + rng.randrange(0, 3 * 86_400_000, 1000)
        for _ in range(rng.randint(4, 12)):
            instants.append(t)
            t += rng.choice([10_000, 20_000, 40_000, 90_000])
    files = []
    for t in sorted(set(instants)):
        rows = []
        for q in queues:
            if rng.random() < 0.25:
                continue  # not there at this run (not yet made, deleted, or missed)
            c = counters[q]
            if rng.random() < 0.08:
                c[:] = [0, 0, c[2] + 1]  # deleted and made again
            elif rng.random() < 0.04:
                c[0] //= 2  # a counter that went down
            c[0] += rng.randint(0, 30)
            c[1] = min(c[0], c[1] + rng.randint(0, 40))
            rows.append(row(q, t, c, rng))
            if rng.random() < 0.1:  # the same instant read twice, other counts
                rows.append(row(q, t, c, rng))
        if rows:
            files.append(rows)
            if rng.random() < 0.1:
                files.append([dict(r) for r in rows])  # a file written twice
    return files


def row(q: tuple[str, str, str], t: int, c: list[int], rng: random.Random) -> dict:
    msgs = rng.randint(0, 12)
    hidden = rng.randint(0, msgs)
    inflight = rng.randint(0, hidden)
    return {
        "connection": q[0], "namespace": q[1], "queue": q[2], "taken_at": t,
        "msgs": msgs, "hiddenmsgs": hidden, "inflight": inflight, "delayed": hidden - inflight,
        "totalsent": c[0], "totalrecv": c[1], "created": c[2],
        "oldest_age": None if msgs == hidden else float(rng.choice([5, 200, 400, 900])),
    }  # fmt: skip


def arrivals(rng: random.Random, files: list[list[dict]]) -> list[list[list[dict]]]:
    """The files in batches, one batch per run: in time order, but some arrive late."""
    batches: list[list[list[dict]]] = [[] for _ in range(rng.randint(2, 3))]
    for i, f in enumerate(files):
        on_time = min(i * len(batches) // len(files), len(batches) - 1)
        late = rng.random() < 0.2
        batches[rng.randint(on_time, len(batches) - 1) if late else on_time].append(f)
    return [b for b in batches if b]


# -- the rules, in plain Python ------------------------------------------------------------

ORDER = ("totalsent", "totalrecv", "created", "msgs", "hiddenmsgs", "inflight", "delayed",
         "oldest_age")  # fmt: skip


def expected(files: list[list[dict]]) -> dict[tuple, tuple]:
    by_queue: dict[tuple, list[dict]] = defaultdict(list)
    for f in files:
        for r in f:
            by_queue[(r["connection"], r["namespace"], r["queue"])].append(r)
    out = {}
    for key, rows in by_queue.items():
        # One reading per instant: the first by time, then every other column, highest first.
        rows.sort(key=lambda r: [r["taken_at"]] + [_desc(r[c]) for c in ORDER])
        kept = [r for i, r in enumerate(rows) if i == 0 or rows[i - 1]["taken_at"] != r["taken_at"]]
        buckets: dict[tuple, list[tuple]] = defaultdict(list)
        for i, r in enumerate(kept):
            p = kept[i - 1] if i else None
            interval = None
            if p is not None:
                reset = r["created"] != p["created"]
                sent, received = (
                    r[c] if reset or r[c] < p[c] else r[c] - p[c]
                    for c in ("totalsent", "totalrecv")
                )
                interval = (p["taken_at"], sent, received)
            for grain, width in (("minute", MINUTE), ("hour", HOUR)):
                start = r["taken_at"] - r["taken_at"] % width
                buckets[(*key, grain, start)].append((r, interval))
        for k, members in buckets.items():
            out[k] = _bucket(members)
    return out


def _desc(v: float | None) -> float:
    return float("inf") if v is None else -v  # highest first, nulls last


def _bucket(members: list[tuple]) -> tuple:
    rows = [r for r, _ in members]
    ends = [(r["taken_at"], i) for r, i in members if i is not None]
    sent = sum(i[1] for _, i in ends) if ends else None
    received = sum(i[2] for _, i in ends) if ends else None
    seconds = (max(t for t, _ in ends) - min(i[0] for _, i in ends)) / 1000 if ends else None
    visible = [r["msgs"] - r["hiddenmsgs"] for r in rows]
    ages = [r["oldest_age"] for r in rows if r["oldest_age"] is not None]
    return (
        len(rows), sent, received, seconds,
        sent / seconds if seconds else None, received / seconds if seconds else None,
        sum(r["msgs"] for r in rows) / len(rows), max(r["msgs"] for r in rows),
        max(rows, key=lambda r: r["taken_at"])["msgs"],
        min(visible), sum(visible) / len(rows), max(visible),
        sum(r["hiddenmsgs"] for r in rows) / len(rows), max(r["hiddenmsgs"] for r in rows),
        sum(r["inflight"] for r in rows) / len(rows), max(r["inflight"] for r in rows),
        sum(r["delayed"] for r in rows) / len(rows), max(r["delayed"] for r in rows),
        max(ages) if ages else None,
    )  # fmt: skip


# -- what the job wrote --------------------------------------------------------------------


def written(out: Path) -> dict[tuple, tuple]:
    got = {}
    for grain in ("minute", "hour"):
        for day in results.days(out, grain):
            for b in results.buckets(out, grain, day):
                key = (b.connection, b.namespace, b.queue, grain, b.bucket_start)
                assert key not in got, key
                got[key] = (
                    b.snapshots, b.sent, b.received, b.seconds, b.send_rate, b.receive_rate,
                    b.backlog_avg, b.backlog_max, b.backlog_last, b.visible_min, b.visible_avg,
                    b.visible_max, b.hidden_avg, b.hidden_max, b.inflight_avg, b.inflight_max,
                    b.delayed_avg, b.delayed_max, b.oldest_age_max,
                )  # fmt: skip
    return got


def flags(out: Path) -> list[tuple]:
    return sorted(
        (f.connection, f.namespace, f.queue, f.kind, f.start, f.end or 0, f.intervals,
         sorted(f.figures.items()))
        for f in results.flags(out)
    )  # fmt: skip


@pytest.mark.timeout(1200)  # three sequences of runs: slow on a busy machine
@pytest.mark.parametrize("seed", SEEDS)
def test_in_memory_and_spark_engines_write_the_same_rows_as_a_full_run_and_plain_python(
    spark, tmp_path, monkeypatch, seed
):
    """The same batches rolled up twice: increments in this process (inmemory.py) unless
    a file is late, then every increment in Spark (``ON_THE_DRIVER_ROWS = -1``)."""
    rng = random.Random(seed)
    files = random_lake(rng)
    batches = arrivals(rng, files)
    got = {}
    for engine, limit in (("driver", jobs.ON_THE_DRIVER_ROWS), ("spark", -1)):
        monkeypatch.setattr(jobs, "ON_THE_DRIVER_ROWS", limit)
        lake_dir, out = tmp_path / engine / "lake", tmp_path / engine / "out"
        engines = []
        for batch in batches:
            for f in batch:
                lake_writer.append(lake_dir, f)
            engines.append(jobs.run_rollups(spark, lake_dir, out, RULES).engine)
        assert ("driver" in engines) == (engine == "driver"), engines
        got[engine] = (written(out), flags(out))
        # The lake was compacted as it went: every snapshot is still there exactly once.
        listed = lake.files(lake_dir)
        paths = [lake.folder(lake_dir, d) / n for d, names in listed.items() for n in names]
        assert sum(pq.read_metadata(p).num_rows for p in paths) == sum(len(f) for f in files)

    assert got["driver"] == got["spark"]  # the engines agree, row for row, flag for flag
    scratch = tmp_path / "scratch"
    jobs.run_rollups(spark, tmp_path / "spark" / "lake", scratch, RULES, full=True)
    assert got["spark"] == (written(scratch), flags(scratch))
    want = expected(files)
    rolled = got["driver"][0]
    assert rolled.keys() == want.keys()
    for key, values in want.items():
        assert rolled[key] == pytest.approx(values), key
