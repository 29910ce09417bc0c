"""Where a queue is heading, from the trend of its last snapshots: when its backlog
drains, when its oldest message will be over its SLO; and its latest wait and
processing times. For the queue page, the overview and /metrics alike (``outlooks``), so
that the three say the same.

The backlog's way is its net change (messages in − out) over the last rate window
(``history.rate_window()``: the same minute the overview's rates are over), from the
counts of the snapshots at its ends: a step (an import, a redrive) weighs in for that
minute only, where a line fitted across the whole window would carry it for ten. The
oldest message's age, which grows by the second, is the least-squares line through the
snapshots of the last ``RSMQ_BACKLOG_WINDOW`` seconds. Nothing is said when the data is
missing (fewer than ``MIN_POINTS`` snapshots, or spanning less than ``MIN_SPAN`` s) or
the trend is flat (less than one message, or one second of age, over its span).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.conf import settings
from django.db.models import (
    Case,
    Count,
    ExpressionWrapper,
    F,
    FloatField,
    Max,
    Min,
    Q,
    QuerySet,
    Sum,
    When,
)

from dashboard.display.formatting import duration, exact
from dashboard.models import Snapshot
from dashboard.snapshots.history import TIMED, rate_window
from dashboard.triage import thresholds

MIN_POINTS = 3
MIN_SPAN = 60.0  # s


@dataclass(frozen=True, slots=True)
class Trend:
    """A least-squares line through (epoch ms, value) points."""

    slope: float  # per second
    span: float  # s from the first point to the last
    last: float  # the last point's value
    points: int

    @property
    def flat(self) -> bool:
        return abs(self.slope * self.span) < 1


def trend(points: Sequence[tuple[int, float]]) -> Trend | None:
    """The line through ``points`` (time order); None: too few, or too short a span."""
    n = len(points)
    if n < MIN_POINTS:
        return None
    t0 = points[-1][0]
    xs = [(t - t0) / 1000 for t, _ in points]
    ys = [float(v) for _, v in points]
    xy = sum(x * y for x, y in zip(xs, ys, strict=True))
    sums = Sums(n, sum(xs), sum(ys), sum(x * x for x in xs), xy)
    return sums.trend(xs[-1] - xs[0], ys[-1])


@dataclass(frozen=True, slots=True)
class Sums:
    """What a least-squares line needs of its points (x in seconds from any origin)."""

    n: int
    x: float
    y: float
    xx: float
    xy: float

    def trend(self, span: float, last: float) -> Trend | None:
        """The line; None: too few points, or too short a span."""
        if self.n < MIN_POINTS or span < MIN_SPAN:
            return None
        spread = self.n * self.xx - self.x * self.x
        if spread <= 0:
            return None
        return Trend((self.n * self.xy - self.x * self.y) / spread, span, last, self.n)


@dataclass(frozen=True, slots=True)
class Drain:
    """A backlog's way: draining (``seconds`` until empty at ``rate``) or growing."""

    rate: float  # messages per second: < 0 draining, > 0 growing
    seconds: float | None  # until empty at this rate; None: not draining

    def __str__(self) -> str:
        if self.seconds is not None:
            return f"drains in ~{duration(self.seconds)} at −{_rate(abs(self.rate))}/s"
        return f"never drains: growing +{_rate(self.rate)}/s"

    @property
    def short(self) -> str:
        """For a table cell: a time ("~25 min"), or "never" (its title says the rate)."""
        if self.seconds is not None:
            return f"~{duration(self.seconds)}"
        return "never"

    def sort_key(self) -> float:
        """Longer to drain sorts later; not draining, last of all."""
        return self.seconds if self.seconds is not None else float("inf")


def _rate(rate: float) -> str:
    return exact(round(abs(rate))) if abs(rate) >= 10 else f"{abs(rate):.2g}"


def drain(backlog: Trend | None) -> Drain | None:
    """Backlog ÷ its net drain rate; None: no trend, flat, or nothing to drain."""
    if backlog is None or backlog.flat:
        return None
    if backlog.slope < 0:
        if backlog.last <= 0:
            return None  # drained already
        return Drain(backlog.slope, backlog.last / -backlog.slope)
    return Drain(backlog.slope, None)


