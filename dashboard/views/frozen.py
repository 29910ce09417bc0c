"""What every page "as of" a past time shares (dashboard/triage/as_of.py): it is
history — no action offered, nothing refreshing — with the way back to now; and the start
of the overview's and a queue page's: the time asked for, and the snapshot run then."""

from __future__ import annotations

import time
from typing import Any

from django.db.models import QuerySet
from django.http import HttpResponse
from django.shortcuts import render

from dashboard.models import Snapshot
from dashboard.places.place import Place
from dashboard.triage import as_of
from dashboard.views.common import context, current
from dashboard.web.htmx import HtmxHttpRequest


def frozen(request: HtmxHttpRequest) -> dict[str, Any]:
    """No action, no refresh (the header's context, views/context.py, overridden by the
    page's), and the way back to now: the same page and query without ``as_of``."""
    query = request.GET.copy()
    for key in ("as_of", "page"):
        query.pop(key, None)
    now_url = request.path + (f"?{query.urlencode()}" if query else "")
    return {"frozen": True, "can_operate": False, "can_admin": False, "refresh": 0,
            "now_url": now_url}  # fmt: skip


def start(
    request: HtmxHttpRequest, place: Place, page: str, **extra: Any
) -> HttpResponse | tuple[dict[str, Any], as_of.Moment, QuerySet[Snapshot]]:
    """The page's context, the moment asked for (``?as_of=``) and the rows of the snapshot
    run then; or the page saying why there is nothing to show (a 400 for a time it can't
    read or one in the future; a time before the oldest snapshot kept names it)."""
    clock = round(time.time() * 1000)
    params = request.GET
    ctx = context(place, current=current(request), params=params, **frozen(request), **extra)
    try:
        asked = as_of.parse(params.get("as_of", ""))
    except as_of.BadTime as e:
        ctx.update(as_of_error=str(e))
        return render(request, page, ctx, status=400)
    moment, rows = as_of.run(place.conn.name, place.ns, asked, clock)
    ctx.update(moment=moment)
    if rows is None or moment.taken_at is None:
        return render(request, page, ctx, status=400 if asked > clock else 200)
    return ctx, moment, rows
