"""Snapshot of 1,000 queues and a /metrics scrape: time and Redis round trips (SPEC §10).

    python bench/snapshots.py [--rounds N] [--write]
    python bench/snapshots.py --postgres [--rounds N] [--write]

Starts its own redis-server pinned to core 0 and runs Django in this process pinned to
core 1, on a fresh SQLite database and lake: one snapshot run as the Celery task does it
(lock, read every queue, rows into the database and a Parquet file into the lake), one
/metrics scrape (Django's test client, bearer token), and, with an hour of snapshots of
every queue in the database, the pages that draw them. Round trips are counted where
redis-py writes to the socket, apart for the queues' Redis and the broker's (the lock).

``--postgres``: the console's database is a Postgres of its own (initdb, fsync on, pinned
to core 0 with Redis) holding a day of 1,000 queues every 10 s (8.64 million rows, and
the hour before it that retention then prunes), written in bulk by the server itself;
timed on top of it: the snapshot run (and its INSERT alone), the queue page's chart
query (dashboard/snapshots/history.py) over an hour and a day, the overview, the retention prune.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from bench.machine import SlowLog

N_QUEUES = 1000
WHERE = {"queues": "to the queues' Redis", "broker": "to the broker's Redis (the lock)"}
TOKEN = "bench-token"
Row = tuple[str, float, float, str, str]  # what, median ms, p90 ms, round trips, budget


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help="record the results in bench/RESULTS.md")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument(
        "--queues", type=int, help="only a snapshot and a gzipped scrape of this many queues"
    )
    ap.add_argument("--postgres", action="store_true", help="a day of snapshots in Postgres")
    args = ap.parse_args()
    if args.postgres:
        run_postgres(args)
        return

    from bench.core import CpuMeter
    from bench.machine import console_env, pinned_redis
    from bench.results import publish

    with pinned_redis("rsmq-bench-snap-") as (server, tmp):
        console_env(
            server.url,
            tmp,
            RSMQ_LAKE_DIR=str(tmp / "lake"),
            RSMQ_METRICS_TOKEN=TOKEN,
        )
        meter = CpuMeter([os.getpid(), server.process.pid])
        args.redis_pid = server.process.pid
        rows = run_big(server.url, args) if args.queues else run(server.url, args)
        others = meter.others()
    publish(render(rows, args, others), args.write)


def run_big(url: str, args: argparse.Namespace) -> list[Row]:
    """A snapshot and a gzipped /metrics scrape of ``args.queues`` queues, with SLOWLOG."""
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment

    from bench.machine import SlowLog, create_queues
    from dashboard.triage.conditions import take_snapshot

    setup_test_environment()
    call_command("migrate", verbosity=0)
    n = args.queues
    print(f"creating {n:,} queues ...", flush=True)
    create_queues(url, "bench", [f"queue-{i:06d}" for i in range(n)], messages=3)
    meter = Meter(args.rounds, SlowLog(url), args.redis_pid)
    client = Client()
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}", "HTTP_ACCEPT_ENCODING": "gzip"}
    size = {}

    def snapshot() -> None:
        run_ = take_snapshot()
        assert run_.rows == n and not run_.skipped and not run_.locked, run_

    def scrape() -> None:
        response = client.get("/metrics", **bearer)
        assert response.status_code == 200 and response["Content-Encoding"] == "gzip"
        size["gzip"] = len(response.getvalue())  # streamed: read whole here

    rows = [
        meter.measure(f"snapshot of {n:,} queues (rows + Parquet file)", snapshot, "≤ 10,000 ms"),
        meter.measure(f"/metrics scrape, {n:,} queues, gzipped", scrape, "≤ 2,000 ms"),
    ]
    meter.stop()
    print(f"/metrics gzipped: {size['gzip'] / 1024:,.0f} KB", flush=True)
    args.note = f" The gzipped scrape is {size['gzip'] / 1024:,.0f} KB."
    return rows


def run(url: str, args: argparse.Namespace) -> list[Row]:
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment

    from dashboard.models import Snapshot
    from dashboard.snapshots import runs
    from dashboard.triage.conditions import take_snapshot
    from queues import RedisSMQ

    setup_test_environment()
    call_command("migrate", verbosity=0)
    rsmq = RedisSMQ(url=url, ns="bench")
    print(f"creating {N_QUEUES} queues ...", flush=True)
    for i in range(N_QUEUES):
        name = f"queue-{i:04d}"
        rsmq.create_queue(name)
        rsmq.send_messages(name, [f"message {j}" for j in range(i % 7)])
        if i % 3 == 0:
            rsmq.receive_messages(name, 2, vt=3600)  # in flight
        if i % 5 == 0:
            rsmq.send_message(name, "later", delay=3600)  # delayed

    meter = Meter(args.rounds)
    measure = meter.measure

    def snapshot() -> None:
        run_ = take_snapshot()
        assert run_.rows == N_QUEUES and not run_.skipped and not run_.locked, run_

    client = Client()
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}

    def scrape() -> None:
        response = client.get("/metrics", **bearer)
        assert (
            response.status_code == 200
            and response.getvalue().count(b"\nrsmq_queue_messages{") == N_QUEUES
        )

    def received_since() -> None:
        # The last run's rows say one receive fewer: to the next run, every queue has
        # received since, so it reads every queue's wait times (the worst case).
        from django.db.models import F

        from dashboard.snapshots import latest

        last = latest.last_run("default", "bench")
        assert last is not None
        last[1].update(totalrecv=F("totalrecv") - 1)

    rows = [
        measure(f"snapshot of {N_QUEUES:,} queues (rows + Parquet file)", snapshot, "≤ 1,000 ms"),
    ]
    if hasattr(runs, "_wait_readings"):  # a tree without wait readings: no such row
        rows.append(
            measure(
                f"snapshot of {N_QUEUES:,} queues, every one received since the last"
                " (wait readings of all)",
                snapshot,
                "≤ 1,000 ms",
                setup=received_since,
            )  # fmt: skip
        )
    rows.append(measure(f"/metrics scrape, {N_QUEUES:,} queues", scrape, "—"))

    # The pages that draw snapshots, with an hour of them for every queue (10 s apart),
    # and a week of one queue.
    Snapshot.objects.all().delete()
    now = rsmq.queue_stats(["queue-0000"])[0].now
    print(f"writing an hour of snapshots of {N_QUEUES} queues and a week of one ...", flush=True)
    for step in range(360):
        at = now - (360 - step) * 10_000
        Snapshot.objects.bulk_create(
            Snapshot(connection="default", namespace="bench", queue=f"queue-{i:04d}",
                     taken_at=at, msgs=step % 50, hiddenmsgs=0, inflight=0, delayed=0,
                     totalsent=step * 10, totalrecv=step * 9, created=1)
            for i in range(N_QUEUES)
        )  # fmt: skip
    Snapshot.objects.bulk_create(
        (
            Snapshot(connection="default", namespace="bench", queue="queue-0001",
                     taken_at=now - 3600_000 - step * 10_000, msgs=step % 100, hiddenmsgs=0,
                     inflight=0, delayed=0, totalsent=0, totalrecv=0, created=1)
            for step in range(1, 7 * 8640 - 360)
        ),
        batch_size=5000,
    )  # fmt: skip
    admin = User.objects.create_superuser("bench", "b@example.com", "bench")
    client.force_login(admin)
    total = Snapshot.objects.count()

    def page(path: str) -> Callable[[], None]:
        return lambda: _ok(client.get(path))

    rows += [
        measure(
            f"overview, {N_QUEUES:,} queues, {total:,} snapshot rows (sparklines, rates)",
            page("/c/default/bench/"), "≤ 150 ms",
        ),
        measure(
            "queue page with its charts, last hour", page("/c/default/bench/q/queue-0001/"),
            "≤ 100 ms",
        ),
        measure(
            "queue page with its charts, last week (60,480 snapshots)",
            page("/c/default/bench/q/queue-0001/?range=week"), "≤ 100 ms",
        ),
    ]  # fmt: skip
    meter.stop()
    return rows


DAY_SNAPSHOTS = 8640  # a day, every 10 s
PRUNED_SNAPSHOTS = 360  # the hour before it: the hourly prune's share at steady state


def run_postgres(args: argparse.Namespace) -> None:
    from bench.core import CpuMeter
    from bench.machine import console_env, create_queues, pinned_redis
    from bench.results import publish

    sys.path.insert(0, str(ROOT / "tests"))
    from support.postgres_fixtures import EmbeddedPostgres, postgres_bindir

    bindir = postgres_bindir()
    if bindir is None:
        sys.exit("bench/snapshots.py --postgres: no initdb (apt-get install postgresql)")
    with (
        pinned_redis("rsmq-bench-snap-pg-") as (server, tmp),
        EmbeddedPostgres(bindir, durable=True) as pg,
    ):
        postmaster = (pg.dir / "data" / "postmaster.pid").read_text().split()[0]
        subprocess.run(["taskset", "-acp", "0", postmaster], check=True, capture_output=True)
        console_env(server.url, tmp, RSMQ_LAKE_DIR=str(tmp / "lake"))
        os.environ.update(DATABASE_URL=pg.url, RSMQ_SNAPSHOT_RETENTION="1")
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        names = [f"queue-{i:04d}" for i in range(N_QUEUES)]
        create_queues(server.url, "bench", names, messages=3)
        meter = CpuMeter([os.getpid(), server.process.pid])
        rows, load_s = postgres_rows(server.url, names, args)
        others = meter.others()
        from django.db import connection

        with connection.cursor() as cursor:
            version = cursor.connection.info.server_version
    args.pg_version = f"{version // 10000}.{version % 100}"
    publish(render_postgres(rows, args, others, load_s), args.write)


def postgres_rows(url: str, names: list[str], args: argparse.Namespace) -> tuple[list[Row], float]:
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    from dashboard.models import Snapshot
    from dashboard.snapshots import history, runs
    from dashboard.triage.conditions import take_snapshot
    from queues import RedisSMQ

    setup_test_environment()
    rsmq = RedisSMQ(url=url, ns="bench")
    now = rsmq.queue_stats(names[:1])[0].now
    rsmq.close()
    total = DAY_SNAPSHOTS + PRUNED_SNAPSHOTS
    print(f"writing {total * len(names):,} snapshot rows in Postgres ...", flush=True)
    t0 = time.perf_counter()
    table = Snapshot._meta.db_table
    with connection.schema_editor() as editor:  # indexes after the rows: built by sorting
        for index in Snapshot._meta.indexes:
            editor.remove_index(Snapshot, index)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (connection, namespace, queue, taken_at, msgs, hiddenmsgs,"
            " inflight, delayed, totalsent, totalrecv, oldest_age, created)"
            " SELECT 'default', 'bench', 'queue-' || lpad(q::text, 4, '0'),"
            " %s - (%s - s) * 10000, s %% 50, s %% 50 / 5, s %% 50 / 10,"
            " s %% 50 / 5 - s %% 50 / 10, s * 10, s * 9,"
            " CASE WHEN s %% 50 = 0 THEN NULL ELSE s %% 600 END, 1"
            " FROM generate_series(1, %s) AS s, generate_series(0, %s) AS q",
            [now - 10_000, total, total, len(names) - 1],
        )
    with connection.schema_editor() as editor:
        for index in Snapshot._meta.indexes:
            editor.add_index(Snapshot, index)
    with connection.cursor() as cursor:
        # What autovacuum does to an insert-only table in a running console: statistics,
        # and the visibility map that lets the history index answer without the table.
        cursor.execute(f"VACUUM ANALYZE {table}")
    load_s = time.perf_counter() - t0
    stored = Snapshot.objects.count()
    print(f"{stored:,} rows in {load_s:.0f} s", flush=True)

    meter = Meter(args.rounds)
    insert_ms: list[float] = []

    def timed_insert(execute, sql, params, many, context):  # noqa: ANN001
        t = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            if many and sql.startswith(f'INSERT INTO "{table}"'):
                insert_ms.append((time.perf_counter() - t) * 1000)

    def snapshot() -> None:
        run_ = take_snapshot()
        assert run_.rows == len(names) and not run_.skipped and not run_.locked, run_

    with connection.execute_wrapper(timed_insert):
        rows = [
            meter.measure(
                f"snapshot of {len(names):,} queues into {stored:,} rows (rows + Parquet file)",
                snapshot, "≤ 1,000 ms",
            )
        ]  # fmt: skip
    inserts = insert_ms[1:]  # not the warm-up's
    med = statistics.median(inserts)
    p90 = statistics.quantiles(inserts, n=10)[-1]
    print(f"{'its INSERT of 1,000 rows':60s} {med:7.1f} ms  p90 {p90:7.1f} ms", flush=True)
    rows.append((f"its INSERT of {len(names):,} rows (one executemany)", med, p90, "—", "—"))

    now = RedisSMQ(url=url, ns="bench").queue_stats(names[:1])[0].now
    for range_, budget in (("hour", "≤ 100 ms"), ("day", "≤ 100 ms")):
        rows.append(
            meter.measure(
                f"chart query of one queue, last {range_} (`history.queue_history`)",
                lambda r=range_: history.queue_history("default", "bench", "queue-0001", r, now),
                budget,
            )
        )
    client = Client()
    client.force_login(User.objects.create_superuser("bench", "b@example.com", "bench"))
    rows += [
        meter.measure(
            "queue page with its charts, last day", lambda: _ok(client.get(
                "/c/default/bench/q/queue-0001/?range=day")), "≤ 100 ms",
        ),
        meter.measure(
            f"overview, {len(names):,} queues (sparklines, rates)",
            lambda: _ok(client.get("/c/default/bench/")), "≤ 150 ms",
        ),
    ]  # fmt: skip
    meter.stop()

    t = time.perf_counter()
    deleted, _ = runs.prune()
    prune_ms = (time.perf_counter() - t) * 1000
    assert deleted >= PRUNED_SNAPSHOTS * len(names), deleted
    print(f"retention prune: {deleted:,} rows in {prune_ms:,.0f} ms", flush=True)
    rows.append(
        (f"retention prune: {deleted:,} rows (an hour past the day), one run", prune_ms,
         prune_ms, "—", "≤ 60,000 ms: " + ("PASS" if prune_ms <= 60_000 else "FAIL"))
    )  # fmt: skip
    return rows, load_s


def render_postgres(rows: list[Row], args: argparse.Namespace, others: str, load_s: float) -> str:
    from bench.machine import describe

    load = os.getloadavg()
    lines = [
        "## Snapshots in Postgres: a day of 1,000 queues (`bench/snapshots.py --postgres`)",
        "",
        f"{describe()}, PostgreSQL {args.pg_version} (initdb defaults, fsync"
        f" on), psycopg 3; Postgres and redis-server on core 0, Django on core 1; median and"
        f" p90 of {args.rounds} runs; CPU used by other processes (Postgres's backends among"
        f" them) during the run: {others},"
        f" load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}. The table holds"
        f" a day of 1,000 queues every 10 s plus the hour before it"
        f" ({(DAY_SNAPSHOTS + PRUNED_SNAPSHOTS) * N_QUEUES:,} rows, written by one INSERT …"
        f" SELECT generate_series, indexed and vacuumed after, {load_s:.0f} s); the snapshot"
        " runs, the chart queries and the pages are timed on top of it. The INSERT line is the"
        " executemany inside each snapshot run, timed by a Django execute wrapper. The prune"
        " is the hourly retention task with 1 day kept: it deletes the hour past the day,"
        " 10,000 rows a statement (run once: it is destructive).",
        "",
        "| what | median | p90 | Redis round trips | budget |",
        "|---|---:|---:|---|---|",
    ]
    for label, med, p90, where, budget in rows:
        verdict = budget
        if budget.startswith("≤") and ":" not in budget:
            limit = float(budget.split()[1].replace(",", ""))
            verdict = f"{budget}: {'PASS' if med <= limit else 'FAIL'}"
        lines.append(f"| {label} | {med:.1f} ms | {p90:.1f} ms | {where} | {verdict} |")
    return "\n".join(lines) + "\n"


class Meter:
    """Times a call over rounds and counts its Redis round trips where redis-py writes to
    a socket, apart for the queues' Redis (db 0) and the broker's (the lock)."""

    def __init__(
        self, rounds: int, slowlog: SlowLog | None = None, redis_pid: int | None = None
    ) -> None:
        from redis.connection import AbstractConnection

        self.rounds = rounds
        self.slowlog = slowlog
        self.redis_pid = redis_pid
        self.trips: Counter[str] = Counter()
        self.original = original = AbstractConnection.send_packed_command
        trips = self.trips

        def counting(self, command, check_health=True):  # noqa: ANN001
            trips["queues" if self.db == 0 else "broker"] += 1
            return original(self, command, check_health)

        AbstractConnection.send_packed_command = counting

    def _redis_cpu(self) -> float:
        if not self.redis_pid:
            return 0.0
        fields = Path(f"/proc/{self.redis_pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        from redis.connection import AbstractConnection

        AbstractConnection.send_packed_command = self.original

    def measure(
        self,
        label: str,
        call: Callable[[], object],
        budget: str,
        setup: Callable[[], object] | None = None,
    ) -> Row:
        """``setup``: run before each round, outside its time and round trips."""
        if setup:
            setup()
        call()  # warm: connected, scripts loaded
        if self.slowlog:
            self.slowlog.reset()
        times, seen, cpu = [], Counter(), []
        for _ in range(self.rounds):
            if setup:
                setup()
            self.trips.clear()
            c0, r0 = time.process_time(), self._redis_cpu()
            t0 = time.perf_counter()
            call()
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0, self._redis_cpu() - r0))
            seen = Counter(self.trips)
        med = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1] if len(times) > 1 else med
        where = "; ".join(f"{n} {WHERE[k]}" for k, n in sorted(seen.items(), reverse=True))
        if self.slowlog:
            where += f"; SLOWLOG: {self.slowlog.summary()}"
        if self.redis_pid:
            # CPU-seconds don't grow with other work on the machine, wall time does: what
            # a quiet machine would take is at most their sum (the two mostly take turns).
            ours = statistics.median(c for c, _ in cpu)
            server = statistics.median(r for _, r in cpu)
            where += (
                f"; CPU per run (median): console {ours:.2f} s + redis-server {server:.2f} s"
                f" = {ours + server:.2f} s"
            )
        print(f"{label:60s} {med:7.1f} ms  p90 {p90:7.1f} ms  {where}", flush=True)
        return (label, med, p90, where, budget)


def _ok(response) -> None:  # noqa: ANN001
    assert response.status_code == 200, response.status_code


def render(rows: list[Row], args: argparse.Namespace, others: str) -> str:
    from bench.machine import describe, rss_mb

    load = os.getloadavg()
    big = f" --queues {args.queues}" if args.queues else ""
    lines = [
        f"## Snapshots and /metrics (`bench/snapshots.py{big}`)",
        "",
        f"{describe()}, SQLite; redis-server on core 0, Django on core 1; median and p90 of"
        f" {args.rounds} runs; CPU used by other processes during the run: {others}, load"
        f" average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}. A snapshot run is"
        " what the Celery task does: take the lock in the broker's Redis, read every queue of"
        " the namespace (`queue_stats`: the queue list and the 5 stats scripts of the queues"
        " it held last time, in one pipeline), write the rows with one bulk insert and one"
        " Parquet file, release the lock."
        + (
            f" SLOWLOG logs Redis calls over 5 ms during the timed rounds. The console process's"
            f" memory (RSS) at the end: {rss_mb()}.{getattr(args, 'note', '')}"
            if args.queues
            else ""
        ),
        "",
        "| what | median | p90 | Redis round trips | budget |",
        "|---|---:|---:|---|---|",
    ]
    for label, med, p90, where, budget in rows:
        verdict = budget
        if budget.startswith("≤"):
            limit = float(budget.split()[1].replace(",", ""))
            verdict = f"{budget}: {'PASS' if med <= limit else 'FAIL'}"
        lines.append(f"| {label} | {med:.1f} ms | {p90:.1f} ms | {where} | {verdict} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