def breach_in(age: Trend | None, slo: float) -> float | None:
    """Seconds until the oldest message's age reaches ``slo`` on its trend (0: it is
    over already); None: no trend, or the age is not rising."""
    if age is None or age.flat or age.slope <= 0 or slo <= 0:
        return None
    if age.last >= slo:
        return 0.0
    return (slo - age.last) / age.slope


def breach_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds == 0:
        return "oldest-age SLO breached"
    return f"oldest-age SLO breached in ~{duration(seconds)}"


@dataclass(frozen=True, slots=True)
class Times:
    """A snapshot's percentiles (seconds) and how many messages they are of."""

    at: int  # epoch ms of the snapshot
    p50: float
    p95: float
    p99: float
    samples: int
    sampled: bool


@dataclass(frozen=True, slots=True)
class Outlook:
    """One queue's forecasts and latest times (each None when there is nothing to say)."""

    drain: Drain | None = None
    breach_in: float | None = None  # s
    wait: Times | None = None
    processing: Times | None = None

    @property
    def breach(self) -> str:
        return breach_text(self.breach_in)

    @property
    def drain_seconds(self) -> float | None:
        return self.drain.seconds if self.drain else None

    @property
    def wait_key(self) -> float | None:
        """What the overview's "Wait p95" order sorts by (None: no reading)."""
        return self.wait.p95 if self.wait is not None else None

    @property
    def drain_key(self) -> float | None:
        """What its "Drains in" order sorts by: seconds to drain, ``DRAIN_NEVER`` when it
        is not draining (after every time), None when there is no trend."""
        return min(self.drain.sort_key(), DRAIN_NEVER) if self.drain is not None else None


#: a queue that is not draining, as a sort key: after every drain time (a finite stand-in
#: for infinity, which a database column may not hold)
DRAIN_NEVER = 1e300


TIMES = (
    "wait_p50", "wait_p95", "wait_p99", "wait_samples",
    "processing_p50", "processing_p95", "processing_p99", "processing_samples",
    "timings_sampled",
)  # fmt: skip


def window_ms() -> int:
    return round(settings.RSMQ_BACKLOG_WINDOW * 1000)


Row = tuple[Any, ...]


def outlooks(conn: str, ns: str, names: Iterable[str] | None, now_ms: int) -> dict[str, Outlook]:
    """The Outlook of each named queue (None: every queue) from its snapshots of the
    last window up to ``now_ms``. The trends are summed by the database (one GROUP BY
    over the history index: no row read into Python, no table read), the last counts and
    the latest times read at their snapshots; a queue whose oldest message's age was
    interrupted (nothing visible) inside the window has its rows read to fit the age's
    trend since then."""
    rows = Snapshot.objects.filter(
        connection=conn, namespace=ns, taken_at__gt=now_ms - window_ms(), taken_at__lte=now_ms
    )
    if names is not None:
        rows = rows.filter(queue__in=list(names))
    x = ExpressionWrapper((F("taken_at") - now_ms) / 1000.0, output_field=FloatField())
    aged = Q(oldest_age__isnull=False)
    since = now_ms - rate_window()

    def when_aged(value: Any) -> Case:
        return Case(When(aged, then=value), output_field=FloatField())

    sums = rows.values("queue").annotate(
        n=Count("taken_at"), first=Min("taken_at"), last=Max("taken_at"),
        # the net change's start: the last snapshot at or before the rate window's
        since=Max(Case(When(taken_at__lte=since, then="taken_at"))),
        an=Count("oldest_age"), asx=Sum(when_aged(x)), asy=Sum("oldest_age"),
        asxx=Sum(when_aged(x * x)), asxy=Sum(when_aged(x * F("oldest_age"))),
        afirst=Min(Case(When(aged, then="taken_at"))),
        gap=Max(Case(When(oldest_age__isnull=True, then="taken_at"))),
    ).values_list(
        "queue", "n", "first", "last", "since", "an", "asx", "asy", "asxx", "asxy", "afirst",
        "gap",
    )  # fmt: skip
    found = {r[0]: Window(*r[1:]) for r in sums}
    if not found:
        return {}
    ends = {w.last for w in found.values()} | {w.since or w.first for w in found.values()}
    at_ends = rows.filter(taken_at__in=ends)
    counts = {
        (q, t): (m, a)
        for q, t, m, a in at_ends.values_list("queue", "taken_at", "msgs", "oldest_age")
    }
    broken = [
        q for q, w in found.items()
        if w.gap is not None and w.afirst is not None and w.gap > w.afirst
        and counts.get((q, w.last), (0, None))[1] is not None
    ]  # fmt: skip
    resumed = _ages_since_gap(rows.filter(queue__in=broken)) if broken else {}
    latest = _latest_times(rows.filter(TIMED))
    out = {}
    for q, w in found.items():
        msgs, age = counts.get((q, w.last), (0, None))
        start = w.since or w.first
        before = counts.get((q, start))
        backlog = None if before is None else net_change(start, before[0], w.last, msgs, w.n)
        if age is None or w.afirst is None:
            ages = None
        elif q in resumed:
            ages = trend(resumed[q])
        else:
            ages = Sums(w.an, w.asx or 0, w.asy or 0, w.asxx or 0, w.asxy or 0).trend(
                (w.last - w.afirst) / 1000, age
            )
        slo = thresholds.oldest_age_slo(conn, ns, q)
        wait, processing = latest.get(q, (None, None))
        out[q] = Outlook(drain(backlog), breach_in(ages, slo), wait, processing)
    return out


