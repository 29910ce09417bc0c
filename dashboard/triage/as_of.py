"""A page "as of" a past time: what the overview, a queue's page or the incident timeline
said then, from what was stored — the snapshot run taken at or before that time (its
counts), each queue's condition then (``ConditionChange``: its last row at or before its
reading), the alerts firing and the anomaly flags open then — beside what holds now.

Nothing here reads Redis: a view reads the live counters of the page's queues (one round
trip) for the "now" beside them. How far back it goes is the snapshots' retention
(RSMQ_SNAPSHOT_RETENTION); a time before the oldest run kept is said so, with that time.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Exists, Min, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from dashboard.models import (
    Alert,
    AlertEvent,
    AnomalyFlag,
    ConditionChange,
    QueueCondition,
    Snapshot,
)
from dashboard.snapshots import latest
from dashboard.triage import conditions
from queues.models import QueueStats

State = QueueCondition.State
LABELS = dict(State.choices)
PRUNE_BATCH = 10_000

_ISO = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]00:?00)?")


class BadTime(ValueError):
    """``as_of`` is neither an ISO 8601 UTC time nor epoch milliseconds."""


def parse(value: str) -> int:
    """``2026-11-28T03:00`` / ``…:00Z`` / ``…+00:00`` (UTC; a date alone is its midnight)
    or epoch milliseconds (``1795834800000``), as epoch ms."""
    value = value.strip()
    if value.isdigit() and len(value) <= 15:
        return int(value)
    if not _ISO.fullmatch(value):
        raise BadTime(
            "as_of must be a UTC time like 2026-11-28T03:00Z or epoch milliseconds,"
            f" not {value[:40]!r}"
        )
    text = value.replace(" ", "T").replace("Z", "+00:00")
    try:
        at = dt.datetime.fromisoformat(text)
    except ValueError:
        raise BadTime(f"as_of is not a real time: {value[:40]!r}") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=dt.UTC)
    return round(at.timestamp() * 1000)


def iso(ms: int) -> str:
    """Epoch ms as the URL writes it: ``2026-11-28T03:00:00Z``."""
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def param(ms: int) -> str:
    """Epoch ms as a link's ``as_of``, exactly: ISO on a whole second, else epoch ms (a
    link to a moment shows the run it showed, even one taken within that second)."""
    return iso(ms) if ms % 1000 == 0 else str(ms)


def label(ms: int) -> str:
    """Epoch ms as the banner says it: ``2026-11-28 03:00:05 UTC``."""
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclass(frozen=True, slots=True)
class Moment:
    """The time asked for and what answers it: the snapshot run shown (``taken_at``,
    None: none), the oldest run kept, and why nothing is shown (``problem``)."""

    asked: int
    now: int
    taken_at: int | None
    oldest: int | None
    problem: str = ""

    @property
    def param(self) -> str:
        """The frozen link's ``as_of``: the time asked for, exactly, so the link (and a
        queue's, from the overview's row) shows the same run: epoch ms within a second."""
        return param(self.asked)

    @property
    def field(self) -> str:
        """The time asked for as a datetime-local field holds it (UTC, to the second)."""
        return iso(self.asked)[:19]

    @property
    def asked_label(self) -> str:
        return label(self.asked)

    @property
    def taken_label(self) -> str:
        return label(self.taken_at) if self.taken_at is not None else ""

    @property
    def now_label(self) -> str:
        return label(self.now)

    @property
    def oldest_label(self) -> str:
        return label(self.oldest) if self.oldest is not None else ""

    @property
    def gap(self) -> str:
        """Why the snapshot shown is well before the time asked for ("": it is not)."""
        if self.taken_at is None:
            return ""
        interval = round(settings.RSMQ_SNAPSHOT_INTERVAL * 1000)
        if self.asked - self.taken_at <= max(3 * interval, 60_000):
            return ""
        return (
            f"No snapshot between {label(self.taken_at)} and {label(self.asked)}: snapshots"
            " were not being taken then; this is the last one before."
        )

    @property
    def retention_days(self) -> float:
        return float(settings.RSMQ_SNAPSHOT_RETENTION)


def oldest_kept(conn: str, ns: str) -> int | None:
    """When the namespace's oldest snapshot kept was taken (the index's first entry)."""
    mine = Snapshot.objects.filter(connection=conn, namespace=ns)
    return mine.aggregate(t=Min("taken_at"))["t"]


def moment(asked: int, now: int, taken_at: int | None, oldest: int | None) -> Moment:
    """What a page as of ``asked`` can show; its ``problem`` says why not, in words."""
    problem = ""
    if asked > now:
        problem = f"{label(asked)} is in the future (now: {label(now)})."
    elif taken_at is None and oldest is None:
        problem = "No snapshot is kept for this namespace yet: there is no past to show."
    elif taken_at is None:
        problem = (
            f"{label(asked)} is before the oldest snapshot kept ({label(oldest or 0)}):"
            f" snapshots are kept {settings.RSMQ_SNAPSHOT_RETENTION:g} days"
            " (RSMQ_SNAPSHOT_RETENTION)."
        )
    return Moment(asked, now, taken_at, oldest, problem)


@dataclass(slots=True)
class Then:
    """One queue as the overview showed it then: its snapshot's counts, its condition
    (state, reasons, score), its rates over the interval before, firing alerts, open
    flags; and (``now``) its live counters, for the difference."""

    qname: str
    taken_at: int
    msgs: int
    hidden: int
    inflight: int
    delayed: int
    totalsent: int
    totalrecv: int
    oldest_age: float | None
    created: int
    state: str = ""  # "": not judged then
    reason: str = ""
    points: float = 0.0
    alerts: int = 0
    send_rate: float | None = None
    receive_rate: float | None = None
    flags: list[AnomalyFlag] = field(default_factory=list)
    now: QueueStats | None = None
    read_now: bool = False  # whether its counters now were read (``now`` None: it is gone)

    @property
    def visible(self) -> int:
        return self.msgs - self.hidden

    @property
    def state_label(self) -> str:
        return LABELS.get(self.state, self.state) if self.state else "not judged"

    @property
    def reasons(self) -> list[str]:
        return [r for r in self.reason.split("; ") if r]

    @property
    def incident(self) -> bool:
        return self.state in conditions.INCIDENTS

    @property
    def score(self) -> float:
        """The overview's order then (conditions.score): the points its condition gave,
        its firing alerts, its size from the snapshot's backlog and rates."""
        rate = max(self.send_rate or 0.0, self.receive_rate or 0.0)
        size = conditions.size_of(self.visible + self.inflight, rate)
        return conditions.score(self.points, self.alerts, size)

    @property
    def delta(self) -> int | None:
        """Messages now minus then (None: gone, or not read)."""
        if self.now is None or self.now.unreadable or self.gone:
            return None
        return self.now.msgs - self.msgs

    @property
    def gone(self) -> bool:
        """Deleted (or deleted and created again) since; not when now was not read."""
        if not self.read_now:
            return False
        return self.now is None or (not self.now.unreadable and self.now.created != self.created)


