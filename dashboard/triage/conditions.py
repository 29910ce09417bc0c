"""Each queue's condition, judged at every snapshot (``take_snapshot``: ``update`` right
after the run is stored, in the same Celery task): what its consumers are
doing, why in words, and how urgent it is. The overview's default order is its ``score``.

Consumers, from the snapshots' counters (so it holds for every RSMQ client, Node rsmq's
too) and, for a crash loop, from the receive counts of a few hidden messages:

* **no consumers**: messages are visible, the oldest has waited RSMQ_NO_CONSUMER_AFTER
  seconds, and nothing was received for as long (totalrecv flat across snapshots);
* **crash-looping**: at least RSMQ_CRASH_LOOP_RECEIVES receives over the window, fewer
  than half of them followed by a delete, and messages that came back (a receive count of
  2 or more among at most ``SAMPLE`` in-flight and ``SAMPLE`` visible messages);
* **falling behind**: receives go on, but the backlog rose over the window and its oldest
  message is older than at its start, and older than half the window;
* **idle**: nothing visible, nothing in flight, nothing sent or received over the window
  (delayed messages only: scheduled);
* **stale**: what would be "no consumers", but nothing was sent either over the window and
  the backlog is small (under RSMQ_BACKLOG_GROWTH_MIN): a queue left behind with a few
  messages, said in words, not an incident;
* **expected idle**: nothing consumes it by design — a dead-letter queue (unless an
  operator said it must be consumed), or a queue an operator marked so
  (``QueueExpectation``): never "no consumers", never over its SLO; what arrives in a
  dead-letter queue counts on the queues that dead-letter to it;
* **healthy**: otherwise.

A queue an operator paused (queues/ops/flow.py) is never judged to have no consumers nor
to fall behind: its consumers are held on purpose, and its reason says so ("paused: deploy
42"); a throttled one's reason names its rate.

The score is how bad (the state, a growing backlog, the oldest over its SLO, dead letters
arriving from it, the pipeline's open flags that no operator acknowledged or snoozed,
firing alerts) times how big (``log10(10 + backlog + 60 × rate)``): a queue with nothing
consuming a big growing backlog comes before small quiet queues whose few messages are old.

The console's own anomaly flags (``source="console"``) open and close here too, at each
snapshot: consumers stalled, redelivery storm (a crash loop), backlog growing, oldest over
its SLO; the pipeline's hourly flags are added to them.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection as db
from django.db import transaction
from django.db.models import Max, Min
from redis.exceptions import RedisError

from dashboard.display.formatting import duration as _duration
from dashboard.display.formatting import exact, per_second
from dashboard.models import (
    Alert,
    AnomalyFlag,
    ConditionChange,
    QueueCondition,
    QueueExpectation,
    Snapshot,
)
from dashboard.places.connections import get_rsmq
from dashboard.triage import due, forecast, thresholds
from dashboard.triage.flags import quiet_keys
from queues import RedisSMQ
from queues.errors import RsmqError
from queues.models import Flow, QueueStats

if TYPE_CHECKING:
    from dashboard.snapshots.runs import Run

log = logging.getLogger(__name__)

State = QueueCondition.State
Kind = AnomalyFlag.Kind
#: the states that are incidents (the overview's badge, its count)
INCIDENTS = frozenset({State.NO_CONSUMERS, State.CRASH_LOOPING, State.FALLING_BEHIND})

#: how bad each part is (the score is their sum times the queue's size)
POINTS = {
    State.NO_CONSUMERS: 40.0,
    State.CRASH_LOOPING: 30.0,
    State.FALLING_BEHIND: 20.0,
    State.STALE: 1.0,
    "growing": 15.0,
    "over_slo": 10.0,
    "dead_letters": 10.0,
    "flag": 5.0,  # each open pipeline flag of a kind the console doesn't judge itself
    "alert": 25.0,  # each firing alert (at most ALERTS_COUNTED)
}
ALERTS_COUNTED = 3
#: messages of each state read per crash-loop candidate (their rc), and candidates per run
SAMPLE = 20
SAMPLED_QUEUES = 50

#: the console's flags: the anomaly kind each condition opens
CONSOLE_KINDS = (Kind.CONSUMERS_STALLED, Kind.REDELIVERY_STORM, Kind.BACKLOG_GROWING,
                 Kind.OLDEST_AGE)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Base:
    """A queue's reading a window ago (or the earliest since)."""

    taken_at: int
    msgs: int
    delayed: int
    totalsent: int
    totalrecv: int
    oldest_age: float | None
    created: int