class Window(NamedTuple):
    """One queue's snapshots over the window, as the database summed them: how many, the
    first and last, the last at or before the rate window (the net change's start), and
    the oldest age's least-squares sums (from its first reading, ``afirst``; ``gap``: the
    last snapshot with nothing visible)."""

    n: int
    first: int
    last: int
    since: int | None
    an: int
    asx: float | None
    asy: float | None
    asxx: float | None
    asxy: float | None
    afirst: int | None
    gap: int | None


def net_change(start: int, before: int, end: int, now: int, points: int) -> Trend | None:
    """The backlog's net change from ``before`` messages at ``start`` to ``now`` at ``end``
    (epoch ms), as a trend; None: too few snapshots, or too short a span."""
    span = (end - start) / 1000
    if points < MIN_POINTS or span < MIN_SPAN or span <= 0:
        return None
    return Trend((now - before) / span, span, now, points)


def _ages_since_gap(rows: QuerySet[Snapshot]) -> dict[str, list[tuple[int, float]]]:
    """Each queue's oldest ages since its last snapshot with nothing visible."""
    out: dict[str, list[tuple[int, float]]] = {}
    found = rows.order_by("queue", "taken_at").values_list("queue", "taken_at", "oldest_age")
    for q, t, age in found:
        if age is None:
            out[q] = []
        else:
            out.setdefault(q, []).append((t, age))
    return out


def _latest_times(timed: QuerySet[Snapshot]) -> dict[str, tuple[Times | None, Times | None]]:
    """Each queue's latest wait and latest processing times among ``timed`` rows."""
    lasts = (
        timed.values("queue")
        .annotate(
            w=Max(Case(When(wait_p50__isnull=False, then="taken_at"))),
            p=Max(Case(When(processing_p50__isnull=False, then="taken_at"))),
        )
        .values_list("queue", "w", "p")
    )
    wanted = {q: (w, p) for q, w, p in lasts}
    if not wanted:
        return {}
    at = {t for w, p in wanted.values() for t in (w, p) if t is not None}
    out: dict[str, tuple[Times | None, Times | None]] = {}
    for q, t, *r in timed.filter(taken_at__in=at).values_list("queue", "taken_at", *TIMES):
        w, p = wanted.get(q, (None, None))
        wait, processing = out.get(q, (None, None))
        if t == w:
            wait = Times(t, r[0], r[1], r[2], r[3] or 0, bool(r[8]))
        if t == p:
            processing = Times(t, r[4], r[5], r[6], r[7] or 0, bool(r[8]))
        out[q] = (wait, processing)
    return out
