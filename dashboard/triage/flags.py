"""Open anomaly flags as an operator reads them: grouped by queue, worst first, and what
operators said of them (``FlagAck``: acknowledged, or snoozed until a time). The overview
folds each queue's flags into its row and lists the worst queues' below its table; a
queue's page lists its own, with the controls to acknowledge or snooze them
(views/triage.py). A flag acknowledged or snoozed is "quiet": still open, still on the
timeline, but no longer news, and no longer adding to its queue's score
(dashboard/triage/conditions.py).

Each read is bounded: a page's queues, or the ``GROUPS`` worst queues of a namespace
found by one GROUP BY, never every flag of a namespace in Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db.models import Case, Count, IntegerField, Max, Min, QuerySet, Value, When

from dashboard.display.formatting import duration, exact
from dashboard.models import AnomalyFlag, FlagAck, QueueCondition

Kind = AnomalyFlag.Kind

#: how bad each kind of flag is (the order within a queue, and of the queues): nothing
#: consuming first, then a crash loop, a growing backlog, an old message
SEVERITY: dict[str, int] = {
    Kind.CONSUMERS_STALLED: 4,
    Kind.REDELIVERY_STORM: 3,
    Kind.BACKLOG_GROWING: 2,
    Kind.OLDEST_AGE: 1,
}
#: the severity's name for the page (its colour: class sev-<name>)
SEVERITY_NAMES = {4: "critical", 3: "high", 2: "medium", 1: "low", 0: "low"}
#: queues the overview lists below its table
GROUPS = 20
#: how long a snooze lasts, by its button (s)
SNOOZES = {"1h": 3600, "4h": 4 * 3600, "24h": 86400}


@dataclass(frozen=True, slots=True)
class Shown:
    """One open flag and the operator's word on it (None: none)."""

    flag: AnomalyFlag
    ack: FlagAck | None
    quiet: bool

    @property
    def severity(self) -> int:
        return SEVERITY.get(self.flag.kind, 0)

    @property
    def summary(self) -> str:
        return in_figures(self.flag)


def _age(seconds: float) -> str:
    """An age as a person reads it: "15 min", "3 d"; under a second as seconds ("0 s")."""
    return duration(seconds) if seconds >= 1 else f"{seconds:g} s"


def in_figures(flag: AnomalyFlag) -> str:
    """What a flag found, in figures as the pages write them ("150,080 → 162,120 messages
    over 10 minutes", "oldest visible message 10 min old (SLO 5 min)"); "" for figures
    it can't read (another pipeline version's)."""
    f = flag.figures
    n = f"{flag.intervals} minute{'' if flag.intervals == 1 else 's'}"
    try:
        if flag.kind == Kind.BACKLOG_GROWING:
            return f"{exact(f['backlog_from'])} → {exact(f['backlog_to'])} messages over {n}"
        if flag.kind == Kind.CONSUMERS_STALLED:
            return f"up to {exact(f['visible_max'])} messages waiting, none received for {n}"
        if flag.kind == Kind.OLDEST_AGE:
            return f"oldest visible message {_age(f['oldest_age_max'])} old (SLO {_age(f['slo'])})"
        if flag.kind == Kind.REDELIVERY_STORM:
            return (
                f"{exact(f['received'])} receives for {exact(f['sent'])} sends over {n}"
                f" (up to {f['receive_rate_max']:.1f}/s)"
            )
    except (KeyError, TypeError, ValueError):
        return ""
    return ""


#: the states whose queue is not in trouble whatever its flags say (its row says why)
CALM = (QueueCondition.State.STALE, QueueCondition.State.EXPECTED_IDLE)


@dataclass(frozen=True)
class QueueFlags:
    """A queue's open flags, worst first; ``state``: its consumers' (conditions.py), if
    known."""

    queue: str
    flags: list[Shown]
    state: str = ""

    @property
    def loud(self) -> list[Shown]:
        return [f for f in self.flags if not f.quiet]

    @property
    def quiet(self) -> list[Shown]:
        return [f for f in self.flags if f.quiet]

    @property
    def severity(self) -> int:
        """The worst of its flags that are still news (0: every one is quiet); low at
        most for a queue left behind or idle by design, whatever the pipeline says."""
        worst = max((f.severity for f in self.loud), default=0)
        return min(worst, 1) if self.state in CALM else worst

    @property
    def severity_name(self) -> str:
        return SEVERITY_NAMES[self.severity]

    @property
    def kinds(self) -> str:
        """ "consumers stalled, oldest message over its SLO" (the loud ones first)."""
        return ", ".join(f.flag.get_kind_display() for f in self.loud + self.quiet)

    @property
    def start(self) -> int:
        return min(f.flag.start for f in self.flags)


@dataclass(frozen=True, slots=True)
class Summary:
    """A namespace's open flags in three numbers."""

    total: int
    queues: int
    quiet: int

    @property
    def loud(self) -> int:
        return self.total - self.quiet


def _open(conn: str, ns: str, only: list[str] | None = None) -> QuerySet[AnomalyFlag]:
    """A namespace's open flags (``only``: of these queues, the ones a caller may see)."""
    rows = AnomalyFlag.objects.filter(connection=conn, namespace=ns, end__isnull=True)
    return rows if only is None else rows.filter(queue__in=only)


