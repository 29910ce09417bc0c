"""What the pages show of the pipeline's results (loaded by runs.py): open
anomaly flags, a queue's hourly rollups, flags and last census."""

from __future__ import annotations

from dataclasses import dataclass

from dashboard.models import AnomalyFlag, CensusResult, Rollup

HOURS_SHOWN = 24
RECENT_FLAGS_MS = 86_400_000  # closed flags stay on the queue page for a day
OPEN_FLAGS_SHOWN = 50


def open_flags(conn: str, ns: str) -> list[AnomalyFlag]:
    """The flags still open in a namespace, the latest first."""
    flags = AnomalyFlag.objects.filter(connection=conn, namespace=ns, end__isnull=True)
    return list(flags.order_by("-start", "queue")[:OPEN_FLAGS_SHOWN])


def open_flag_count(conn: str, ns: str) -> int:
    """Every flag still open in a namespace, counted (the list shows OPEN_FLAGS_SHOWN)."""
    return AnomalyFlag.objects.filter(connection=conn, namespace=ns, end__isnull=True).count()


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    messages: int
    percent: float  # of the queue's messages counted


@dataclass(frozen=True)
class QueueAnalytics:
    flags: list[AnomalyFlag]  # open ones first, then those closed in the last day
    hours: list[Rollup]  # the latest first
    census: CensusResult | None

    @property
    def open_flags(self) -> list[AnomalyFlag]:
        return [f for f in self.flags if f.open]

    @property
    def ran(self) -> bool:
        """Has the pipeline said anything about this queue yet?"""
        return bool(self.flags or self.hours or self.census)

    def histogram(self, name: str) -> list[Bar]:
        if not self.census:
            return []
        total = max(self.census.messages, 1)
        return [Bar(label, n, 100 * n / total) for label, n in self.census.histograms.get(name, [])]

    @property
    def rc_bars(self) -> list[Bar]:
        return self.histogram("rc")

    @property
    def age_bars(self) -> list[Bar]:
        return self.histogram("age")

    @property
    def size_bars(self) -> list[Bar]:
        return self.histogram("size")


def queue_analytics(conn: str, ns: str, qname: str, now_ms: int) -> QueueAnalytics:
    where = {"connection": conn, "namespace": ns, "queue": qname}
    flags = AnomalyFlag.objects.filter(**where)
    shown = list(flags.filter(end__isnull=True).order_by("-start"))
    shown += flags.filter(end__gte=now_ms - RECENT_FLAGS_MS).order_by("-end")
    hours = Rollup.objects.filter(**where, grain=Rollup.Grain.HOUR).order_by("-bucket_start")
    return QueueAnalytics(
        flags=shown,
        hours=list(hours[:HOURS_SHOWN]),
        census=CensusResult.objects.filter(**where).first(),
    )