COUNTS = ("queue", "taken_at", "msgs", "hiddenmsgs", "inflight", "delayed", "totalsent",
          "totalrecv", "oldest_age", "created")  # fmt: skip


def run(conn: str, ns: str, asked: int, now: int) -> tuple[Moment, QuerySet | None]:
    """The moment asked for and the rows of the snapshot run that answers it."""
    found = latest.run_at(conn, ns, min(asked, now))
    oldest = oldest_kept(conn, ns)
    m = moment(asked, now, found[0] if found else None, oldest)
    if m.problem:
        return m, None
    assert found is not None
    return m, found[1]


def queues(
    conn: str, ns: str, run: QuerySet, taken_at: int, names: list[str] | None = None
) -> list[Then]:
    """Every queue of a run (``run``: its rows), or the ``names`` among them, as the
    overview showed it then, in no order: a few queries whatever the number of queues
    (the run's rows with each one's condition by one index seek, the run before for the
    rates, the alerts firing; nothing per queue)."""
    rows = run if names is None else run.filter(queue__in=names)
    out = {r[0]: Then(*r) for r in rows.values_list(*COUNTS).iterator()}
    if not out:
        return []
    # each queue's last condition at or before its reading (index change_queue)
    last_change = ConditionChange.objects.filter(
        connection=conn, namespace=ns, queue=OuterRef("queue"), at__lte=OuterRef("taken_at")
    ).order_by("-at")
    ids = rows.annotate(change=Subquery(last_change.values("pk")[:1])).values("change")
    for q, state, reason, points in ConditionChange.objects.filter(pk__in=ids).values_list(
        "queue", "state", "reason", "points"
    ):
        t = out[q]
        t.state, t.reason, t.points = state, reason, points
    # (the run before ends before the whole run's first reading, not the rows' asked for)
    _rates(conn, ns, run.aggregate(t=Min("taken_at"))["t"], names, out)
    for q, n in firing_at(conn, ns, taken_at).items():
        if q in out:
            out[q].alerts = n
    return list(out.values())


