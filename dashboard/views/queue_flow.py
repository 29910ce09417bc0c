"""The queue page's flow and time: its pause or throttle (who honours it, who bypasses
it, its alerts held) and what is coming due (by minute, hour or day, the peak, the
backlog it makes; deliver now / shift / spread as jobs). One pipelined round trip
(``RedisSMQ.flow_view``: the flag, the live workers, the due counts), read only when the
page shows them."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from django.http import QueryDict
from django.utils.functional import SimpleLazyObject
from redis.exceptions import RedisError

from dashboard.acting import flow as flows
from dashboard.places.place import Place
from dashboard.snapshots.history import queue_rate
from dashboard.triage import due
from queues import RsmqError
from queues.limits import DUE_SCALES
from queues.models import FlowView, QueueStats

log = logging.getLogger(__name__)

#: the due view's scales, as its tabs say them
SCALES = {"minute": "next hour, by minute", "hour": "48 hours, by hour", "day": "30 days, by day"}
assert set(SCALES) == set(DUE_SCALES)


def read(place: Place, qname: str, scale: str) -> FlowView | None:
    """The page's flow read; None when it can't be read (the page goes on without it)."""
    try:
        return place.rsmq.flow_view(qname, scale)
    except (RsmqError, RedisError) as e:
        log.warning("flow of %s not read: %s", qname, e)
        return None


def flow_context(place: Place, qname: str, params: QueryDict, stats: QueueStats) -> dict[str, Any]:
    """The page's context for its consumers' flow and its due view (lazy: read once, and
    only if the page shows them)."""
    scale = due.scale_of(params.get("due"))
    view: Any = SimpleLazyObject(lambda: read(place, qname, scale))

    def outlook() -> due.Outlook | None:
        if not view:
            return None
        rate = queue_rate(place.conn.name, place.ns, qname, stats.now)
        return due.outlook(view.due, rate.receive_rate if rate else None, view.flow)

    def consumers() -> flows.Consumers:
        return flows.consumers(view.flow if view else None, view.workers if view else [])

    due_outlook: Any = SimpleLazyObject(outlook)

    def bars() -> list[tuple[due.Bar, str]]:
        """Each bar and its link (the page's query, this window picked): made here
        once, not by a template tag per bar (60 of them by the minute)."""
        if not due_outlook:
            return []
        q = params.copy()
        for k in ("due", "due_from", "due_until"):
            q.pop(k, None)
        base = ("?" + q.urlencode() + "&") if q else "?"
        return [
            (b, f"{base}due={scale}&due_from={b.bucket.start}&due_until={b.bucket.end}#due-act")
            for b in due_outlook.bars
        ]

    return {
        "flow_view": view,
        "workers": SimpleLazyObject(lambda: view.workers if view else []),
        "flow": SimpleLazyObject(lambda: view.flow if view else None),
        "flow_consumers": SimpleLazyObject(consumers),
        "flow_words": SimpleLazyObject(
            lambda: flows.words(view.flow) if view and view.flow else ""
        ),
        "alerts_held": SimpleLazyObject(
            lambda: flows.held_text(view.flow) if view and view.flow and view.flow.paused else ""
        ),
        "due_outlook": due_outlook,
        "due_bars": SimpleLazyObject(bars),
        "due_window": SimpleLazyObject(lambda: window_of(params, due_outlook)),
        "due_scale": scale,
        "due_scales": SCALES,
    }


@dataclass(frozen=True, slots=True)
class Window:
    """The due window the page acts on: the one a bar links to (``?due_from=&due_until=``,
    epoch ms), else the peak; ``spread``: a suggested window to spread it over (its start
    and an hour on), as the form's fields show them (ISO 8601, UTC)."""

    start: int
    end: int
    text: str
    picked: bool  # chosen by a bar's link, not the peak
    spread_from: str
    spread_until: str


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M")


def window_of(params: QueryDict, outlook: Any) -> Window | None:
    try:
        start, end = int(params.get("due_from", "")), int(params.get("due_until", ""))
    except ValueError:
        start = end = 0
    picked = 0 <= start < end <= 2**53
    if not picked:
        peak = outlook.due.peak if outlook else None
        if peak is None:
            return None
        start, end = peak.start, peak.end
    return Window(start, end, due.window(start, end), picked, _iso(start), _iso(start + 3_600_000))
