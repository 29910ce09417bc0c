"""The Spark pipeline (SPEC §10): rollups over 1M and 10M snapshot rows with local[1] and
local[2] (the scaling curve), and the census's read of a 1,000,000-message namespace
against a plain single-threaded redis-py read of the same messages.

    python bench/pipeline.py [--quick] [--rounds N] [--write]

Rollups: a synthetic lake written with pyarrow — 1,000 queues, one snapshot of each every
10 s (1M rows: 2.8 hours; 10M: 28 hours, over two days), counters that grow at a queue's
own rate and reset every 3,000 snapshots for one queue in ten (a new ``created``), in
files of 100,000 rows — rolled up from scratch (``run_rollups(full=True)``: minutes,
hours, flags, Parquet written) in a warm Spark session; the JVM runs on both cores.

Census: its own redis-server on core 0; the redis-py read and this process on core 1;
Spark local[1] pinned to core 1, local[2] on both cores (so sharing core 0 with Redis).
``--quick``: 100k / 1M rows and a 100,000-message namespace.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUEUES = 1000
INTERVAL_MS = 10_000
FILE_ROWS = 100_000
START = dt.datetime(2026, 11, 21, 0, 0, tzinfo=dt.UTC)
CENSUS_QUEUES = 10
MASTERS = ("local[1]", "local[2]")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10x smaller")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="record the results in bench/RESULTS.md")
    ap.add_argument(
        "--hourly", action="store_true",
        help="instead: full runs and hourly increments on the console's own layout",
    )  # fmt: skip
    ap.add_argument(
        "--slowlog", action="store_true",
        help="instead: each census call's Redis time (SLOWLOG) on 64 KB bodies",
    )  # fmt: skip
    ap.add_argument("--days", default="1,7,30", help="--hourly: lakes of these many days")
    ap.add_argument(
        "--spark-days", type=int, default=7,
        help="--hourly: the lake on which increments are also forced through Spark",
    )  # fmt: skip
    args = ap.parse_args()

    from bench.results import publish
    from pipeline.spark import java_problem

    if problem := java_problem():
        raise SystemExit(problem)
    if args.slowlog:
        publish(render_slowlog(census_slowlog(args.rounds)), args.write)
        return
    if args.hourly:
        days = [int(d) for d in args.days.split(",")]
        tmp = Path(tempfile.mkdtemp(prefix="rsmq-bench-hourly-"))
        rows = hourly(tmp, days, args.rounds, args.spark_days)
        publish(render_hourly(rows, args), args.write)
        return
    sizes = (100_000, 1_000_000) if args.quick else (1_000_000, 10_000_000)
    messages = 100_000 if args.quick else 1_000_000
    tmp = Path(tempfile.mkdtemp(prefix="rsmq-bench-pipeline-"))
    rollup_rows = rollups(tmp, sizes, args.rounds)
    census_rows = census(tmp, messages, args.rounds)
    publish(render(rollup_rows, census_rows, sizes, messages, args), args.write)


# -- rollups -----------------------------------------------------------------------------


def snapshots(i: Any) -> Any:  # pyarrow: an int64 array in, a table out
    """The lake rows numbered ``i`` (an int64 array): row i is queue i % QUEUES in
    snapshot i // QUEUES, taken every 10 s from START."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from pipeline.lake import SCHEMA

    names = pa.array([f"queue-{n:04d}" for n in range(QUEUES)])
    t0 = int(START.timestamp() * 1000)

    def mod(a, n):
        return pc.subtract(a, pc.multiply(pc.divide(a, n), n))

    q = mod(i, QUEUES)
    k = pc.divide(i, QUEUES)  # the snapshot's number
    at = pc.add(t0, pc.add(pc.multiply(k, INTERVAL_MS), pc.multiply(q, 7)))
    resets = pc.equal(mod(q, 10), 0)
    since = pc.if_else(resets, mod(k, 3000), k)  # snapshots since the counters started
    rate = pc.add(mod(q, 7), 1)  # messages per snapshot
    sent = pc.multiply(since, rate)
    recv = pc.subtract(sent, mod(pc.add(k, q), 50))
    recv = pc.if_else(pc.less(recv, 0), 0, recv)
    msgs = pc.subtract(sent, recv)
    hidden = pc.divide(msgs, 3)
    return pa.table(
        {
            "connection": pa.array(["default"] * len(i)),
            "namespace": pa.array(["bench"] * len(i)),
            "queue": pa.DictionaryArray.from_arrays(q.cast(pa.int32()), names).cast(pa.string()),
            "taken_at": at.cast(pa.timestamp("ms", tz="UTC")),
            "msgs": msgs,
            "hiddenmsgs": hidden,
            "inflight": hidden,
            "delayed": pa.array([0] * len(i), pa.int64()),
            "totalsent": sent,
            "totalrecv": recv,
            "oldest_age": pc.multiply(mod(k, 400), 1.5),
            "created": pc.add(1_700_000_000, pc.if_else(resets, pc.divide(k, 3000), 0)),
        },
        schema=SCHEMA,
    )


