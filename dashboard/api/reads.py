"""The JSON API: the overview's queues and one queue with its snapshot history.

    /api/queues/                     the first connection's first namespace
    /api/queues/<name>/
    /api/c/<conn>/<ns>/queues/       like the pages' /c/<conn>/<ns>/
    /api/c/<conn>/<ns>/queues/<name>/?range=hour|day|week

Auth: an API token (any role), RSMQ_METRICS_TOKEN as a bearer token, or a logged-in viewer
(access.token_or_viewer).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.debug import sensitive_variables
from django.views.decorators.http import require_safe

from queues.models import QueueStats

from .. import place as places
from ..access import token_or_viewer
from ..connections import get_connection
from ..formatting import iso
from ..history import RANGES, Backlog, current_rates, queue_history
from ..place import Place
from ..rates import Interval
from ..web_errors import web_error
from . import tokens

COUNTS = ("msgs", "visible", "hidden", "inflight", "delayed", "exact", "totalsent",
          "totalrecv", "oldest_age")  # fmt: skip
ATTRIBUTES = ("vt", "delay", "maxsize", "created", "modified")


def readers(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """An API token of any role (counted against its rate), else access.token_or_viewer."""
    checked = token_or_viewer(view)

    @wraps(view)
    @sensitive_variables("given")  # starred in error reports, DEBUG too
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not given.strip().startswith(tokens.PREFIX):
            return checked(request, *args, **kwargs)
        try:
            tokens.admit(given.strip())
        except tokens.Unauthenticated as e:
            response = JsonResponse({"error": str(e)}, status=401)
            response["WWW-Authenticate"] = 'Bearer realm="rsmq-console"'
            return response
        except tokens.RateLimited as e:
            response = JsonResponse({"error": str(e)}, status=429)
            response["Retry-After"] = str(e.retry_after)
            return response
        return view(request, *args, **kwargs)

    return wrapped


def api_view(view: Callable[..., JsonResponse]) -> Callable[..., HttpResponse]:
    """GET only, a token or a viewer, and every failure as JSON with its status."""

    @require_safe
    @readers
    @wraps(view)
    def wrapped(
        request: HttpRequest, conn: str | None = None, ns: str | None = None, **kwargs: Any
    ) -> HttpResponse:
        try:
            return view(request, places.resolve(conn, ns), **kwargs)
        except Exception as e:
            error = web_error(e, get_connection(conn))
            if error is None:
                raise
            return JsonResponse({"error": error.text}, status=error.status)

    return wrapped


def _fields(s: QueueStats) -> tuple[dict[str, Any], dict[str, Any]]:
    """A queue's counts and attributes, from its one projection (times as ISO 8601)."""
    d = s.as_dict() | {"created": iso(s.created * 1000), "modified": iso(s.modified * 1000)}
    return {k: d[k] for k in COUNTS}, {k: d[k] for k in ATTRIBUTES}


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
    queues = []
    for s in stats:
        counts, attributes = _fields(s)
        queues.append(
            {"name": s.qname, "unreadable": s.unreadable, **counts, **attributes,
             **_rates(rates.get(s.qname))}
        )  # fmt: skip
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
    s = places.queue_stats(place, qname)
    counts, attributes = _fields(s)
    history = queue_history(place.conn.name, place.ns, qname, range_, s.now)
    return JsonResponse(
        {
            **_where(place, s.now),
            "name": s.qname,
            "unreadable": s.unreadable,  # what can't be read, if anything (counts: 0)
            "counts": counts,
            "attributes": attributes,
            "series": {
                "range": range_,
                "bucket_seconds": history.bucket / 1000,
                "backlog": [_point(b) for b in history.backlog],
                "rates": [_interval(i) for i in history.rates],
            },
        }
    )
