"""Server time and Redis round trips of the console's pages (SPEC §10).

    python bench/dashboard.py [--quick] [--write]
    python bench/dashboard.py --due   (the Coming due view of 1,000,000 delayed messages)
    python bench/dashboard.py --as-of (the pages "as of" a past time, 1,000 queues, a day kept)

Starts its own redis-server pinned to core 0 and runs the Django views in this
process pinned to core 1 (Django's test client: server time, no network or browser):
the overview with 1,000 queues, and the queue page + one message page on a
1,000,000-message queue. Round trips are counted where redis-py writes to the socket.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="100,000 messages instead of 1,000,000")
    ap.add_argument("--write", action="store_true", help="record the results in bench/RESULTS.md")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument(
        "--size",
        type=int,
        help="--browse: only the queue of this many visible messages (1000000: the 1M queue)",
    )
    ap.add_argument("--queues", type=int, help="only the overview of this many queues")
    ap.add_argument(
        "--browse",
        action="store_true",
        help="only the message browser: every tab's first / middle / last page and the scans"
        " on a 1,020,005-message and a 10,020,005-message queue (--quick: 120,005)",
    )
    ap.add_argument(
        "--calls",
        action="store_true",
        help="only the Redis time of single browse / stats script calls on the 1M queue",
    )
    ap.add_argument(
        "--fields",
        action="store_true",
        help="only the field filter's browse calls (JSON bodies) and a whole scan of a"
        " 1,000,000-message queue, with the body search and received >= N as peers",
    )
    ap.add_argument(
        "--due",
        action="store_true",
        help="only the due-time view (Coming due) of a queue of 1,000,000 delayed messages"
        " (--quick: 100,000): the queue page at each scale, the API's due read, the script",
    )
    ap.add_argument(
        "--tabs",
        action="store_true",
        help="only the queue page's four tabs on the 1,000,000-message queue of the default"
        " run (20,000 in flight, none delayed) and a live refresh of each",
    )
    ap.add_argument(
        "--as-of",
        action="store_true",
        help="only the pages 'as of' a past time: the overview of 1,000 queues (--queues) with"
        " a day of snapshot runs kept (--runs), beside the live overview in the same run",
    )
    ap.add_argument("--runs", type=int, default=8640, help="--as-of: snapshot runs kept")
    ap.add_argument(
        "--grants",
        action="store_true",
        help="only what grants cost: the overview of 1,000 queues and a 300,000-message"
        " queue's page, as the bench's user (grants differing by queue) and as a superuser"
        " (no grant read), interleaved request by request",
    )
    args = ap.parse_args()

    from bench.machine import console_env, pinned_redis
    from bench.results import publish

    with pinned_redis("rsmq-bench-dash-") as (server, tmp):
        # A snapshot of 100,000 queues takes longer than the default 10 s interval on a
        # busy machine: a minute, so the one taken first is the pages' order throughout.
        console_env(server.url, tmp, RSMQ_LAKE_DIR=str(tmp / "lake"), RSMQ_SNAPSHOT_INTERVAL="60")
        if args.calls:
            publish(browse_calls(server.url), args.write)
            return
        if args.fields:
            publish(field_calls(server.url, 100_000 if args.quick else 1_000_000), args.write)
            return
        if args.browse:
            publish(render_browse(run_browse(server.url, args), args), args.write)
            return
        if args.due:
            publish(render_due(*run_due(server.url, args), args), args.write)
            return
        if args.as_of:
            publish(render(run_as_of(server.url, args), args), args.write)
            return
        if args.grants:
            publish(grants_ab(server.url, args), args.write)
            return
        if args.tabs:
            rows = run_tabs(server.url, args)
        else:
            rows = run_big(server.url, args) if args.queues else run(server.url, args)
    publish(render(rows, args), args.write)


def grants_ab(url: str, args: argparse.Namespace) -> str:
    """The same pages as the bench's user and as a superuser, one request each in turn:
    the difference is what working out each queue's role costs."""
    granted = console_client()
    from django.contrib.auth.models import User
    from django.test import Client

    from bench.machine import describe
    from queues import RedisSMQ

    root = Client()
    root.force_login(User.objects.create_superuser("root", "r@example.com", "root"))
    rsmq = RedisSMQ(url=url, ns="bench")
    for i in range(1000):
        rsmq.create_queue(f"queue-{i:04d}")
    rsmq.create_queue("big")
    body = '{"order_id": 12345, "sku": "SKU-42", "qty": 2, "note": "' + "x" * 100 + '"}'
    for _ in range(300):
        rsmq.send_messages("big", [body] * 1000)
    lines = ["| page | grants | superuser | × |", "|---|---:|---:|---:|"]
    for label, path in (("overview, 1,000 queues", "/c/default/bench/"),
                        ("queue page, 300,000 messages", "/c/default/bench/q/big/")):  # fmt: skip
        times: dict[str, list[float]] = {"grants": [], "root": []}
        for client in (granted, root):
            assert client.get(path).status_code == 200  # warm
        for _ in range(args.rounds):
            for name, client in (("grants", granted), ("root", root)):
                t0 = time.perf_counter()
                assert client.get(path).status_code == 200
                times[name].append((time.perf_counter() - t0) * 1000)
        g, r = statistics.median(times["grants"]), statistics.median(times["root"])
        lines.append(f"| {label} | {g:.1f} ms | {r:.1f} ms | {g / r:.2f} |")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return "\n".join([
        "## What grants cost (`bench/dashboard.py --grants`)", "",
        f"{describe()}; server time of the view (Django test client), median of"
        f" {args.rounds} requests each, the two users' requests interleaved: the bench's user"
        " (viewer on *, operator on queue-0*, admin on big*: each queue's role worked out) and"
        f" a superuser (no grant read). Load average at the end {load}.", "", *lines,
    ])  # fmt: skip


