"""What the snapshots say about queues over time: a queue's backlog and rates for its
charts and the API, and the overview's sparklines and current rates.

Long ranges are reduced in the database, not in Python: a week of one queue is 60,480
snapshots, drawn as at most MAX_POINTS buckets (the largest counts of each bucket; the
rates between the last snapshots of consecutive buckets).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import F, Max, Q, QuerySet

from dashboard.models import Snapshot
from dashboard.snapshots.rates import Counters, Interval, intervals, recent

RANGES = {"hour": 3600, "day": 86_400, "week": 7 * 86_400}  # seconds
MAX_POINTS = 400  # per line: past that, snapshots are drawn in buckets
SPARKLINE_SECONDS = 3600
SPARKLINE_POINTS = 60


def interval_ms() -> int:
    return round(settings.RSMQ_SNAPSHOT_INTERVAL * 1000)


def rate_window() -> int:
    """Milliseconds a "current" rate is averaged over: a minute, or three snapshots."""
    return max(60_000, 3 * interval_ms())


@dataclass(frozen=True, slots=True)
class Backlog:
    """A queue's counts at a snapshot (the largest of each over a bucket)."""

    at: int  # epoch ms
    msgs: int
    visible: int
    inflight: int
    delayed: int
    oldest_age: float | None


@dataclass(frozen=True, slots=True)
class TimesPoint:
    """A queue's wait and processing percentiles (s) at a snapshot (the largest of each
    over a bucket); None: no message to time."""

    at: int
    wait_p50: float | None
    wait_p95: float | None
    wait_p99: float | None
    processing_p50: float | None
    processing_p95: float | None
    processing_p99: float | None
    samples: int | None  # the waits' messages


#: the snapshots with times (the partial index ``snapshot_timed`` holds just these)
TIMED = Q(wait_p50__isnull=False) | Q(processing_p50__isnull=False)
TIMES = ("wait_p50", "wait_p95", "wait_p99", "processing_p50", "processing_p95",
         "processing_p99", "wait_samples")  # fmt: skip


@dataclass(frozen=True)
class History:
    range: str
    start: int  # epoch ms: the window shown, up to the Redis server's now
    end: int
    bucket: int  # ms a point stands for; 0: one point per snapshot
    backlog: list[Backlog]
    rates: list[Interval]
    times: list[TimesPoint] = field(default_factory=list)  # the snapshots with times

    @property
    def latest(self) -> Backlog | None:
        return self.backlog[-1] if self.backlog else None

    @property
    def gap(self) -> int:
        """Two points further apart than this have no snapshot between them that should
        be there (the worker was down): the line breaks."""
        return max(3 * interval_ms(), 2 * self.bucket)

    @property
    def shown_start(self) -> int:
        """Where the charts' time axis starts: the range's start, or the first snapshot
        when the data covers well under the range (a queue created, or snapshots begun,
        25 minutes ago is drawn over those 25 minutes, not squeezed into an hour's end)."""
        first = self.backlog[0].at if self.backlog else self.start
        if first - self.start > (self.end - self.start) / 10:
            return first
        return self.start

    @property
    def stale(self) -> bool:
        """No snapshot for a while: beat or the worker is not running."""
        return self.latest is None or self.end - self.latest.at > max(60_000, self.gap)


COUNTERS = ("taken_at", "totalsent", "totalrecv", "created")
#: and the messages, for the backlog's change between two snapshots (a chart's net line)
WITH_MSGS = (*COUNTERS, "msgs")