@dataclass
class Judged:
    """One queue's condition, before it is stored."""

    qname: str
    state: str
    parts: list[str] = field(default_factory=list)
    points: float = 0.0
    size: float = 1.0
    send_rate: float | None = None
    receive_rate: float | None = None
    recv_since: int = 0
    kinds: dict[str, dict[str, float]] = field(default_factory=dict)  # flag kind -> figures
    pipeline: list[str] = field(default_factory=list)  # the pipeline's open flag kinds
    figures: dict[str, Any] = field(default_factory=dict)


def duration(seconds: float) -> str:
    return "under a second" if seconds < 1 else _duration(seconds)


def size_of(backlog: int, rate: float | None) -> float:
    return math.log10(10 + max(0, backlog) + 60 * max(0.0, rate or 0.0))


def score(points: float, alerts: int, size: float) -> float:
    """The overview's default order: how bad (a condition's points, its firing alerts')
    times how big (``size_of``)."""
    return (points + POINTS["alert"] * min(alerts, ALERTS_COUNTED)) * size


def base_readings(conn: str, ns: str, at: int, before: int) -> dict[str, Base]:
    """Each queue's reading of the last run at or before ``at`` (looking back three
    intervals), else of the first run after it that ended before ``before`` (snapshots
    began within the window): two queries, about one row per queue."""
    interval = round(settings.RSMQ_SNAPSHOT_INTERVAL * 1000)
    mine = Snapshot.objects.filter(connection=conn, namespace=ns)
    last = mine.filter(taken_at__gt=at - 3 * interval, taken_at__lte=at).aggregate(
        t=Max("taken_at")
    )["t"]
    if last is not None:
        rows = mine.filter(taken_at__gt=last - interval, taken_at__lte=last).order_by("taken_at")
    else:
        first = mine.filter(taken_at__gt=at, taken_at__lt=before).aggregate(t=Min("taken_at"))["t"]
        if first is None:
            return {}
        end = min(first + interval, before)
        rows = mine.filter(taken_at__gte=first, taken_at__lt=end).order_by("-taken_at")
    fields = ("queue", "taken_at", "msgs", "delayed", "totalsent", "totalrecv", "oldest_age",
              "created")  # fmt: skip
    return {r[0]: Base(*r[1:]) for r in rows.values_list(*fields).iterator()}


def _evidence(rsmq: RedisSMQ | None, qnames: list[str]) -> dict[str, int]:
    """The highest receive count among a few in-flight and visible messages of each
    queue (bounded: SAMPLE of each, SAMPLED_QUEUES queues)."""
    out: dict[str, int] = {}
    if rsmq is None:
        return out
    for q in qnames[:SAMPLED_QUEUES]:
        try:
            rc = 0
            for state in ("inflight", "visible"):
                # the first SAMPLE of the state, no count of it (a count of in-flight
                # messages scans the hidden ones: up to 20 calls a queue)
                page = rsmq.browse(q, state, limit=SAMPLE, preview=1)
                rc = max([rc, *(m.rc for m in page.items)])
            out[q] = rc
        except RsmqError as e:  # a queue gone or corrupt: no evidence, the others go on
            log.info("crash-loop evidence of %s not read: %s", q, e)
    return out