SORTS = ["name", "-name", "-msgs", "visible", "-inflight", "delayed", "-oldest", "totalsent",
         "-send_rate", "receive_rate", "-wait", "drain"]  # fmt: skip


def console_client() -> Any:
    """Django set up on the bench's settings and database (migrated, static files collected
    for the hashed names the pages link), and a test client logged in as the bench's
    user: not a superuser but a member of a team whose grants differ by queue (viewer on
    every queue, operator on ``queue-0*``, admin on ``big*`` and ``later``), so every page
    works out each queue's role as production's users do. First in each run: the
    console's modules import only once Django is set up."""
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    from django.contrib.auth.models import Group

    from dashboard.models import Grant

    team = Group.objects.create(name="bench-team")
    for role, queues in (("viewer", "*"), ("operator", "queue-0*"), ("admin", "big*"),
                         ("admin", "later")):  # fmt: skip
        Grant.objects.create(group=team, role=role, queues=queues)
    user = User.objects.create_user("bench", "b@example.com", "bench")
    user.groups.add(team)
    client = Client()
    client.force_login(user)
    return client


def run_big(url: str, args: argparse.Namespace) -> list[tuple[str, float, float, int, str]]:
    """The overview of ``args.queues`` queues in every snapshot sort order, after one
    snapshot run (as the Celery task takes it), with SLOWLOG of calls over 5 ms."""
    client = console_client()
    from redis.connection import AbstractConnection

    from bench.machine import SlowLog, create_queues, rss_mb
    from dashboard.triage.conditions import take_snapshot

    n = args.queues
    print(f"creating {n:,} queues ...", flush=True)
    create_queues(url, "bench", [f"queue-{i:06d}" for i in range(n)], messages=3)
    slowlog = SlowLog(url)
    sent, original = count_sends()
    rows = []
    paths = (
        [("", "needs attention (the default)")]
        + [(f"?sort={sort}", sort) for sort in SORTS]
        + [("?q=queue-00&sort=-msgs", "search")]  # 10,000 of queue-000000…
    )
    from dashboard.places.connections import connections, get_rsmq
    from dashboard.triage import conditions

    takes = []
    for _ in range(3):  # the pages sort by the last (the interval is a minute here)
        t0 = time.perf_counter()
        run_ = take_snapshot()
        takes.append(time.perf_counter() - t0)
        assert run_.rows == n, run_
    # Its peer in the same run: judging the conditions alone (in each run above, after
    # the rows are stored), on the same stats read once more.
    conn = connections()[0]
    rsmq = get_rsmq(conn, "bench")
    stats = rsmq.queue_stats()
    t0 = time.perf_counter()
    conditions.update(conn.name, "bench", stats, rsmq)
    judged = time.perf_counter() - t0
    for query, what in paths:
        slowlog.reset()
        label = f"overview, {n:,} queues, {what}"
        row = measure(client, sent, label, "/c/default/bench/" + query, 300, args.rounds)
        rows.append((*row[:4], f"{row[4]}; SLOWLOG: {slowlog.summary()}"))
    AbstractConnection.send_packed_command = original
    args.note = (
        f" The console process's memory (RSS) at the end: {rss_mb()}. Snapshot runs (the"
        f" task's work: read, store rows + lake, judge each queue's condition and flags):"
        f" {', '.join(f'{t:.2f} s' for t in takes)}; of which judging the conditions alone"
        f" {judged:.2f} s ({100 * judged / statistics.median(takes):.0f}% of the median run)."
    )
    return rows