def acks(conn: str, ns: str, queues: Iterable[str] | None = None) -> dict[tuple[str, str], FlagAck]:
    """The operators' words, by (queue, kind): every one of a namespace, or of ``queues``."""
    rows = FlagAck.objects.filter(connection=conn, namespace=ns)
    if queues is not None:
        rows = rows.filter(queue__in=list(queues))
    return {(a.queue, a.kind): a for a in rows}


def _shown(flag: AnomalyFlag, said: dict[tuple[str, str], FlagAck], now_ms: int) -> Shown:
    ack = said.get((flag.queue, flag.kind))
    return Shown(flag, ack, ack is not None and ack.covers(flag, now_ms))


def _grouped(
    flags: Iterable[AnomalyFlag], said: dict[tuple[str, str], FlagAck], now_ms: int
) -> dict[str, QueueFlags]:
    by_queue: dict[str, list[Shown]] = {}
    for f in flags:
        by_queue.setdefault(f.queue, []).append(_shown(f, said, now_ms))
    return {
        q: QueueFlags(q, sorted(shown, key=lambda s: (s.quiet, -s.severity, s.flag.start)))
        for q, shown in by_queue.items()
    }


def of_queues(
    conn: str, ns: str, names: Iterable[str], now_ms: int, states: Mapping[str, str] | None = None
) -> dict[str, QueueFlags]:
    """The open flags of each named queue that has some (a page's rows): two queries;
    ``states``: the queues' consumer states, when known (their severity)."""
    names = list(names)
    flags = _open(conn, ns).filter(queue__in=names)
    groups = _grouped(flags, acks(conn, ns, names), now_ms)
    if states:
        groups = {q: QueueFlags(q, g.flags, states.get(q, "")) for q, g in groups.items()}
    return groups


def of_queue(conn: str, ns: str, qname: str, now_ms: int) -> QueueFlags:
    return of_queues(conn, ns, [qname], now_ms).get(qname) or QueueFlags(qname, [])


def quiet_keys(
    conn: str, ns: str, now_ms: int, only: list[str] | None = None
) -> set[tuple[str, str]]:
    """The (queue, kind) of every quiet open flag of a namespace (the conditions leave
    them out of the score): the acks, and the open flags they name."""
    said = acks(conn, ns, only)
    if not said:
        return set()
    names = {q for q, _ in said}
    flags = _open(conn, ns, only).filter(queue__in=names).only("queue", "kind", "start")
    return {
        (f.queue, f.kind)
        for f in flags
        if (a := said.get((f.queue, f.kind))) is not None and a.covers(f, now_ms)
    }


def summary(conn: str, ns: str, now_ms: int, only: list[str] | None = None) -> Summary:
    """How many flags are open, on how many queues, and how many of them are quiet."""
    rows = _open(conn, ns, only)
    counted = rows.aggregate(total=Count("id"), queues=Count("queue", distinct=True))
    return Summary(counted["total"], counted["queues"], len(quiet_keys(conn, ns, now_ms, only)))


def worst(
    conn: str, ns: str, now_ms: int, limit: int = GROUPS, only: list[str] | None = None
) -> list[QueueFlags]:
    """The ``limit`` flagged queues that need the eye first: in the overview's order (its
    conditions' score), then by their worst flag (its kind, how many, the oldest), the
    quiet ones after. Two bounded queries pick them (the conditions of the flagged
    queues by score; the flagged queues by their worst kind, one GROUP BY), then their
    flags are read."""
    said = acks(conn, ns, only)
    # Queues with a quiet flag may sort lower than the queries think: read as many more.
    want = limit + len({q for q, _ in said})
    flagged = _open(conn, ns, only).values("queue")
    ranked = list(
        QueueCondition.objects.filter(connection=conn, namespace=ns, queue__in=flagged)
        .order_by("-score", "queue")
        .values_list("queue", "score", "state")[:want]
    )
    severity = Case(
        *(When(kind=k, then=Value(n)) for k, n in SEVERITY.items()),
        default=Value(0),
        output_field=IntegerField(),
    )
    by_kind = (
        _open(conn, ns, only)
        .values("queue")
        .annotate(worst=Max(severity), n=Count("id"), first=Min("start"))
        .order_by("-worst", "-n", "first", "queue")
        .values_list("queue", flat=True)[:want]
    )
    score = {q: sc for q, sc, _ in ranked}
    states = {q: st for q, _, st in ranked}
    names = list(dict.fromkeys([q for q, sc, _ in ranked if sc > 0] + list(by_kind)))
    groups = [
        QueueFlags(g.queue, g.flags, states.get(g.queue, ""))
        for g in _grouped(_open(conn, ns, only).filter(queue__in=names), said, now_ms).values()
    ]
    groups.sort(
        key=lambda g: (
            not g.loud,
            -score.get(g.queue, 0.0),
            -g.severity,
            -len(g.loud),
            g.start,
            g.queue,
        )
    )
    return groups[:limit]