def write_lake(lake: Path, rows: int) -> None:
    """``rows`` snapshot rows: QUEUES queues, one snapshot each every 10 s, in files of
    FILE_ROWS rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    for first in range(0, rows, FILE_ROWS):
        table = snapshots(pa.array(range(first, min(first + FILE_ROWS, rows)), pa.int64()))
        at = table.column("taken_at").cast(pa.int64())
        day = dt.datetime.fromtimestamp(pc.min(at).as_py() / 1000, dt.UTC).date()
        # A file never spans two days in the real lake: split at midnight.
        midnight = int(
            dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), dt.UTC).timestamp() * 1000
        )
        before = pc.less(at, midnight)
        for part, when in (
            (table.filter(before), day),
            (table.filter(pc.invert(before)), day + dt.timedelta(days=1)),
        ):
            if part.num_rows:
                folder = lake / f"date={when.isoformat()}"
                folder.mkdir(parents=True, exist_ok=True)
                pq.write_table(part, folder / f"{first:012d}.parquet", compression="zstd")


def rollups(tmp: Path, sizes: tuple[int, ...], rounds: int) -> list[tuple[str, int, list[float]]]:
    from pipeline import jobs
    from pipeline.spark import session

    lakes = {}
    for n in sizes:
        lakes[n] = tmp / f"lake-{n}"
        t0 = time.perf_counter()
        write_lake(lakes[n], n)
        print(f"lake of {n:,} rows written in {time.perf_counter() - t0:.1f} s", flush=True)
    out: list[tuple[str, int, list[float]]] = []
    for master in MASTERS:
        spark = session(master, conf={"spark.driver.memory": "6g"})
        jobs.run_rollups(spark, lakes[sizes[0]], tmp / "warmup", full=True)  # JIT, caches
        for n in sizes:
            times = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                run = jobs.run_rollups(spark, lakes[n], tmp / f"out-{n}", full=True)
                times.append(time.perf_counter() - t0)
                print(f"rollups {master} {n:,} rows: {times[-1]:.1f} s ({run.rows:,} rollup rows,"
                      f" {run.flags} flags)", flush=True)  # fmt: skip
            out.append((master, n, times))
        spark.stop()
    return out


# -- hourly increments on the console's layout ---------------------------------------------

PER_HOUR = 3_600_000 // INTERVAL_MS  # snapshots


def write_hour(lake: Path, hour: int, small: bool) -> str:
    """The snapshots of hour number ``hour`` (from START) as the console leaves them: one
    small file per snapshot as the snapshot task writes them (``small``), or one file for
    the hour, as the hourly run compacts them."""
    import uuid

    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.lake import COMPACTED

    first = hour * PER_HOUR * QUEUES
    table = snapshots(pa.array(range(first, first + PER_HOUR * QUEUES), pa.int64()))
    at = START + dt.timedelta(hours=hour)
    folder = lake / f"date={at.date().isoformat()}"
    folder.mkdir(parents=True, exist_ok=True)
    t0 = int(at.timestamp() * 1000)
    if not small:
        name = f"{t0}{COMPACTED}{uuid.uuid4().hex}.parquet"
        pq.write_table(table, folder / name)
        return name
    for k in range(PER_HOUR):
        part = table.slice(k * QUEUES, QUEUES)
        pq.write_table(part, folder / f"{t0 + k * INTERVAL_MS}-{uuid.uuid4().hex}.parquet")
    return ""


def add_history(lake: Path, results: Path, until: int, first: int = 0) -> None:
    """Hours ``first`` to ``until`` (before the lake's first), compacted as the hourly
    runs leave them and known to the state as rolled up: each a hard link to one real
    compacted hour (360,000 rows), so that the lake lists as many files, and as large,
    as a real one (their rollups are not made, and no increment reads them: a 30-day
    lake is 259M rows, more than this shared machine can write in the time)."""
    import shutil
    import uuid

    from pipeline import state as saved
    from pipeline.lake import COMPACTED

    known = saved.load(results)
    model = results.parent / "history-hour.parquet"
    if not model.exists():
        name = write_hour(results.parent / "model", 0, small=False)
        shutil.move(next((results.parent / "model").rglob(name)), model)
    for h in range(first, until):
        t0 = int((START + dt.timedelta(hours=h)).timestamp() * 1000)
        day = (START + dt.timedelta(hours=h)).date().isoformat()
        folder = lake / f"date={day}"
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{t0}{COMPACTED}{uuid.uuid4().hex}.parquet"
        os.link(model, folder / name)
        last = t0 + (PER_HOUR - 1) * INTERVAL_MS + (QUEUES - 1) * 7
        known.files.setdefault(day, {})[name] = (t0, last)
    saved.save(results, known)


def tree_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) of these processes and every live descendant."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        pid = int(stat.parent.name)
        stats[pid] = fields
        parents.setdefault(int(fields[1]), []).append(pid)
    total, todo, seen = 0.0, list(pids), set()
    while todo:
        p = todo.pop()
        if p in seen or p not in stats:
            continue
        seen.add(p)
        total += (int(stats[p][11]) + int(stats[p][12])) / tick
        todo += parents.get(p, [])
    return total


MASTERS_HOURLY = ("local[1]", "local[2]", "standalone")
RUNS: list[str] = []  # each run, as the report lists it


def hourly(tmp: Path, days: list[int], rounds: int, spark_days: int) -> list[dict[str, Any]]:
    """One lake that grows. Its newest day as the hourly runs make it: hour by hour,
    each rolled up. Then for each size of ``days`` (older days added, ``add_history``),
    on each master, ``rounds`` hourly increments (an hour of small files added, then
    the run) as the job chooses to run them (in this process: ``driver``), and for the
    ``spark_days`` lake also forced through Spark's jobs (``spark``) for comparison."""
    sys.path.insert(0, str(ROOT / "tests"))
    from support.spark_standalone import standalone

    from pipeline import jobs
    from pipeline.spark import session

    lake, results = tmp / "lake", tmp / "out"
    biggest = max(days)
    hours = 24 * biggest
    spark = session("local[2]", conf={"spark.driver.memory": "4g"})
    t0 = time.perf_counter()
    for h in range(hours - 24, hours):
        write_hour(lake, h, small=False)
        jobs.run_rollups(spark, lake, results)
    RUNS.append(f"- the newest day written and rolled up hour by hour (24 runs, local[2]):"
                f" {time.perf_counter() - t0:.0f} s")  # fmt: skip
    print(RUNS[-1], flush=True)
    spark.stop()
    out: list[dict[str, Any]] = []
    have = 1
    cluster_cm = standalone(tmp / "standalone")
    cluster = cluster_cm.__enter__()
    try:
        for n in sorted(days):
            if n > have:
                add_history(lake, results, 24 * (biggest - have), first=24 * (biggest - n))
                have = n
            for master in MASTERS_HOURLY:
                if master == "standalone":
                    os.environ.update(cluster.env)
                spark = session(cluster.master if master == "standalone" else master,
                                conf={"spark.driver.memory": "4g"})  # fmt: skip
                jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
                watched = [jvm, os.getpid()] + (
                    [cluster_worker_pid(cluster)] if master == "standalone" else []
                )
                for engine in ("driver", "spark") if n == spark_days else ("driver",):
                    jobs.ON_THE_DRIVER_ROWS = 3_000_000 if engine == "driver" else -1
                    times, cpus, loads = [], [], []
                    for _ in range(rounds):
                        write_hour(lake, hours, small=True)
                        hours += 1
                        load = os.getloadavg()[0]
                        c0, t0 = tree_cpu(watched), time.perf_counter()
                        run = jobs.run_rollups(spark, lake, results)
                        times.append(time.perf_counter() - t0)
                        cpus.append(tree_cpu(watched) - c0)
                        loads.append(load)
                        assert run.engine == engine, run.engine
                        size = f"{n} day{'s' if n > 1 else ''}"
                        RUNS.append(f"- {size}, {master}, {engine}: {times[-1]:.1f} s,"
                                    f" {cpus[-1]:.1f} CPU-s, load {load:.1f} ({run.new_files}"
                                    f" new files, {run.rows:,} rollups, {run.flags:,} flags,"
                                    f" {run.compacted} compacted)")  # fmt: skip
                        print(RUNS[-1], flush=True)
                    out.append({"days": n, "master": master, "engine": engine,
                                "times": times, "cpus": cpus, "loads": loads})  # fmt: skip
                spark.stop()
    finally:
        cluster_cm.__exit__(None, None, None)
        jobs.ON_THE_DRIVER_ROWS = 3_000_000
    return out


def cluster_worker_pid(cluster: Any) -> int:
    """The standalone worker's JVM (its executors are its children)."""
    for stat in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            cmd = stat.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"org.apache.spark.deploy.worker.Worker" in cmd and cluster.master.encode() in cmd:
            return int(stat.parent.name)
    raise RuntimeError("no standalone worker")


def render_hourly(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    from bench.machine import describe

    lines = [
        "## Spark pipeline: hourly increments (`bench/pipeline.py --hourly`)",
        "",
        f"{describe()}; Spark 4.3 (pyspark), Java {java_version()}; {args.rounds} increments"
        " per cell, median. **The machine was shared** (other engineers' tests and Spark"
        " jobs): the load average at each run is recorded, and the CPU seconds the run used"
        " (this process, the driver's JVM and, on the standalone cluster, the worker and its"
        " executors), which the load inflates far less than the wall time.",
        "",
        f"The console's own layout: {QUEUES:,} queues snapshotted every 10 s. An *increment*:"
        " an hour of small files as the snapshot task writes them (360 files, 360,000 rows)"
        " added, then `run_rollups()` (minute and hour rollups, flags, the state, the"
        " finished hour compacted). The lake's newest day was made by hourly runs; older days"
        " are compacted hour files the state knows as rolled up (hard links to one real"
        " hour: the lake lists as many files as a real one; a 30-day lake is 259M rows, more"
        " than this machine can write in the time). *driver*: the job's choice for an"
        " increment this small (no late file, ≤ 3M new rows): pyarrow in the driver process"
        " (`pipeline/inmemory.py`), no Spark job, so the master does not matter. *spark*:"
        " the same increment forced through Spark's jobs (`jobs.ON_THE_DRIVER_ROWS = -1`)."
        " Budget (SPEC §10): ≤ 15 s on local[2] for a 7-day lake.",
        "",
        "| lake | snapshot rows | engine | "
        + " | ".join(f"{m} | CPU-s" for m in MASTERS_HOURLY)
        + " | load |",
        "|---|---:|---|" + "---:|---:|" * len(MASTERS_HOURLY) + "---:|",
    ]
    cells: dict[tuple[int, str], dict[str, Any]] = {}
    for r in rows:
        cells.setdefault((r["days"], r["engine"]), {})[r["master"]] = r
    for (n, engine), by_master in sorted(cells.items()):
        parts = []
        for m in MASTERS_HOURLY:
            r = by_master.get(m)
            parts += ([f"{statistics.median(r['times']):.1f} s",
                       f"{statistics.median(r['cpus']):.1f}"] if r else ["–", "–"])  # fmt: skip
        load = statistics.median(x for r in by_master.values() for x in r["loads"])
        lines.append(
            f"| {n} day{'s' if n > 1 else ''} | {24 * n * PER_HOUR * QUEUES:,} | {engine} |"
            f" {' | '.join(parts)} | {load:.1f} |"
        )
    lines += ["", "Each run (wall, CPU seconds, load average when it started):", "", *RUNS]
    return "\n".join(lines) + "\n"


# -- census calls' Redis time -------------------------------------------------------------


def census_slowlog(rounds: int) -> dict[str, list[int]]:
    """Every census script call's duration (µs, SLOWLOG with no threshold) reading a
    queue of 2,000 messages of 64 KB, with and without bodies, and of 2,000 small ones."""
    from bench.machine import pinned_redis
    from queues import RedisSMQ
    from queues.census import MAX_COUNT, read_range
    from queues.scripts import CENSUS

    out: dict[str, list[int]] = {}
    with pinned_redis("rsmq-bench-slowlog-") as (server, _):
        rsmq = RedisSMQ(url=server.url, ns="bench")
        import redis

        r = redis.Redis.from_url(server.url)
        rsmq.create_queue("big")
        rsmq.create_queue("small")
        for _ in range(20):
            rsmq.send_messages("big", ["é" * 32_768] * 100)  # 64 KB each
            rsmq.send_messages("small", ['{"order": 1}'] * 100)
        r.config_set("slowlog-max-len", 100_000)
        r.config_set("slowlog-log-slower-than", 0)
        for name, queue, body in (
            ("2,000 × 64 KB, body=true", "big", True),
            ("2,000 × 64 KB, sizes only", "big", False),
            ("2,000 × 12 B, body=true", "small", True),
        ):
            out[name] = []
            for _ in range(rounds):
                r.slowlog_reset()
                got = read_range(rsmq, queue, 0, MAX_COUNT, body=body)
                assert len(got) == 2000
                out[name] += [
                    e["duration"] for e in r.slowlog_get(100_000) if CENSUS.sha in str(e["command"])
                ]
        r.config_set("slowlog-log-slower-than", 10_000)
        r.close()
    return out


def render_slowlog(found: dict[str, list[int]]) -> str:
    from bench.machine import describe

    lines = [
        "## Census calls' Redis time (`bench/pipeline.py --slowlog`)",
        "",
        f"{describe()}; redis-server on core 0. Every census script call of reading a"
        " whole queue with `queues.census.read_range` (a call per 512 KB or per range), its"
        " duration from SLOWLOG with no threshold; all rounds. Budget (issue 12): no call"
        " over 2 ms on 64 KB bodies. **The machine was shared** (load"
        f" {os.getloadavg()[0]:.1f}): Redis's own time, which the load inflates only when it"
        " takes the core from Redis mid-call.",
        "",
        "| queue, read | calls | median | p99 | longest | over 2 ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, us in found.items():
        us = sorted(us)
        p99 = us[min(len(us) - 1, int(len(us) * 0.99))]
        over = sum(1 for u in us if u > 2000)
        lines.append(f"| {name} | {len(us)} | {statistics.median(us) / 1000:.2f} ms |"
                     f" {p99 / 1000:.2f} ms | {us[-1] / 1000:.2f} ms | {over} |")  # fmt: skip
    return "\n".join(lines) + "\n"


# -- census ------------------------------------------------------------------------------


def census(tmp: Path, messages: int, rounds: int) -> list[tuple[str, list[float]]]:
    from bench.machine import pinned_redis
    from queues import RedisSMQ

    with pinned_redis("rsmq-bench-census-") as (server, _):
        rsmq = RedisSMQ(url=server.url, ns="bench")
        fill(rsmq, messages)
        readers: list[tuple[str, Callable[[], int]]] = [
            (
                "redis-py, one thread: ZRANGE + pipelined HMGET/HSTRLEN",
                lambda: redis_py(server.url),
            ),
            (
                "queues.census.read_range, one thread (the source's script)",
                lambda: one_thread(rsmq),
            ),
        ]
        results = {name: [] for name, _ in readers}
        spark_results: dict[str, list[float]] = {}
        for _ in range(rounds):
            for name, read in readers:
                t0 = time.perf_counter()
                n = read()
                results[name].append(time.perf_counter() - t0)
                assert n == messages, (name, n)
        for master in MASTERS:
            for name, seconds in spark_census(server.url, tmp, master, messages, rounds).items():
                spark_results[name] = seconds
        for name, seconds in results.items():
            print(f"{name}: {messages / statistics.median(seconds):,.0f} messages/s", flush=True)
    return list(results.items()) + list(spark_results.items())


def fill(rsmq, messages: int) -> None:
    per_queue = messages // CENSUS_QUEUES
    body = '{"order": 123456, "customer": "someone@example.com", "items": [1, 2, 3], "note": "x"}'
    t0 = time.perf_counter()
    for q in range(CENSUS_QUEUES):
        name = f"queue-{q:02d}"
        rsmq.create_queue(name, vt=3600)
        for _ in range(0, per_queue, 1000):
            rsmq.send_messages(name, [body] * 1000)
        rsmq.receive_messages(name, 1000, vt=3600)  # some in flight, rc 1
    print(f"{messages:,} messages sent in {time.perf_counter() - t0:.1f} s", flush=True)


def redis_py(url: str) -> int:
    """Every message's score, rc, fr and body size: what the census reads, the plain way."""
    import redis

    r = redis.Redis.from_url(url)
    n = 0
    for q in sorted(m.decode() for m in r.smembers("bench:QUEUES")):
        zkey, hkey = f"bench:{q}", f"bench:{q}:Q"
        first = 0
        while True:
            page = r.zrange(zkey, first, first + 1999, withscores=True)
            if not page:
                break
            pipe = r.pipeline(transaction=False)
            for member, _ in page:
                mid = member.decode()
                pipe.hmget(hkey, f"{mid}:rc", f"{mid}:fr")
                pipe.hstrlen(hkey, mid)
            pipe.execute()
            n += len(page)
            first += len(page)
    r.close()
    return n


def one_thread(rsmq) -> int:
    from queues.census import queue_sizes, read_range

    n = 0
    for q in queue_sizes(rsmq):
        first = 0
        while got := read_range(rsmq, q, first, 2000):
            n += len(got)
            first += len(got)
    return n


def spark_census(
    url: str, tmp: Path, master: str, messages: int, rounds: int
) -> dict[str, list[float]]:
    from pipeline import jobs
    from pipeline.source import NAME, register
    from pipeline.spark import session

    spark = session(master)
    pin_tree(spark, {1} if master == "local[1]" else {0, 1})
    spark.stop()  # restart the context so that its Python workers inherit the pinning
    spark = session(master)
    register(spark)
    target = [jobs.Target("default", url, "bench")]
    read = f'Spark {master}: spark.read.format("rsmq").load().count()'
    job = f"Spark {master}: the census job (histograms, poison, Parquet written)"
    out: dict[str, list[float]] = {read: [], job: []}
    # Warm: the first run of each pays for code generation and the Python workers' start.
    spark.read.format(NAME).option("url", url).option("namespace", "bench").load().count()
    jobs.run_census(spark, target, tmp / "census")
    for _ in range(rounds):
        t0 = time.perf_counter()
        n = spark.read.format(NAME).option("url", url).option("namespace", "bench").load().count()
        out[read].append(time.perf_counter() - t0)
        assert n == messages
        t0 = time.perf_counter()
        run = jobs.run_census(spark, target, tmp / "census")
        out[job].append(time.perf_counter() - t0)
        assert run.messages == messages
        for name in out:
            print(f"{name}: {messages / out[name][-1]:,.0f} messages/s", flush=True)
    spark.stop()
    return out


def pin_tree(spark, cores: set[int]) -> None:
    """Pin the JVM (every thread) and the processes it started to ``cores``."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    cpus = ",".join(map(str, sorted(cores)))
    todo = [int(pid)]
    while todo:
        p = todo.pop()
        subprocess.run(["taskset", "-a", "-cp", cpus, str(p)], check=False, capture_output=True)
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == p:
                    todo.append(int(stat.parent.name))
            except (OSError, ValueError, IndexError):
                continue


# -- report ------------------------------------------------------------------------------


def render(rollup_rows, census_rows, sizes, messages: int, args) -> str:
    from bench.machine import describe

    med = {(m, n): statistics.median(t) for m, n, t in rollup_rows}
    lines = [
        "## Spark pipeline (`bench/pipeline.py" + (" --quick" if args.quick else "") + "`)",
        "",
        f"{describe()}; Spark 4.3 (pyspark), Java {java_version()}; median of {args.rounds} runs.",
        "",
        f"**Rollups** from scratch (`run_rollups(full=True)`: minute and hour rollups,"
        f" anomaly flags, Parquet written) over a synthetic lake of {QUEUES:,} queues snapshotted"
        " every 10 s, in a warm session:",
        "",
        "| snapshot rows | " + " | ".join(MASTERS) + " | local[2] speed-up | rows/s, local[2] |",
        "|---:|" + "---:|" * len(MASTERS) + "---:|---:|",
    ]
    for n in sizes:
        one, two = med[("local[1]", n)], med[("local[2]", n)]
        lines.append(f"| {n:,} | {one:.1f} s | {two:.1f} s | {one / two:.2f}× | {n / two:,.0f} |")
    lines += [
        "",
        f"**Census**: every message of a {messages:,}-message namespace ({CENSUS_QUEUES} queues),"
        " score, rc, fr and body size, read without changing anything (Redis on core 0):",
        "",
        "| reader | time | messages/s | vs redis-py |",
        "|---|---:|---:|---:|",
    ]
    base = statistics.median(census_rows[0][1])
    for name, seconds in census_rows:
        t = statistics.median(seconds)
        lines.append(f"| {name} | {t:.2f} s | {messages / t:,.0f} | {base / t:.2f}× |")
    return "\n".join(lines) + "\n"


def java_version() -> str:
    out = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return out.split('"')[1] if '"' in out else "?"


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    main()