def run_as_of(url: str, args: argparse.Namespace) -> list[tuple[str, float, float, int, str]]:
    """The overview, a queue's page and the timeline "as of" a time in the middle of
    ``args.runs`` stored snapshot runs of ``args.queues`` (1,000) queues, with a condition
    change every tenth run on a tenth of the queues; the live overview as their peer."""
    client = console_client()
    from django.db import connection, transaction
    from redis.connection import AbstractConnection

    from bench.machine import create_queues
    from dashboard.models import ConditionChange, Snapshot
    from dashboard.snapshots import runs as snapshot_runs
    from dashboard.triage import as_of
    from dashboard.triage.conditions import CHANGE_ROW, take_snapshot

    n = args.queues = args.queues or 1000
    names = [f"queue-{i:06d}" for i in range(n)]
    print(f"creating {n:,} queues ...", flush=True)
    create_queues(url, "bench", names, messages=3)
    for _ in range(2):
        assert take_snapshot().rows == n
    # The history before them, as the snapshot task would have left it: a run every 10 s.
    first = Snapshot.objects.order_by("taken_at").values_list("taken_at", flat=True)[0]
    created = dict(Snapshot.objects.values_list("queue", "created"))
    interval = 10_000
    print(f"storing {args.runs:,} runs of history ({args.runs * n:,} rows) ...", flush=True)
    cols = snapshot_runs.COLUMNS
    extra = len(cols) - 12  # the timing columns: none
    for k in range(args.runs, 0, -1000):
        rows, changes = [], []
        for r in range(k, max(0, k - 1000), -1):
            at = first - r * interval
            for i, q in enumerate(names):
                msgs, total = (r + i) % 50, 10 * (args.runs - r)
                rows.append(("default", "bench", q, at + i, msgs, 0, 0, 0, total, total, None,
                             created[q], *([None] * extra)))  # fmt: skip
                if r % 10 == 0 and i % 10 == r // 10 % 10:
                    state = "no_consumers" if r % 20 else "healthy"
                    reason = "no consumer for 5 min" if r % 20 else ""
                    changes.append(("default", "bench", q, at + i, state, reason,
                                    40.0 if r % 20 else 0.0, ""))  # fmt: skip
        with transaction.atomic():
            snapshot_runs._insert(rows)
            q = connection.ops.quote_name
            table = q(ConditionChange._meta.db_table)
            sql = (f"INSERT INTO {table} ({', '.join(q(c) for c in CHANGE_ROW)})"
                   f" VALUES ({', '.join(['%s'] * len(CHANGE_ROW))})")  # fmt: skip
            with connection.cursor() as cursor:
                cursor.executemany(sql, changes)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    total = Snapshot.objects.count()
    then = first - args.runs // 2 * interval + n  # the middle of the day, after a run
    at = as_of.iso(then)
    sent, original = count_sends()
    pages = [
        (f"live overview of {n:,} queues (default order: the peer)", "/c/default/bench/"),
        ("as of: overview, default order", f"/c/default/bench/?as_of={then}"),
        ("as of: overview, sort by messages", f"/c/default/bench/?as_of={at}&sort=-msgs"),
        (
            "as of: overview, sort by name, page 10",
            f"/c/default/bench/?as_of={at}&sort=name&page=10",
        ),
        ("as of: overview, search", f"/c/default/bench/?as_of={at}&q=queue-0001"),
        ("as of: queue page", f"/c/default/bench/q/queue-000010/?as_of={at}"),
        ("as of: incident timeline, last hour", f"/incidents/?as_of={at}&range=1h"),
    ]
    out = [measure(client, sent, label, path, 150, args.rounds) for label, path in pages]
    AbstractConnection.send_packed_command = original
    args.note = (
        f" {total:,} snapshot rows ({args.runs + 2:,} runs of {n:,} queues, one every 10 s:"
        f" {args.runs / 360:.1f} h),"
        f" {ConditionChange.objects.count():,} condition changes; the time asked for is"
        f" {args.runs // 2:,} runs back."
    )
    return out


