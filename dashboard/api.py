"""The JSON API: the overview's queues and one queue with its snapshot history.

    /api/queues/                     the first connection's first namespace
    /api/queues/<name>/
    /api/c/<conn>/<ns>/queues/       like the pages' /c/<conn>/<ns>/
    /api/c/<conn>/<ns>/queues/<name>/?range=hour|day|week

Auth: RSMQ_METRICS_TOKEN as a bearer token, or a logged-in viewer (access.token_or_viewer).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import wraps
from typing import Any

import redis
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from queues import QueueNotFound, RsmqError
from queues.models import QueueStats
from queues.urls import redacted

from .access import token_or_viewer
from .connections import connections
from .history import RANGES, Backlog, current_rates, queue_history
from .rates import Interval
from .views import Place, _place, _stats_or_404


def iso(ms: float) -> str:
    """Epoch ms as ISO 8601 UTC with ms: 2026-11-21T01:02:03.456Z."""
    t = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def api_view(view: Callable[..., JsonResponse]) -> Callable[..., HttpResponse]:
    """GET only, token or viewer, and every failure as JSON with its status."""

    @require_GET
    @token_or_viewer
    @wraps(view)
    def wrapped(
        request: HttpRequest, conn: str | None = None, ns: str | None = None, **kwargs: Any
    ) -> HttpResponse:
        if conn is None:
            first = connections()[0]
            conn, ns = first.name, first.namespaces[0]
        try:
            return view(request, _place(conn, ns or ""), **kwargs)
        except (Http404, QueueNotFound, RsmqError) as e:
            return JsonResponse({"error": str(e)}, status=404)
        except redis.RedisError as e:
            url = redacted(next(c.url for c in connections() if c.name == conn))
            error = " ".join(str(e).split())
            return JsonResponse({"error": f"Redis is unavailable at {url}: {error}"}, status=503)

    return wrapped


def _counts(s: QueueStats) -> dict[str, Any]:
    return {
        "msgs": s.msgs, "visible": s.visible, "hidden": s.hidden, "inflight": s.inflight,
        "delayed": s.delayed, "exact": s.exact, "totalsent": s.totalsent,
        "totalrecv": s.totalrecv, "oldest_age": s.oldest_age,
    }  # fmt: skip


def _attributes(s: QueueStats) -> dict[str, Any]:
    return {
        "vt": s.vt, "delay": s.delay, "maxsize": s.maxsize,
        "created": iso(s.created * 1000), "modified": iso(s.modified * 1000),
    }  # fmt: skip


def _rates(rate: Interval | None) -> dict[str, float | None]:
    return {
        "send_rate": rate.send_rate if rate else None,
        "receive_rate": rate.receive_rate if rate else None,
    }


def _where(place: Place, now: int) -> dict[str, Any]:
    return {"connection": place.conn.name, "namespace": place.ns, "now": iso(now)}


@api_view
def queue_list(request: HttpRequest, place: Place) -> JsonResponse:
    """Every queue (``?q=`` filters by name) with counts, attributes and current rates."""
    search = request.GET.get("q", "").strip().lower()
    names = [n for n in place.rsmq.list_queues() if search in n.lower()]
    stats = place.rsmq.queue_stats(names)
    now = stats[0].now if stats else round(dt.datetime.now(dt.UTC).timestamp() * 1000)
    rates = current_rates(place.conn.name, place.ns, now) if stats else {}
    queues = [
        {"name": s.qname, **_counts(s), **_attributes(s), **_rates(rates.get(s.qname))}
        for s in stats
    ]
    return JsonResponse({**_where(place, now), "queues": queues})


def _point(b: Backlog) -> dict[str, Any]:
    return {
        "at": iso(b.at), "msgs": b.msgs, "visible": b.visible, "inflight": b.inflight,
        "delayed": b.delayed, "oldest_age": b.oldest_age,
    }  # fmt: skip


def _interval(i: Interval) -> dict[str, Any]:
    return {
        "start": iso(i.start), "end": iso(i.end), "sent": i.sent, "received": i.received,
        "send_rate": i.send_rate, "receive_rate": i.receive_rate,
    }  # fmt: skip


@api_view
def queue_detail(request: HttpRequest, place: Place, qname: str) -> JsonResponse:
    """One queue: counts, attributes, and its snapshots over ``?range=`` (default hour)."""
    range_ = request.GET.get("range", "hour")
    if range_ not in RANGES:
        return JsonResponse({"error": f"range must be one of {', '.join(RANGES)}"}, status=400)
    s = _stats_or_404(place, qname)
    history = queue_history(place.conn.name, place.ns, qname, range_, s.now)
    return JsonResponse(
        {
            **_where(place, s.now),
            "name": s.qname,
            "counts": _counts(s),
            "attributes": _attributes(s),
            "series": {
                "range": range_,
                "bucket_seconds": history.bucket / 1000,
                "backlog": [_point(b) for b in history.backlog],
                "rates": [_interval(i) for i in history.rates],
            },
        }
    )
