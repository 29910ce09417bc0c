"""What is coming due, and what it will do to the backlog: a queue's hidden messages by
when they become visible (queues/ops/flow.py ``due``), its peak called out ("38,412 due
03:00–03:05"), and the backlog that peak makes at the rate the queue is received now
(the snapshots' rates: dashboard/snapshots/history.py).

The backlog is reckoned bucket by bucket from the messages visible now: each bucket adds
what comes due in it and takes away what the current receive rate takes in its length
(never below zero). The peak's own backlog is its count less what that rate takes in its
five minutes. A paused queue (queues/ops/flow.py) receives nothing while paused: its
rate counts as zero until it resumes."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from dashboard.display.formatting import absolute, duration, epoch_ms, exact, per_second
from queues import RedisSMQ
from queues.limits import DUE_SCALES
from queues.models import Due, DueBucket, Flow, QueueStats

#: queues whose peak each snapshot finds for the overview, at most: those with the most
#: delayed messages (each costs one due script's few dozen ZCOUNTs)
PEAK_QUEUES = 200

#: the view's chart (server-drawn SVG, its user units): its width, its bars' tallest
WIDTH, BAR_HEIGHT = 600, 60
#: bars whose start is labelled under the chart, about
TICKS = 6


@dataclass(frozen=True, slots=True)
class Bar:
    """One bucket as the view draws it: its place in the chart (x, width, height: SVG user
    units, its foot at BAR_HEIGHT), its label, and whether it is the busiest."""

    bucket: DueBucket
    label: str  # its start, as a person reads it on this scale
    x: float
    width: float
    height: int
    peak: bool
    tick: bool  # its label is shown under the chart

    @property
    def y(self) -> int:
        return BAR_HEIGHT - self.height

    @property
    def words(self) -> str:
        """ "1,234 due 03:00–04:00 UTC" (the bar's title, for a pointer and a reader)."""
        return f"{exact(self.bucket.count)} due {window(self.bucket.start, self.bucket.end)}"


@dataclass(frozen=True, slots=True)
class Outlook:
    """A queue's due view: the counts, the peak in words, and the backlog ahead."""

    due: Due
    rate: float | None  # messages received a second now (None: not known yet)
    paused: bool
    bars: list[Bar]
    peak_text: str  # "38,412 due 03:00–03:05" ("" when nothing is due in the view)
    backlog_text: str  # what that does at the current rate, in words
    most: int  # the largest backlog the buckets reckon (visible now included)
    most_at: int | None  # the end of the bucket it is reached in (epoch ms)

    @property
    def scale(self) -> str:
        return self.due.scale


def window(start: int, end: int) -> str:
    """ "03:00–03:05", "Nov 28 03:00–04:00", "Nov 28–Nov 29": a span as its scale reads
    it, in the console's zone (its days too)."""
    tz = timezone.get_current_timezone()
    a, b = epoch_ms(start), epoch_ms(end)
    if a is None or b is None:
        return "–"
    a, b = a.astimezone(tz), b.astimezone(tz)
    zone = a.tzname() or "UTC"
    if end - start >= 86_400_000:
        return f"{a:%b %d}–{(b - dt.timedelta(microseconds=1)):%b %d}"
    today = dt.datetime.now(tz).date()
    day = "" if a.date() == today else f"{a:%b %d} "
    return f"{day}{a:%H:%M}–{b:%H:%M} {zone}"


def moment(ms: int) -> str:
    """A time to the minute, in the console's zone: "2026-11-28 03:00 UTC"."""
    at = epoch_ms(ms)
    return absolute(at, timezone.get_current_timezone(), "minutes") if at else "–"


def _label(b: DueBucket, scale: str) -> str:
    at = epoch_ms(b.start)
    if at is None:
        return ""
    at = at.astimezone(timezone.get_current_timezone())
    return {"minute": f"{at:%H:%M}", "hour": f"{at:%H}h", "day": f"{at:%b %d}"}[scale]


def outlook(due: Due, rate: float | None, flow: Flow | None = None) -> Outlook:
    """The view of ``due`` at receive ``rate`` (a paused ``flow``: none received)."""
    paused = bool(flow and flow.paused)
    taking = 0.0 if paused else rate
    busiest = due.busiest
    top = max((b.count for b in due.buckets), default=0)
    n = max(1, len(due.buckets))
    step = WIDTH / n
    every = max(1, round(n / TICKS))
    bars = [
        Bar(b, _label(b, due.scale), round(i * step, 2), round(max(1.0, step - 1), 2),
            max(1, round(BAR_HEIGHT * b.count / top)) if top and b.count else 0,
            busiest is not None and b.start == busiest.start, i % every == 0)
        for i, b in enumerate(due.buckets)
    ]  # fmt: skip
    level, most, most_at = float(due.visible), due.visible, None
    for b in due.buckets:
        level = max(0.0, level + b.count - (taking or 0.0) * (b.end - b.start) / 1000)
        if level > most:
            most, most_at = round(level), b.end
    peak_text = backlog_text = ""
    p = due.peak
    if p is not None:
        peak_text = f"{exact(p.count)} due {window(p.start, p.end)}"
        backlog_text = _backlog(p, taking, paused)
    return Outlook(due, rate, paused, bars, peak_text, backlog_text, most, most_at)


def _backlog(p: DueBucket, rate: float | None, paused: bool) -> str:
    seconds = (p.end - p.start) / 1000
    if paused:
        return ("paused: nothing is received until it resumes, so they wait for that "
                "(its pause, and its peak, on this page)")  # fmt: skip
    if rate is None:
        return "no receive rate yet (snapshots tell it): the backlog they make can't be told"
    if rate <= 0:
        return f"nothing is received now: all {exact(p.count)} would wait for a consumer"
    left = round(p.count - rate * seconds)
    if left <= 0:
        return f"at the current receive rate ({per_second(rate)}) each is received as it comes due"
    clears = left / rate
    return (f"at the current receive rate ({per_second(rate)}) a backlog of {exact(left)} "
            f"at its end, received within {duration(clears)} more")  # fmt: skip


def scale_of(raw: str | None) -> str:
    """The view's scale from a URL (?due=), the hour by default."""
    return raw if raw in DUE_SCALES else "hour"


def refresh_peaks(rsmq: RedisSMQ, stats: list[QueueStats]) -> int:
    """After a snapshot: the peaks of the namespace's queues with the most delayed
    messages (PEAK_QUEUES), stored in Redis for the overview to read with its stats
    (``RedisSMQ.queue_stats_flagged``), kept ten snapshot intervals (a minute at least)."""
    delayed = sorted(
        (s for s in stats if s.delayed and not s.unreadable), key=lambda s: (-s.delayed, s.qname)
    )[:PEAK_QUEUES]
    peaks = rsmq.due_peaks([s.qname for s in delayed]) if delayed else {}
    keep = max(60.0, 10 * float(settings.RSMQ_SNAPSHOT_INTERVAL))
    return rsmq.store_due_peaks(peaks, keep=keep)