def queue_history(conn: str, ns: str, qname: str, range_: str, now_ms: int) -> History:
    """One queue's snapshots over the last hour / day / week up to ``now_ms``."""
    start = now_ms - RANGES[range_] * 1000
    rows = Snapshot.objects.filter(
        connection=conn, namespace=ns, queue=qname, taken_at__gte=start, taken_at__lte=now_ms
    )
    if RANGES[range_] * 1000 / interval_ms() <= MAX_POINTS:
        fields = ("msgs", "hiddenmsgs", "inflight", "delayed", "oldest_age", *COUNTERS)
        snaps = list(rows.order_by("taken_at").values_list(*fields))
        backlog = [Backlog(s[5], s[0], s[0] - s[1], s[2], s[3], s[4]) for s in snaps]
        parts = intervals(Counters(s[5], s[6], s[7], s[8], msgs=s[0]) for s in snaps)
        timed = rows.filter(TIMED)
        times = [TimesPoint(*t) for t in timed.order_by("taken_at").values_list("taken_at", *TIMES)]
        return History(range_, start, now_ms, 0, backlog, parts, times)
    width = -(-RANGES[range_] * 1000 // MAX_POINTS)
    # The largest counts of each bucket: a spike between two pixels still shows.
    peaks = [
        Backlog(*p)
        for p in rows.annotate(bucket=F("taken_at") / width)
        .values("bucket")
        .annotate(
            at=Max("taken_at"), m=Max("msgs"), v=Max(F("msgs") - F("hiddenmsgs")),
            i=Max("inflight"), d=Max("delayed"), a=Max("oldest_age"),
        )
        .order_by("bucket")
        .values_list("at", "m", "v", "i", "d", "a")
    ]  # fmt: skip
    # The rates between the last snapshots of the buckets: every message still counts,
    # and a reset still shows (the counter drops, or `created` changes, across buckets).
    ends = rows.filter(taken_at__in=[p.at for p in peaks]).order_by("taken_at")
    parts = intervals(Counters(*e) for e in ends.values_list(*WITH_MSGS))
    times = [
        TimesPoint(*t)
        for t in rows.filter(TIMED)
        .annotate(bucket=F("taken_at") / width)
        .values("bucket")
        .annotate(at=Max("taken_at"), **{f"m_{c}": Max(c) for c in TIMES})
        .order_by("bucket")
        .values_list("at", *(f"m_{c}" for c in TIMES))
    ]
    return History(range_, start, now_ms, width, peaks, parts, times)


@dataclass(frozen=True, slots=True)
class Trend:
    """An overview row's history: its messages over the last hour, its current rates."""

    start: int
    end: int
    msgs: list[tuple[int, int]]  # (epoch ms, the most messages in that minute)
    rate: Interval | None  # over the last rate_window(); None: too few recent snapshots


def sparkline_bucket_ms() -> int:
    """A sparkline point stands for this long: a minute, or a snapshot interval if longer."""
    return max(SPARKLINE_SECONDS * 1000 // SPARKLINE_POINTS, interval_ms())


def trends(conn: str, ns: str, names: Iterable[str], now_ms: int) -> dict[str, Trend]:
    """The Trend of each named queue that has snapshots: two queries for a whole page."""
    names = list(names)
    start = now_ms - SPARKLINE_SECONDS * 1000
    rows = Snapshot.objects.filter(connection=conn, namespace=ns, queue__in=names)
    width = sparkline_bucket_ms()
    peaks = (
        rows.filter(taken_at__gte=start)
        .annotate(bucket=F("taken_at") / width)
        .values("queue", "bucket")
        .annotate(at=Max("taken_at"), m=Max("msgs"))
        .order_by("queue", "bucket")
        .values_list("queue", "at", "m")
    )
    rates = _recent_rates(rows, now_ms)
    return {
        qname: Trend(start, now_ms, [(at, m) for _, at, m in group], rates.get(qname))
        for qname, group in itertools.groupby(peaks, key=lambda p: p[0])
    }


def current_rates(conn: str, ns: str, now_ms: int) -> dict[str, Interval]:
    """Every queue's rates over the last rate_window() (the JSON API's list)."""
    return _recent_rates(Snapshot.objects.filter(connection=conn, namespace=ns), now_ms)


def _recent_rates(rows: QuerySet[Snapshot], now_ms: int) -> dict[str, Interval]:
    since = now_ms - rate_window()
    # and the snapshot before the window, which its first interval starts from
    recent_rows = (
        rows.filter(taken_at__gte=since - 2 * interval_ms(), taken_at__lte=now_ms)
        .order_by("queue", "taken_at")
        .values_list("queue", *COUNTERS)
    )
    out = {}
    for qname, group in itertools.groupby(recent_rows, key=lambda r: r[0]):
        rate = recent([Counters(*r[1:]) for r in group], since)
        if rate is not None:
            out[qname] = rate
    return out


def queue_rate(conn: str, ns: str, qname: str, now_ms: int) -> Interval | None:
    """One queue's rates over the last rate_window() (None: too few recent snapshots)."""
    rows = Snapshot.objects.filter(connection=conn, namespace=ns, queue=qname)
    return _recent_rates(rows, now_ms).get(qname)