def judge(
    conn: str,
    ns: str,
    stats: list[QueueStats],
    prev: dict[str, tuple[int, int, int, int, int, int]],
    base: dict[str, Base],
    dead_letter_queues: Collection[str],
    pipeline_flags: dict[str, set[str]],
    rsmq: RedisSMQ | None,
    flows: Mapping[str, Flow] | None = None,
    expected_idle: Collection[str] = (),
) -> list[Judged]:
    """Every readable queue's condition. ``prev``: each queue's last condition
    (taken_at, created, msgs, totalsent, totalrecv, recv_since); ``pipeline_flags``: the
    pipeline's open flags that still count (none an operator quieted); ``flows``: the
    namespace's paused and throttled queues; ``expected_idle``: the queues nothing
    consumes by design."""
    flows = flows or {}
    quiet_after = float(settings.RSMQ_NO_CONSUMER_AFTER)
    crash_receives = int(settings.RSMQ_CRASH_LOOP_RECEIVES)
    growth = thresholds.Growth.from_settings()
    slo_of = thresholds.oldest_age_slos(conn, ns)
    out: list[Judged] = []
    candidates: dict[str, Judged] = {}
    for s in stats:
        if s.unreadable:
            continue
        j = Judged(s.qname, State.HEALTHY)
        p = prev.get(s.qname)
        if p is not None and p[1] == s.created and p[0] < s.now:
            seconds = (s.now - p[0]) / 1000
            j.send_rate = max(0, s.totalsent - p[3]) / seconds
            j.receive_rate = max(0, s.totalrecv - p[4]) / seconds
            j.recv_since = p[5] if s.totalrecv == p[4] else s.now
        else:
            j.recv_since = s.now
        b = base.get(s.qname)
        if b is not None and (b.created != s.created or b.taken_at >= s.now):
            b = None
        span = (s.now - b.taken_at) / 1000 if b else 0.0
        received = s.totalrecv - b.totalrecv if b else None
        if b is not None and received == 0:
            j.recv_since = min(j.recv_since, b.taken_at)
        backlog = s.msgs - s.delayed
        rise = backlog - (b.msgs - b.delayed) if b else 0
        sent = s.totalsent - b.totalsent if b else 0
        deleted = max(0, sent - (s.msgs - b.msgs)) if b else 0
        oldest = s.oldest_age
        quiet = (s.now - j.recv_since) / 1000
        if b is not None:
            j.figures = {"span": span, "rise": rise, "received": received, "deleted": deleted}
        flow = flows.get(s.qname)
        if flow is not None:
            what = "paused" if flow.paused else f"throttled to {per_second(flow.rate)}"
            j.parts.append(f"{what}: {flow.reason}" if flow.reason else what)
        paused = flow is not None and flow.paused
        idle_by_design = s.qname in expected_idle
        if idle_by_design:
            j.state = State.EXPECTED_IDLE
            if s.qname in dead_letter_queues and rise > 0:
                j.parts.append(f"+{exact(rise)} dead letters in {duration(span)}")
            j.pipeline = []  # its stalled consumers and old messages are by design
            j.size = size_of(s.visible + s.inflight, None)
            out.append(j)
            continue
        if (
            s.visible > 0 and quiet >= quiet_after and (oldest or 0) >= quiet_after
            and b is not None and not sent and backlog < growth.floor and not paused
        ):  # fmt: skip
            # Left behind: nothing sent, nothing received, a handful of messages.
            j.state = State.STALE
            j.parts.append(
                f"stale: {exact(backlog)} message{'' if backlog == 1 else 's'}, nothing sent"
                f" or received for {duration(quiet)}"
                + (f", oldest {duration(oldest)}" if oldest is not None else "")
            )
            j.pipeline = []  # the pipeline's "stalled" and "old" flags say the same
            j.size = size_of(s.visible + s.inflight, None)
            out.append(j)
            continue
        if paused:
            pass  # held on purpose: neither "no consumers" nor "falling behind"
        elif s.visible > 0 and quiet >= quiet_after and (oldest or 0) >= quiet_after:
            j.state = State.NO_CONSUMERS
            j.parts.append(f"no consumer for {duration(quiet)}")
            j.kinds[Kind.CONSUMERS_STALLED] = {"visible_max": float(s.visible)}
        elif received is not None and received >= crash_receives and deleted * 2 < received:
            candidates[s.qname] = j  # crash-looping if messages came back: read below
        elif (
            received
            and rise > 0
            and oldest is not None
            and oldest >= span / 2
            and oldest > ((b.oldest_age or 0.0) if b else 0.0)
        ):
            j.state = State.FALLING_BEHIND
            j.parts.append(
                f"falling behind: {per_second(received / span)} received,"
                f" {per_second(sent / span)} sent"
            )
        elif s.visible == 0 and s.inflight == 0 and not (received or sent):
            j.state = State.IDLE
        if b is not None and growth.growing(backlog, b.msgs - b.delayed, span):
            j.points += POINTS["growing"]
            j.parts.append(f"backlog +{exact(rise)} in {duration(span)} ({exact(backlog)})")
            j.kinds[Kind.BACKLOG_GROWING] = {
                "backlog_from": float(b.msgs - b.delayed), "backlog_to": float(backlog)
            }  # fmt: skip
        slo = slo_of(s.qname)
        if oldest is not None and slo > 0 and oldest > slo:
            j.points += POINTS["over_slo"]
            j.parts.append(f"oldest {duration(oldest)} (SLO {duration(slo)})")
            j.kinds[Kind.OLDEST_AGE] = {"oldest_age_max": oldest, "slo": slo}
        if s.qname in dead_letter_queues and rise > 0:
            j.parts.append(f"+{exact(rise)} dead letters in {duration(span)}")
        j.pipeline = sorted(pipeline_flags.get(s.qname, ()))
        j.size = size_of(s.visible + s.inflight, max(j.send_rate or 0, j.receive_rate or 0))
        out.append(j)
    _dead_lettering(stats, base, out)
    rc = _evidence(rsmq, list(candidates))
    for q, j in candidates.items():
        got = rc.get(q, 0)
        received, deleted, span = (j.figures[k] for k in ("received", "deleted", "span"))
        if got >= 2:
            j.state = State.CRASH_LOOPING
            j.parts.insert(
                0,
                f"crash-looping: {exact(received)} receives, {exact(deleted)} deletes in"
                f" {duration(span)}, messages received up to {got} times",
            )
            j.kinds[Kind.REDELIVERY_STORM] = {
                "received": float(received), "sent": float(received - deleted),
                "receive_rate_max": received / span if span else 0.0,
            }  # fmt: skip
            j.figures["rc_max"] = got
    for j in out:
        j.points += POINTS.get(j.state, 0.0)
        # The pipeline's open flags add what the console did not find itself.
        for kind in j.pipeline:
            if kind not in j.kinds:
                j.points += POINTS["flag"]
                j.parts.append(f"flag: {Kind(kind).label}" if kind in Kind.values else "flag")
    return out