def run(url: str, args: argparse.Namespace) -> list[tuple[str, float, float, int, str]]:
    client = console_client()
    from redis.connection import AbstractConnection

    from queues import RedisSMQ

    rsmq = RedisSMQ(url=url, ns="bench")
    n_queues = 1000
    print(f"creating {n_queues} queues ...", flush=True)
    for i in range(n_queues):
        rsmq.create_queue(f"queue-{i:04d}")
        rsmq.send_messages(f"queue-{i:04d}", [f"message {j}" for j in range(i % 7)])
    n_msgs = 100_000 if args.quick else 1_000_000
    print(f"filling 'big' with {n_msgs:,} messages ...", flush=True)
    rsmq.create_queue("big")
    body = '{"order_id": 12345, "sku": "SKU-42", "qty": 2, "note": "' + "x" * 100 + '"}'
    for _ in range(n_msgs // 1000):
        rsmq.send_messages("big", [body] * 1000)
    for _ in range(20):
        rsmq.receive_messages("big", 1000, vt=3600)  # 20,000 in flight
    some_id = rsmq.list_messages("big", limit=1, offset=n_msgs // 2).items[0].id

    sent, original = count_sends()

    pages = [
        ("overview, 1,000 queues (sort by name)", "/c/default/bench/", 150),
        ("overview, 1,000 queues (sort by messages)", "/c/default/bench/?sort=-msgs", 150),
        (f"queue page, {n_msgs:,} messages", "/c/default/bench/q/big/", 100),
        (
            f"queue page, {n_msgs:,} messages, page 5,000",
            f"/c/default/bench/q/big/?page={n_msgs // 100}",
            100,
        ),
        (f"queue page, visible tab, {n_msgs:,}", "/c/default/bench/q/big/?state=visible", 100),
        (f"queue page, in-flight tab, {n_msgs:,}", "/c/default/bench/q/big/?state=inflight", 100),
        # none delayed among the 20,000 hidden: the tab the counts say is empty
        (f"queue page, delayed tab, {n_msgs:,}", "/c/default/bench/q/big/?state=delayed", 100),
        (f"message page, {n_msgs:,} messages", f"/c/default/bench/q/big/m/{some_id}/", 100),
        ("live refresh of the queue page (htmx partial)", "/c/default/bench/q/big/", 100),
    ]
    rows = [
        measure(client, sent, label, path, budget, args.rounds) for label, path, budget in pages
    ]

    # 10,000 queues (the budget: ≤ 150 ms sorted by any column): more than latest.LIVE_MAX,
    # so the pages sort by the last snapshot, as they do while Celery takes one every
    # interval, and read only the page live.
    print("creating 9,000 more queues ...", flush=True)
    for i in range(n_queues, 10_000):
        rsmq.create_queue(f"queue-{i:05d}")
    from dashboard.triage.conditions import take_snapshot

    assert take_snapshot().rows == 10_001
    for label, path in (
        ("overview, 10,000 queues (needs attention, the default)", "/c/default/bench/"),
        ("overview, 10,000 queues (sort by name)", "/c/default/bench/?sort=name"),
        ("overview, 10,000 queues (sort by messages)", "/c/default/bench/?sort=-msgs"),
        ("overview, 10,000 queues (sort by oldest)", "/c/default/bench/?sort=-oldest"),
        ("overview, 10,000 queues (sort by in flight)", "/c/default/bench/?sort=-inflight"),
        ("overview, 10,000 queues, search 'queue-09'", "/c/default/bench/?q=queue-09"),
    ):
        rows.append(measure(client, sent, label, path, 150, args.rounds))
    AbstractConnection.send_packed_command = original
    return rows


def fill_delayed_queue(url: str, qname: str, n: int) -> None:
    """``n`` delayed messages due over the next 30 days, evenly, and a spike of a tenth of
    them within five minutes, two days and three hours ahead (the peak to find)."""
    import redis

    from queues import RedisSMQ

    rsmq = RedisSMQ(url=url, ns="bench")
    r = redis.Redis.from_url(url)
    rsmq.create_queue(qname)
    sec, _ = r.time()
    now = int(sec) * 1000
    spike = (now // 86_400_000 + 2) * 86_400_000 + 3 * 3_600_000
    body = '{"order_id": 12345, "sku": "SKU-42", "qty": 2}'
    for k in range(n // 1000):
        ids = rsmq.send_messages(qname, [body] * 1000, delay=60)
        if k % 10 == 0:
            at = {i: spike + j * 300 for j, i in enumerate(ids)}
        else:
            at = {i: now + 60_000 + (k * 1000 + j) * (30 * 86_400_000 // n)
                  for j, i in enumerate(ids)}  # fmt: skip
        r.zadd(f"bench:{qname}", at)
    r.close()
    rsmq.close()


def run_due(
    url: str, args: argparse.Namespace
) -> tuple[list[tuple[str, float, float, int, str]], list[tuple[str, float]]]:
    """The due-time view of a queue of delayed messages: the queue page at each scale
    (server time, round trips), the API's due read, and the Redis time of one due script
    call at each scale (INFO commandstats: usec per call)."""
    client = console_client()
    from django.test import Client
    from redis.connection import AbstractConnection

    from dashboard.access import tokens
    from queues import RedisSMQ

    n = 100_000 if args.quick else 1_000_000
    print(f"filling 'later' with {n:,} delayed messages ...", flush=True)
    fill_delayed_queue(url, "later", n)
    _, token = tokens.mint("bench", "viewer", "bench", 1_000_000, queues="later")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    sent, original = count_sends()
    rows = [card(sent, scale, n, args.rounds) for scale in ("minute", "hour", "day")]
    q = "/c/default/bench/q/later/"
    rows += [
        measure(client, sent, f"queue page, Coming due by {scale}, {n:,} delayed",
                f"{q}?due={scale}", 100, args.rounds)
        for scale in ("minute", "hour", "day")
    ]  # fmt: skip
    rows.append(
        measure(api, sent, f"API GET …/queues/later/due/?scale=day, {n:,} delayed",
                "/api/c/default/bench/queues/later/due/?scale=day", 100, args.rounds)
    )  # fmt: skip
    AbstractConnection.send_packed_command = original

    import redis

    r = redis.Redis.from_url(url)
    rsmq = RedisSMQ(url=url, ns="bench")
    calls = []
    for scale in ("minute", "hour", "day"):
        rsmq.due("later", scale)  # loaded
        r.config_resetstat()
        for _ in range(100):
            rsmq.due("later", scale)
        stats = r.info("commandstats").get("cmdstat_evalsha", {})
        calls.append((scale, float(stats.get("usec_per_call", 0.0))))
        print(f"due script, {scale}: {calls[-1][1]:.0f} µs a call", flush=True)
    peak = rsmq.due("later", "day").peak
    print(f"peak found: {peak}", flush=True)
    return rows, calls


def card(
    sent: dict[str, int], scale: str, n: int, rounds: int
) -> tuple[str, float, float, int, str]:
    """The Coming due card alone, as the queue page makes it: its read (the flag, the
    workers and the due counts: one round trip), the outlook (the snapshots' receive
    rate: one query) and its template (templates/_due.html, with its bars' links)."""
    from django.http import QueryDict
    from django.template.loader import render_to_string

    from dashboard.places import place as places
    from dashboard.views.queue_flow import flow_context

    place = places.resolve("default", "bench")
    stats = places.queue_stats(place, "later")
    params = QueryDict(f"due={scale}")

    def once() -> str:
        ctx = flow_context(place, "later", params, stats)
        ctx |= {"params": params, "can_operate": True, "connection": place.conn,
                "namespace": "bench", "qname": "later"}  # fmt: skip
        return render_to_string("_due.html", ctx)

    assert "data-due-peak" in once()
    times, trips = [], []
    for _ in range(rounds):
        sent["n"] = 0
        t0 = time.perf_counter()
        once()
        times.append((time.perf_counter() - t0) * 1000)
        trips.append(sent["n"])
    med = statistics.median(times)
    p90 = statistics.quantiles(times, n=10)[-1]
    label = f"Coming due card by {scale}, {n:,} delayed (read, outlook, template)"
    print(f"{label:55s} {med:7.1f} ms  p90 {p90:7.1f} ms  {max(trips)} round trips", flush=True)
    return (label, med, p90, max(trips), f"≤ 100 ms: {'PASS' if med <= 100 else 'FAIL'}")


def render_due(
    rows: list[tuple[str, float, float, int, str]],
    calls: list[tuple[str, float]],
    args: argparse.Namespace,
) -> str:
    from bench.machine import describe

    n = "100,000" if args.quick else "1,000,000"
    lines = [
        "## Coming due (`bench/dashboard.py --due" + (" --quick" if args.quick else "") + "`)",
        "",
        f"{describe()}; redis-server on core 0, Django on core 1. A queue of {n} delayed"
        " messages due over the next 30 days, a tenth of them within five minutes two days"
        " ahead (the peak). The Coming due card alone at each scale (the minute's 60"
        " buckets, the hour's 48, the day's 30, then the peak's refinement: its one round"
        " trip, the outlook, the template), the whole queue page around it (its message"
        " browser, counts and charts too: its own budget, SPEC §10's 100 ms, is the queue"
        " page's), and the API's due read: server time (Django test client for the pages),"
        f" median and p90 of {args.rounds} requests; load average at the end"
        f" {' '.join(f'{x:.2f}' for x in os.getloadavg())} (two cores shared with other"
        " work).",
        "",
        "| page | median | p90 | Redis round trips | budget |",
        "|---|---:|---:|---:|---|",
    ]
    for label, med, p90, trips, verdict in rows:
        lines.append(f"| {label} | {med:.1f} ms | {p90:.1f} ms | {trips} | {verdict} |")
    lines += [
        "",
        "The due script alone (`RedisSMQ.due`), Redis time a call (INFO commandstats, 100"
        " calls): " + "; ".join(f"by {scale}: {us:.0f} µs" for scale, us in calls) + ".",
    ]
    return "\n".join(lines) + "\n"


def run_tabs(url: str, args: argparse.Namespace) -> list[tuple[str, float, float, int, str]]:
    """The default run's 1,000,000-message queue (20,000 of them in flight, none delayed):
    each tab of its page, and each tab's live refresh (the htmx partial)."""
    client = console_client()
    from redis.connection import AbstractConnection

    from queues import RedisSMQ

    rsmq = RedisSMQ(url=url, ns="bench")
    n_msgs = 100_000 if args.quick else 1_000_000
    print(f"filling 'big' with {n_msgs:,} messages ...", flush=True)
    rsmq.create_queue("big")
    body = '{"order_id": 12345, "sku": "SKU-42", "qty": 2, "note": "' + "x" * 100 + '"}'
    for _ in range(n_msgs // 1000):
        rsmq.send_messages("big", [body] * 1000)
    for _ in range(20):
        rsmq.receive_messages("big", 1000, vt=3600)  # 20,000 in flight
    sent, original = count_sends()
    rows = []
    for tab in ("all", "visible", "inflight", "delayed"):
        path = f"/c/default/bench/q/big/?state={tab}"
        rows.append(measure(client, sent, f"queue page, {tab} tab, {n_msgs:,}", path, 100,
                            args.rounds))  # fmt: skip
        rows.append(measure(client, sent, f"live refresh of the queue page, {tab} tab", path,
                            100, args.rounds))  # fmt: skip
    AbstractConnection.send_packed_command = original
    return rows


def fill_browse_queue(url: str, qname: str, visible: int) -> None:
    """``visible`` messages, 30,000 of which then in flight (vt 2 h) and 20,000 delayed (2 h)
    interleaved by visible-at time, then 5 poison messages (received 6 times, hidden 3 h):
    the last of the queue. Sends pipelined 20 batches of 10,000 a round trip."""
    import asyncio

    from queues import AsyncRedisSMQ

    async def main() -> None:
        async with AsyncRedisSMQ(url=url, ns="bench") as a:
            await a.create_queue(qname)
            poison = await a.send_messages(qname, [f"poison {i}" for i in range(5)])
            for _ in range(6):
                await a.receive_messages(qname, 5, vt=0)
            for mid in poison:
                await a.change_message_visibility(qname, mid, 3 * 3600)
            batch = [f"order {i:08d}" for i in range(10_000)]
            for k in range(0, visible // 10_000, 20):
                n = min(20, visible // 10_000 - k)
                await asyncio.gather(*(a.send_messages(qname, batch) for _ in range(n)))
                print(f"  {(k + n) * 10_000:,}", end="\r", flush=True)
            for _ in range(10):
                for _ in range(3):
                    await a.receive_messages(qname, 1000, vt=7200)
                await a.send_messages(qname, ["later"] * 2000, delay=7200)

    asyncio.run(main())


def run_browse(url: str, args: argparse.Namespace) -> list[tuple[str, float, float, int, str]]:
    """Every tab's first, middle and last page, Next from the middle, a scan step of
    "received >= 5" and of a body search, each with the longest Redis call (SLOWLOG)."""
    client = console_client()

    from bench.machine import SlowLog
    from queues import RedisSMQ
    from queues.models import Cursor

    rsmq = RedisSMQ(url=url, ns="bench")
    sizes = [args.size] if args.size else [100_000] if args.quick else [1_000_000, 10_000_000]
    slowlog = SlowLog(url, micros=1000)  # every call over 1 ms, to find the longest
    sent, original = count_sends()
    rows = []
    for sent_n in sizes:
        qname = f"big{sent_n}"
        print(f"filling {qname} ...", flush=True)
        fill_browse_queue(url, qname, sent_n)
        total = sent_n + 20_005  # 30,000 of them received: in flight
        visible = sent_n - 30_000
        base = f"/c/default/bench/q/{qname}/"
        pages = -(-total // 50)
        hidden_at = rsmq.census_range(qname, visible + 25_000, 1).visible_at[0]
        middle = Cursor.at_time(hidden_at).encode()
        label = f"{total:,} messages"
        paths = []
        for tab in ("all", "visible", "inflight", "delayed"):
            n = pages if tab == "all" else -(-visible // 50)
            mid = f"page={n // 2}" if tab in ("all", "visible") else f"after={middle}"
            paths += [
                (f"{label}, {tab}, first page", f"{base}?state={tab}"),
                (f"{label}, {tab}, middle page", f"{base}?state={tab}&{mid}"),
                (f"{label}, {tab}, last page", f"{base}?state={tab}&last=1"),
            ]
        far = Cursor.at_time(hidden_at).encode()
        paths += [
            (f"{label}, received ≥ 5, first scan step", f"{base}?rc=5"),
            (f"{label}, received ≥ 5, a scan step (htmx)",
             f"{base}?rc=5&after={far}&looked=1&found=0&onpage=0&part=scan"),
            (f"{label}, body search, first scan step", f"{base}?search=poison+3"),
            (f"{label}, body search, a scan step (htmx)",
             f"{base}?search=poison+3&after={far}&looked=1&found=0&onpage=0&part=scan"),
            # these bodies are not JSON: every one read, none decodes (--fields: JSON ones)
            (f"{label}, field filter, first scan step", f"{base}?where=amount+>+100"),
            (f"{label}, field filter, a scan step (htmx)",
             f"{base}?where=amount+>+100&after={far}&looked=1&found=0&onpage=0&part=scan"),
        ]  # fmt: skip
        for what, path in paths:
            slowlog.reset()
            htmx = "part=scan" in path
            row = measure(client, sent, what, path, 100, args.rounds, htmx=htmx)
            worst = max(slowlog.calls(), default=(0, ""))
            longest = f"{worst[0] / 1000:.1f} ms ({script_of(worst[1])})" if worst[0] else "< 1 ms"
            verdict = row[4] + f"; longest call {longest}: " + (
                "PASS" if worst[0] <= 5000 else "FAIL")  # fmt: skip
            rows.append((*row[:4], verdict))
        rsmq.delete_queue(qname)
    from redis.connection import AbstractConnection

    AbstractConnection.send_packed_command = original
    return rows


def browse_calls(url: str) -> str:
    """Every script call's own Redis time (SLOWLOG logging every call) while browsing the
    1,020,005-message queue: 200 keyset steps of each tab and scan, and 50 stats reads."""
    import statistics as st

    import redis

    from bench.machine import describe
    from queues import RedisSMQ

    print("filling ...", flush=True)
    fill_browse_queue(url, "big", 1_000_000)
    rsmq = RedisSMQ(url=url, ns="bench")
    r = redis.Redis.from_url(url)
    r.config_set("slowlog-max-len", 100_000)
    r.config_set("slowlog-log-slower-than", 0)
    kinds = {
        "browse, in flight (500 looked at a call at most)": {"state": "inflight"},
        "browse, delayed": {"state": "delayed"},
        "browse, all (a page of 50)": {"state": "all"},
        "browse, received >= 5 scan": {"min_rc": 5},
        "browse, body search scan": {"contains": "poison 3"},
    }
    rows = []
    for label, kw in {**kinds, "stats (sample 1,000 of 50,005 hidden)": {}}.items():
        r.slowlog_reset()
        if not kw:
            for _ in range(50):
                rsmq.queue_stats(["big"])
        else:
            after = None
            for _ in range(200):
                b = rsmq.browse("big", after=after, limit=50, budget=0, **kw)  # one call each
                after = None if b.at_end else b.resume
        times = [e["duration"] / 1000 for e in r.slowlog_get(100_000)
                 if e["command"].startswith(b"EVALSHA")]  # fmt: skip
        rows.append((label, len(times), st.median(times), st.quantiles(times, n=100)[98],
                     max(times)))  # fmt: skip
    r.config_set("slowlog-log-slower-than", 5000)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        "## Browse script calls (`bench/dashboard.py --calls`)",
        "",
        f"{describe()}; redis-server on core 0; every EVALSHA's duration from SLOWLOG"
        f" (logging every call: wall time, so a preempted call counts its wait) while"
        f" browsing the 1,020,005-message queue one script call at a time. Load average at"
        f" the end {load}. Redis logs the commands a script calls too and SLOWLOG keeps the"
        f" last 100,000 entries: a scan's count is of the calls whose entries remained.",
        "",
        "| call | calls | median | p99 | max |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, n, med, p99, worst in rows:
        lines.append(f"| {label} | {n} | {med:.2f} ms | {p99:.2f} ms | {worst:.2f} ms |")
    return "\n".join(lines) + "\n"


def fill_json_queue(url: str, qname: str, n: int) -> None:
    """``n`` JSON messages (~110 bytes: customer, amount, status, order.items[0].sku),
    1 in 1,000 of them ``status = failed``; sends pipelined as in fill_browse_queue."""
    import asyncio
    import json

    from queues import AsyncRedisSMQ

    def body(i: int) -> str:
        return json.dumps({"customer": f"cust-{i % 1000}", "amount": i % 500,
                           "status": "failed" if i % 1000 == 7 else "done",
                           "order": {"items": [{"sku": f"S-{i % 97}"}]}})  # fmt: skip

    async def main() -> None:
        async with AsyncRedisSMQ(url=url, ns="bench") as a:
            await a.create_queue(qname)
            for k in range(0, n, 200_000):
                m = min(200_000, n - k)
                await asyncio.gather(*(
                    a.send_messages(qname, [body(k + j + i) for i in range(10_000)])
                    for j in range(0, m, 10_000)
                ))  # fmt: skip
                print(f"  {k + m:,}", end="\r", flush=True)

    asyncio.run(main())


def field_calls(url: str, n: int) -> str:
    """Every browse call's own Redis time (SLOWLOG logging every call) in 200 one-call
    steps of each kind of scan over ``n`` JSON messages (a field filter; the body search
    and received >= N as peers, same queue, same run), then a whole scan of the queue
    with a field filter: wall time, calls, and the SLOWLOG entries over 5 ms."""
    import statistics as st

    import redis

    from bench.machine import describe
    from queues import RedisSMQ

    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print("filling ...", flush=True)
    fill_json_queue(url, "json", n)
    rsmq = RedisSMQ(url=url, ns="bench")
    r = redis.Redis.from_url(url)
    r.config_set("slowlog-max-len", 100_000)
    kinds = {
        "received >= 5 (peer: no body read)": {"min_rc": 5},
        "body search `cust-42,` (peer: string.find)": {"contains": "cust-42,"},
        "field `amount > 498`": {"where": "amount > 498"},
        "field `customer = cust-42 and amount >= 100`": {
            "where": "customer = cust-42 and amount >= 100"
        },
        "field `status in (failed, retry) and order.items[0].sku = S-7`": {
            "where": "status in (failed, retry) and order.items[0].sku = S-7"
        },
    }
    rows = []
    for label, kw in kinds.items():
        r.config_set("slowlog-log-slower-than", 0)
        r.slowlog_reset()
        after = None
        for _ in range(200):
            b = rsmq.browse("json", after=after, limit=50, budget=0, **kw)  # one call each
            after = None if b.at_end else b.resume
        times = [e["duration"] / 1000 for e in r.slowlog_get(100_000)
                 if e["command"].startswith(b"EVALSHA")]  # fmt: skip
        rows.append((label, len(times), st.median(times), st.quantiles(times, n=100)[98],
                     max(times)))  # fmt: skip
    # whole scans, as the console's scan steps make them (calls of BROWSE_STEP)
    whole = []
    for label, kw in [("received >= 5", {"min_rc": 5}),
                      ("body search `cust-42,`", {"contains": "cust-42,"}),
                      ("field `status = failed and amount < 100`",
                       {"where": "status = failed and amount < 100"})]:  # fmt: skip
        r.config_set("slowlog-log-slower-than", 5000)
        r.slowlog_reset()
        r.config_resetstat()
        after, calls, found, looked = None, 0, 0, 0
        start = time.perf_counter()
        while True:
            b = rsmq.browse("json", after=after, limit=500, budget=0.04, **kw)
            calls += b.calls
            found += len(b.items)
            looked += b.looked
            if b.at_end:
                break
            after = b.resume
        took = time.perf_counter() - start
        over = [e["duration"] / 1000 for e in r.slowlog_get(100_000)]
        per_call = r.info("commandstats").get("cmdstat_evalsha", {}).get("usec_per_call", 0)
        whole.append((label, looked, found, calls, took, per_call / 1000, len(over),
                      max(over, default=0)))  # fmt: skip
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        "## Field filter scan calls (`bench/dashboard.py --fields`)",
        "",
        f"{describe()}; redis-server on core 0; a queue of {n:,} JSON messages (~110 bytes:"
        " customer, amount, status, order.items[0].sku). First, 200 one-call steps of each"
        " kind (500 messages looked at a call at most, 150 with a field filter:"
        " BROWSE_FIELD_STEP), every EVALSHA's duration from SLOWLOG logging every call"
        " (wall time: a preempted call counts its wait); then the whole queue scanned as"
        " the console's scan steps do (40 ms a request), with SLOWLOG at 5 ms and INFO"
        " commandstats' time per EVALSHA (both wall time). Load average before"
        f" {load_before}, at the end {load} (a shared machine).",
        "",
        "| one call of | calls | median | p99 | max |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, k, med, p99, worst in rows:
        lines.append(f"| {label} | {k} | {med:.2f} ms | {p99:.2f} ms | {worst:.2f} ms |")
    lines += ["", "| whole scan | looked at | matched | script calls | wall time |"
              " Redis time a call (mean) | calls over 5 ms | longest |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for label, looked, found, calls, took, mean, over, worst in whole:
        lines.append(f"| {label} | {looked:,} | {found:,} | {calls:,} | {took:.1f} s |"
                     f" {mean:.2f} ms | {over} | {worst:.1f} ms |")  # fmt: skip
    return "\n".join(lines) + "\n"


def script_of(command: str) -> str:
    """A SLOWLOG entry's script name (EVALSHA <sha> ...), else its command."""
    from queues import scripts

    names = {x.sha: x.name for x in vars(scripts).values() if isinstance(x, scripts.Script)}
    parts = command.split()
    if parts[:1] != ["EVALSHA"] or len(parts) < 2:
        return parts[0] if parts else "?"
    # SlowLog keeps a command's first 40 characters: the sha is cut short
    return next((n for sha, n in names.items() if sha.startswith(parts[1])), "EVALSHA")


def render_browse(rows: list[tuple[str, float, float, int, str]], args: argparse.Namespace) -> str:
    from bench.machine import describe

    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        "## Message browser (`bench/dashboard.py --browse"
        + (" --quick" if args.quick else "")
        + "`)",
        "",
        f"{describe()}; redis-server on core 0, Django on core 1; server time of the view"
        " (Django test client, a user whose grants differ by queue), median and p90 of"
        f" {args.rounds} requests;"
        " longest single Redis call during the page's requests from SLOWLOG (calls over 1 ms"
        f" logged). Load average at the end {load} (other engineers' runs share the machine)."
        " Each queue: its visible messages, 30,000 in flight and 20,000 delayed interleaved,"
        " 5 poison messages at the back. Middle pages: page n/2 of all / visible, the"
        " hidden messages' middle time for in flight / delayed; a scan step reads for"
        " RSMQ_BROWSE_BUDGET_MS (40) at most.",
        "",
        "| page | median | p90 | Redis round trips | budget |",
        "|---|---:|---:|---:|---|",
    ]
    for label, med, p90, trips, verdict in rows:
        lines.append(f"| {label} | {med:.1f} ms | {p90:.1f} ms | {trips} | {verdict} |")
    return "\n".join(lines) + "\n"


def count_sends() -> tuple[dict[str, int], Any]:
    """Count every write of redis-py to a socket in ``sent["n"]``; returns redis-py's own
    send, to put back."""
    from redis.connection import AbstractConnection

    sent = {"n": 0}
    original = AbstractConnection.send_packed_command

    def counting(self, command, check_health=True):  # noqa: ANN001
        sent["n"] += 1
        return original(self, command, check_health)

    AbstractConnection.send_packed_command = counting
    return sent, original


def measure(
    client,
    sent: dict[str, int],
    label: str,
    path: str,
    budget: int | None,
    rounds: int,
    htmx: bool = False,
):
    headers = {}
    if label.startswith("live refresh"):
        headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "live"}
    if htmx:
        headers = {"HTTP_HX_REQUEST": "true"}
    response = client.get(path, **headers)  # warm up
    assert response.status_code == 200, (path, response.status_code)
    assert b"Sorted by the snapshot of" in response.content or "queues," not in label
    times, trips = [], []
    for _ in range(rounds):
        sent["n"] = 0
        t0 = time.perf_counter()
        response = client.get(path, **headers)
        times.append((time.perf_counter() - t0) * 1000)
        trips.append(sent["n"])
        assert response.status_code == 200
    med = statistics.median(times)
    p90 = statistics.quantiles(times, n=10)[-1]
    if budget is None:
        verdict = "no budget"
    else:
        verdict = f"≤ {budget} ms: {'PASS' if med <= budget else 'FAIL'}"
    print(f"{label:55s} {med:7.1f} ms  p90 {p90:7.1f} ms  {max(trips)} round trips", flush=True)
    return (label, med, p90, max(trips), verdict)


def render(rows: list[tuple[str, float, float, int, str]], args: argparse.Namespace) -> str:
    from bench.machine import describe

    big = f" --queues {args.queues}" if args.queues else " --tabs" if args.tabs else ""
    if getattr(args, "as_of", False):
        big = f" --as-of --runs {args.runs}"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        "## Dashboard pages (`bench/dashboard.py" + (" --quick" if args.quick else "") + big + "`)",
        "",
        f"{describe()}; redis-server on core 0, Django on core 1; server time of the view"
        " (Django test client, a user whose grants differ by queue), median and p90 of"
        f" {args.rounds} requests."
        + (
            f" Three snapshot runs first (RSMQ_SNAPSHOT_INTERVAL 60 s): every page sorts by the"
            f" last, among {3 * args.queues:,} snapshot rows;"
            f" load average at the end {load}.{args.note}"
            if args.queues and not getattr(args, "as_of", False)
            else f" Load average at the end {load}.{getattr(args, 'note', '')}"
        ),
        "",
        "| page | median | p90 | Redis round trips | budget |",
        "|---|---:|---:|---:|---|",
    ]
    for label, med, p90, trips, verdict in rows:
        lines.append(f"| {label} | {med:.1f} ms | {p90:.1f} ms | {trips} | {verdict} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
