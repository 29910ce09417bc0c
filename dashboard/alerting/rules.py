"""What a rule reads: the namespace's last snapshot run (and the one before, for rates),
the pipeline's open anomaly flags, and, for dead letters, the queues' live counters."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from django.conf import settings
from django.db.models import QuerySet

from dashboard.models import AlertRule, AnomalyFlag, QueueCondition, Snapshot
from dashboard.places.connections import connections, get_rsmq
from dashboard.snapshots import latest

FIELDS = ("queue", "taken_at", "msgs", "hiddenmsgs", "inflight", "oldest_age", "totalsent",
          "totalrecv", "created")  # fmt: skip
RATES = {AlertRule.Metric.SEND_RATE: "totalsent", AlertRule.Metric.RECEIVE_RATE: "totalrecv"}


@dataclass(frozen=True, slots=True)
class Reading:
    queue: str
    taken_at: int  # epoch ms
    msgs: int
    hiddenmsgs: int
    inflight: int
    oldest_age: float | None
    totalsent: int
    totalrecv: int
    created: int


@dataclass
class Run:
    """A namespace's last snapshot run: when, its readings, and the run before's."""

    taken_at: int
    now: dict[str, Reading]
    before: dict[str, Reading]


def matches(rule: AlertRule, qname: str) -> bool:
    if rule.redis:
        return False
    return qname == rule.queue if rule.queue else fnmatchcase(qname, rule.pattern)


def last_run(conn: str, ns: str, queues: Iterable[str] | None, previous: bool) -> Run | None:
    """The namespace's last run (only ``queues`` of it, when given), and with
    ``previous`` the run before; None when snapshots have not run lately (nothing to
    judge by: alerts keep their state)."""
    found = latest.last_run(conn, ns)
    if found is None:
        return None
    taken_at, rows = found
    names = None if queues is None else list(queues)
    now = _readings(rows, names)
    before: dict[str, Reading] = {}
    if previous:
        # The run before ended before this one's first reading (runs never overlap).
        first = min((x.taken_at for x in now.values()), default=taken_at)
        mine = Snapshot.objects.filter(connection=conn, namespace=ns, taken_at__lt=first)
        last = mine.order_by("-taken_at").values_list("taken_at", "queue").first()
        if last is not None:
            # It began after the reading before its last one (as in latest.last_run).
            start = (
                mine.filter(queue=last[1], taken_at__lt=last[0])
                .order_by("-taken_at")
                .values_list("taken_at", flat=True)
                .first()
            )
            lo = start if start is not None else last[0] - settings.RSMQ_SNAPSHOT_INTERVAL * 500
            before = _readings(mine.filter(taken_at__gt=lo, taken_at__lte=last[0]), names)
    return Run(taken_at, now, before)


def _readings(rows: QuerySet[Snapshot], names: list[str] | None) -> dict[str, Reading]:
    if names is not None:
        rows = rows.filter(queue__in=names)
    return {r[0]: Reading(*r) for r in rows.values_list(*FIELDS)}


def value(rule: AlertRule, reading: Reading, before: Reading | None) -> float | None:
    """The rule's snapshot metric for one queue; None when it can't be told (a rate
    without the run before, or across the queue's recreation)."""
    m = rule.metric
    if m == AlertRule.Metric.VISIBLE:
        return float(reading.msgs - reading.hiddenmsgs)
    if m == AlertRule.Metric.INFLIGHT:
        return float(reading.inflight)
    if m == AlertRule.Metric.OLDEST_AGE:
        return reading.oldest_age or 0.0
    if m in RATES:
        if before is None or before.created != reading.created:
            return None
        seconds = (reading.taken_at - before.taken_at) / 1000
        if seconds <= 0:
            return None
        counter = RATES[AlertRule.Metric(m)]
        return max(0, getattr(reading, counter) - getattr(before, counter)) / seconds
    raise ValueError(f"{m} is not a snapshot metric")


def open_flags(conn: str, ns: str, kind: str) -> set[str]:
    """The queues of the namespace with an open anomaly flag of ``kind``."""
    flags = AnomalyFlag.objects.filter(connection=conn, namespace=ns, kind=kind, end__isnull=True)
    return set(flags.values_list("queue", flat=True))


def in_state(conn: str, ns: str, state: str) -> set[str]:
    """The queues of the namespace whose consumers are in ``state`` (dashboard/triage/conditions.py,
    as of the last snapshot)."""
    rows = QueueCondition.objects.filter(connection=conn, namespace=ns, state=state)
    return set(rows.values_list("queue", flat=True))


def dead_letters(rule: AlertRule, queues: list[str]) -> dict[str, float]:
    """Messages each queue sent to its dead-letter queue since the last evaluation, from
    the live counters (snapshots don't keep them); the counters are kept on the rule
    (saved by the caller). A queue seen for the first time, or recreated, has no value."""
    conn = next((c for c in connections() if c.name == rule.connection), None)
    if conn is None or rule.namespace not in conn.namespaces or not queues:
        return {}
    stats = get_rsmq(conn, rule.namespace).queue_stats(queues)
    out: dict[str, float] = {}
    counters: dict[str, list[int]] = {}
    for s in stats:
        if s.unreadable:
            continue
        counters[s.qname] = [s.created, s.deadlettered]
        seen = rule.counters.get(s.qname)
        if seen and seen[0] == s.created:
            out[s.qname] = float(max(0, s.deadlettered - seen[1]))
    rule.counters = counters
    return out