def _dead_lettering(stats: list[QueueStats], base: dict[str, Base], out: list[Judged]) -> None:
    """Dead letters arriving count on the queue that failed them, not on the dead-letter
    queue they land in: each queue whose dead-letter queue grew over the window gets the
    points and says where they go (a dead-letter queue shared by several queues: each
    of them, naming the others)."""
    by_name = {j.qname: j for j in out}
    now = {s.qname: s for s in stats if not s.unreadable}
    sources: dict[str, list[str]] = defaultdict(list)
    for s in now.values():
        if s.dlq and s.dlq in now:
            sources[s.dlq].append(s.qname)
    for dlq, names in sources.items():
        d, b = now[dlq], base.get(dlq)
        if b is None or b.created != d.created or b.taken_at >= d.now:
            continue
        rise = (d.msgs - d.delayed) - (b.msgs - b.delayed)
        if rise <= 0:
            continue
        span = (d.now - b.taken_at) / 1000
        for q in names:
            j = by_name.get(q)
            if j is None:
                continue
            shared = [n for n in names if n != q]
            j.points += POINTS["dead_letters"]
            j.parts.append(
                f"dead-lettering: +{exact(rise)} to {dlq} in {duration(span)}"
                + (f" (shared with {', '.join(sorted(shared))})" if shared else "")
            )


@dataclass(frozen=True, slots=True)
class Expectation:
    """Whether a queue is expected idle, and who said so ("": the default, a dead-letter
    queue's or any other queue's)."""

    idle: bool
    by: str = ""


def expectation(conn: str, ns: str, qname: str, dead_letter_queue: bool) -> Expectation:
    row = QueueExpectation.objects.filter(connection=conn, namespace=ns, queue=qname).first()
    if row is None:
        return Expectation(dead_letter_queue)
    return Expectation(row.idle, row.by)


def expected_idle(conn: str, ns: str, stats: Collection[QueueStats]) -> set[str]:
    """The queues nothing consumes by design: dead-letter queues, unless an operator said
    otherwise, and the queues an operator marked so (``QueueExpectation``)."""
    said = dict(
        QueueExpectation.objects.filter(connection=conn, namespace=ns).values_list("queue", "idle")
    )
    dlqs = {s.dlq for s in stats if s.dlq}
    return {q for q in dlqs if said.get(q, True)} | {q for q, idle in said.items() if idle}