def _rates(
    conn: str, ns: str, start: int | None, names: list[str] | None, out: dict[str, Then]
) -> None:
    """Each queue's send and receive rates over the interval before its reading, as its
    condition was judged then: from the run before the one that began at ``start``."""
    before = latest.run_at(conn, ns, start - 1) if start is not None else None
    if before is None:
        return
    rows = before[1] if names is None else before[1].filter(queue__in=names)
    for q, at, sent, recv, created in rows.values_list(
        "queue", "taken_at", "totalsent", "totalrecv", "created"
    ).iterator():
        t = out.get(q)
        if t is None or t.created != created or at >= t.taken_at:
            continue
        seconds = (t.taken_at - at) / 1000
        t.send_rate = max(0, t.totalsent - sent) / seconds
        t.receive_rate = max(0, t.totalrecv - recv) / seconds


def _firing(conn: str, ns: str, at: int) -> QuerySet[Alert]:
    """A namespace's alerts firing at ``at``: each one's last change then (AlertEvent,
    one index seek an alert) says firing."""
    then = AlertEvent.objects.filter(alert=OuterRef("pk"), at__lte=at).order_by("-at", "-id")
    return (
        Alert.objects.filter(connection=conn, namespace=ns)
        .annotate(then=Subquery(then.values("state")[:1]))
        .filter(then=Alert.State.FIRING)
    )


def firing_at(conn: str, ns: str, at: int) -> dict[str, int]:
    """Alerts firing at ``at`` per queue."""
    counts: dict[str, int] = defaultdict(int)
    for q in _firing(conn, ns, at).values_list("queue", flat=True):
        counts[q] += 1
    return dict(counts)


def alerts_at(conn: str, ns: str, qname: str, at: int) -> list[Alert]:
    """A queue's alerts firing at ``at`` (their rules named)."""
    return list(_firing(conn, ns, at).filter(queue=qname).select_related("rule"))


def flags_at(conn: str, ns: str, qnames: Iterable[str], at: int) -> dict[str, list[AnomalyFlag]]:
    """The anomaly flags open at ``at`` of some queues (a page's): opened by then, not
    yet ended."""
    out: dict[str, list[AnomalyFlag]] = defaultdict(list)
    rows = AnomalyFlag.objects.filter(
        connection=conn, namespace=ns, queue__in=list(qnames), start__lte=at
    ).filter(Q(end__isnull=True) | Q(end__gt=at))
    for f in rows.order_by("queue", "-start"):
        out[f.queue].append(f)
    return dict(out)


def changes(conn: str, ns: str, qname: str, at: int, limit: int = 20) -> list[ConditionChange]:
    """A queue's last condition changes up to ``at``, newest first: how it got there."""
    return list(
        ConditionChange.objects.filter(
            connection=conn, namespace=ns, queue=qname, at__lte=at
        ).order_by("-at")[:limit]
    )


def prune(now: dt.datetime | None = None) -> int:
    """Retention (RSMQ_SNAPSHOT_RETENTION, as the snapshots'): the condition changes
    before the cutoff, but each queue's last one before it while the queue is still
    judged — its condition at the oldest snapshot kept. Returns the rows deleted."""
    cutoff = (now or timezone.now()) - dt.timedelta(days=settings.RSMQ_SNAPSHOT_RETENTION)
    cutoff_ms = round(cutoff.timestamp() * 1000)
    same = {"connection": OuterRef("connection"), "namespace": OuterRef("namespace"),
            "queue": OuterRef("queue")}  # fmt: skip
    superseded = ConditionChange.objects.filter(**same, at__gt=OuterRef("at"), at__lte=cutoff_ms)
    judged = QueueCondition.objects.filter(**same)
    old = ConditionChange.objects.filter(at__lt=cutoff_ms).filter(
        Exists(superseded) | ~Exists(judged)
    )
    deleted = 0
    while ids := list(old.values_list("pk", flat=True)[:PRUNE_BATCH]):
        deleted += ConditionChange.objects.filter(pk__in=ids).delete()[0]
    return deleted