def update(conn: str, ns: str, stats: list[QueueStats], rsmq: RedisSMQ | None) -> int:
    """Judge a namespace's run (``stats``, just stored as snapshot rows) and store it:
    one row per queue, and the console's flags opened or closed. Returns the rows."""
    readable = [s for s in stats if not s.unreadable]
    if not readable:
        QueueCondition.objects.filter(connection=conn, namespace=ns).delete()
        return 0
    start = min(s.now for s in readable)
    now = max(s.now for s in readable)
    where = {"connection": conn, "namespace": ns}
    prev: dict[str, tuple[int, int, int, int, int, int]] = {}
    said: dict[str, tuple[str, str, float]] = {}  # what each queue's condition said last
    for r in (
        QueueCondition.objects.filter(**where)
        .values_list("queue", *PREV, "state", "reason", "points")
        .iterator()
    ):
        prev[r[0]], said[r[0]] = r[1:7], r[7:]
    base = base_readings(conn, ns, start - round(settings.RSMQ_BACKLOG_WINDOW * 1000), start)
    dlqs = {s.dlq for s in readable if s.dlq}
    flags = AnomalyFlag.objects.filter(**where, end__isnull=True)
    quieted = quiet_keys(conn, ns, now)  # acknowledged or snoozed: no longer counted
    pipeline_flags: dict[str, set[str]] = defaultdict(set)
    for q, kind in flags.exclude(source=AnomalyFlag.Source.CONSOLE).values_list("queue", "kind"):
        if (q, kind) not in quieted:
            pipeline_flags[q].add(kind)
    firing = firing_counts(conn, ns)
    idle = expected_idle(conn, ns, readable)
    judged = judge(conn, ns, readable, prev, base, dlqs, pipeline_flags, rsmq, flows_of(rsmq), idle)
    # Every queue's outlook, for the orders of a namespace too big to read live (one
    # GROUP BY over the window: bench/RESULTS.md, "Dashboard pages (`bench/dashboard.py
    # --queues 100000`)").
    outlooks = forecast.outlooks(conn, ns, None, now)
    by_name = {s.qname: s for s in readable}
    rows = []
    for j in judged:
        s = by_name[j.qname]
        alerts = firing.get(j.qname, 0)
        o = outlooks.get(j.qname)
        rows.append(
            (conn, ns, j.qname, s.now, s.created, s.msgs, s.totalsent, s.totalrecv, j.recv_since,
             j.state, "; ".join(j.parts)[:500], j.points, j.size, alerts,
             score(j.points, alerts, j.size), j.send_rate,
             j.receive_rate, _json(j.figures) if j.points or j.parts else "{}",
             o.wait_key if o else None, o.drain_key if o else None)
        )  # fmt: skip
    # The history (ConditionChange): a row only for a queue whose condition says
    # something else than at its last judgement, so a page "as of" a past time can say
    # what the overview said then, and why.
    changes = [
        (conn, ns, r[2], r[3], r[9], r[10], r[11], (said.get(r[2]) or ("",))[0])
        for r in rows
        if said.get(r[2]) != (r[9], r[10], r[11])
    ]
    with transaction.atomic():
        QueueCondition.objects.filter(**where).delete()
        _insert(rows)
        _insert(changes, ConditionChange, CHANGE_ROW)
        _flags(conn, ns, judged, now)
    return len(rows)


#: what the next judgement reads of a queue's last condition (``judge``'s ``prev``)
PREV = ("taken_at", "created", "msgs", "totalsent", "totalrecv", "recv_since")
ROW = ("connection", "namespace", "queue", "taken_at", "created", "msgs", "totalsent",
       "totalrecv", "recv_since", "state", "reason", "points", "size", "alerts", "score",
       "send_rate", "receive_rate", "figures", "wait_p95", "drain_key")  # fmt: skip


def _json(value: dict[str, Any]) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))


#: a row of the conditions' history (ConditionChange)
CHANGE_ROW = ("connection", "namespace", "queue", "at", "state", "reason", "points", "was")


def _insert(
    rows: list[tuple[Any, ...]],
    model: type[QueueCondition | ConditionChange] = QueueCondition,
    columns: tuple[str, ...] = ROW,
) -> None:
    if not rows:
        return
    meta = model._meta
    by_name = {f.name: f.column for f in meta.concrete_fields}
    q = db.ops.quote_name
    sql = (
        f"INSERT INTO {q(meta.db_table)} ({', '.join(q(by_name[c]) for c in columns)})"
        f" VALUES ({', '.join(['%s'] * len(columns))})"
    )
    with db.cursor() as cursor:
        cursor.executemany(sql, rows)


def _flags(conn: str, ns: str, judged: list[Judged], now: int) -> None:
    """Open the console's flags that hold now and close those that no longer do."""
    want = {(j.qname, kind): figures for j in judged for kind, figures in j.kinds.items()}
    mine = AnomalyFlag.objects.filter(
        connection=conn, namespace=ns, source=AnomalyFlag.Source.CONSOLE, end__isnull=True
    )
    have = {(f.queue, f.kind): f for f in mine.only("pk", "queue", "kind", "start", "figures")}
    going_on, ended = [], []
    for key, flag in have.items():
        flag.intervals = max(1, round((now - flag.start) / 60_000))
        if key not in want:
            flag.end = now
            ended.append(flag)
        else:
            # Still open: its figures and length as of now (its summary on the pages).
            flag.figures = _widest(flag.kind, flag.figures, want[key])
            going_on.append(flag)
    AnomalyFlag.objects.bulk_update(ended, ["end", "intervals"], batch_size=1000)
    AnomalyFlag.objects.bulk_update(going_on, ["figures", "intervals"], batch_size=1000)
    new = [
        AnomalyFlag(
            connection=conn,
            namespace=ns,
            queue=q,
            kind=kind,
            start=now,
            end=None,
            intervals=1,
            figures=figures,
            source=AnomalyFlag.Source.CONSOLE,
        )  # fmt: skip
        for (q, kind), figures in want.items()
        if (q, kind) not in have
    ]
    AnomalyFlag.objects.bulk_create(new, batch_size=2000)


def _widest(kind: str, before: dict[str, float], now: dict[str, float]) -> dict[str, float]:
    """A flag's figures over its whole span: the largest so far, the first backlog."""
    out = dict(now)
    for key in ("visible_max", "oldest_age_max", "received", "receive_rate_max"):
        if key in before and key in now:
            out[key] = max(before[key], now[key])
    if kind == Kind.BACKLOG_GROWING and "backlog_from" in before:
        out["backlog_from"] = before["backlog_from"]
    return out


def firing_counts(conn: str, ns: str) -> dict[str, int]:
    """Firing alerts per queue of a namespace."""
    alerts = Alert.objects.filter(connection=conn, namespace=ns, state=Alert.State.FIRING)
    counts: dict[str, int] = defaultdict(int)
    for q in alerts.values_list("queue", flat=True):
        counts[q] += 1
    return dict(counts)


def refresh_alerts(conn: str, ns: str) -> int:
    """After an alert evaluation: each queue's firing alerts into its score. One read of
    the namespace's conditions, one executemany of the rows that change (a pattern rule
    may fire on 100,000 queues at once: no list of them in a query). Returns the rows."""
    firing = firing_counts(conn, ns)
    rows = QueueCondition.objects.filter(connection=conn, namespace=ns)
    changes = []
    for pk, queue, alerts, points, size in rows.values_list(
        "pk", "queue", "alerts", "points", "size"
    ).iterator(chunk_size=10_000):
        n = firing.get(queue, 0)
        if n != alerts:
            changes.append((n, score(points, n, size), pk))
    if changes:
        q = db.ops.quote_name
        table = q(QueueCondition._meta.db_table)
        sql = f"UPDATE {table} SET {q('alerts')} = %s, {q('score')} = %s WHERE {q('id')} = %s"
        with db.cursor() as cursor:
            cursor.executemany(sql, changes)
    return len(changes)


def flows_of(rsmq: RedisSMQ | None) -> dict[str, Flow]:
    """The namespace's paused and throttled queues (one command); none when they can't
    be read (the queues are judged as if none were)."""
    if rsmq is None:
        return {}
    try:
        return rsmq.flows()
    except (RsmqError, RedisError) as e:
        log.warning("flow flags not read: %s", e)
        return {}


def take_snapshot() -> Run:
    """A snapshot run (what Celery beat runs), then each namespace it read judged: each
    queue's condition and the console's flags, stored apart from the run, so that a
    failure here never loses the snapshot."""
    # The lake's writer (pyarrow, some 40 MB) is imported by the process that takes
    # snapshots, the Celery worker, and never by the web processes that judge nothing.
    from dashboard.snapshots import runs

    run = runs.take()
    for conn, ns, stats in run.read:
        try:
            update(conn.name, ns, stats, get_rsmq(conn, ns))
        except Exception:  # noqa: BLE001 - the snapshot is stored; the next run judges again
            log.exception("conditions of %s/%s not judged", conn.name, ns)
        try:  # what the overview calls out of what is coming due
            due.refresh_peaks(get_rsmq(conn, ns), stats)
        except (RsmqError, RedisError) as e:
            log.warning("due peaks of %s/%s not found: %s", conn.name, ns, e)
    return run
