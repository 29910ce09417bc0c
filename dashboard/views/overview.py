"""The overview: every queue of a namespace, searched, sorted and paged; creating one."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.paginator import Page, Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from queues import RedisSMQ
from queues.models import QueueStats

from .. import latest
from ..access import Role
from ..analytics import open_flags
from ..connections import connections
from ..forms import QueueCreateForm
from ..history import trends
from ..htmx import HtmxHttpRequest
from ..place import Place, place_for
from .actions import Posted
from .common import UNPROCESSABLE, back, context, current, int_param, query_of, template

SORTS: dict[str, Callable[[QueueStats], Any]] = {
    "name": lambda s: s.qname,
    "msgs": lambda s: s.msgs,
    "visible": lambda s: s.visible,
    "hidden": lambda s: s.hidden,
    "inflight": lambda s: s.inflight,
    "delayed": lambda s: s.delayed,
    "totalsent": lambda s: s.totalsent,
    "totalrecv": lambda s: s.totalrecv,
    "oldest": lambda s: s.oldest_age or 0.0,
    "vt": lambda s: s.vt,
    "delay": lambda s: s.delay,
    "maxsize": lambda s: s.maxsize if s.maxsize >= 0 else 1 << 31,
}
COLUMNS = [
    ("name", "Queue", ""),
    ("msgs", "Messages", "num"),
    ("visible", "Visible", "num"),
    ("inflight", "In flight", "num"),
    ("delayed", "Delayed", "num"),
    ("oldest", "Oldest visible", "num"),
    ("totalsent", "Sent", "num"),
    ("totalrecv", "Received", "num"),
    ("vt", "vt", "num"),
    ("delay", "Delay", "num"),
    ("maxsize", "Max size", "num"),
]


@login_required
@require_safe
def home(request: HtmxHttpRequest) -> HttpResponse:
    chosen = request.GET.get("place", "")  # the header's selector, without JavaScript
    if chosen.startswith("/c/") and "//" not in chosen:
        return redirect(chosen)
    c = connections()[0]
    return redirect("rsmq-overview", c.name, c.namespaces[0])


@login_required
@require_safe
def overview(request: HtmxHttpRequest, conn: str, ns: str) -> HttpResponse:
    place = place_for(request, conn, ns)
    return render_overview(request, place, QueueCreateForm())


@login_required
@require_POST
def queue_create(request: HtmxHttpRequest, conn: str, ns: str) -> HttpResponse:
    name = request.POST.get("name", "")
    place = place_for(request, conn, ns, Role.ADMIN, "create_queue", name)
    form = QueueCreateForm(request.POST)
    if not form.is_valid():
        Posted(request, place, name, "create_queue").refused({"create_form": form})
        return render_overview(request, place, form, status=UNPROCESSABLE)
    d = form.cleaned_data

    def work() -> tuple[str, int | None]:
        place.rsmq.create_queue(d["name"], vt=d["vt"], delay=d["delay"], maxsize=d["maxsize"])
        return f"Created queue {d['name']}.", None

    params = {k: d[k] for k in ("vt", "delay", "maxsize")}
    if not Posted(request, place, d["name"], "create_queue").act(work, params=params):
        form.add_error("name", f"A queue named {d['name']} already exists.")
        return render_overview(request, place, form, status=UNPROCESSABLE)
    if request.htmx:
        return render_overview(request, place, QueueCreateForm())
    return redirect(place.url("rsmq-queue", d["name"]))


def snapshot_rows(
    place: Place, search: str, sort: str, page: int, per_page: int
) -> tuple[Page[Any], list[QueueStats], int] | None:
    """A page of a big namespace in the order of its last snapshot, its live counters
    (one round trip), and when that snapshot was taken; None to read it live."""
    run = latest.last_run(place.conn.name, place.ns)
    if sort.lstrip("-") not in latest.ORDER or run is None:
        return None
    taken_at, rows = run
    if not latest.is_big(rows):
        return None  # small: read live (a count would read every row)
    page_obj = Paginator(latest.ordered_names(rows, sort, search), per_page).get_page(page)
    names = list(dict.fromkeys(page_obj.object_list))
    return page_obj, place.rsmq.queue_stats(names), taken_at


def queue_rows(
    rsmq: RedisSMQ, search: str, sort: str, page: int, per_page: int
) -> tuple[Page[Any], list[QueueStats]]:
    """A page of queues. Sorting by name pages the names before reading any counters,
    so a page of 10,000 queues reads only its own 50 (RabbitMQ's lesson)."""
    names = [n for n in rsmq.list_queues() if search.lower() in n.lower()]
    key = sort.lstrip("-")
    reverse_ = sort.startswith("-")
    if key == "name":
        names.sort(reverse=reverse_)
        page_obj = Paginator(names, per_page).get_page(page)
        return page_obj, rsmq.queue_stats(list(page_obj.object_list))
    stats = sorted(rsmq.queue_stats(names), key=SORTS[key], reverse=reverse_)
    stats_page = Paginator(stats, per_page).get_page(page)
    return stats_page, list(stats_page.object_list)


def render_overview(
    request: HtmxHttpRequest, place: Place, create_form: forms.Form, status: int = 200
) -> HttpResponse:
    params = request.GET if request.method == "GET" else query_of(back(request, ""))
    search = params.get("q", "").strip()
    sort = params.get("sort", "name")
    if sort.lstrip("-") not in SORTS:
        sort = "name"
    page, per_page = int_param(params.get("page"), 1), settings.RSMQ_PAGE_SIZE
    sorted_at = None
    if by_snapshot := snapshot_rows(place, search, sort, page, per_page):
        page_obj, stats, sorted_at = by_snapshot
    else:
        page_obj, stats = queue_rows(place.rsmq, search, sort, page, per_page)
    now = stats[0].now if stats else None
    flags = open_flags(place.conn.name, place.ns)
    ctx = context(
        place,
        current=current(request),
        columns=COLUMNS,
        stats=stats,
        trends=trends(place.conn.name, place.ns, [s.qname for s in stats], now) if now else {},
        page_obj=page_obj,
        search=search,
        sort=sort,
        now=now,
        create_form=create_form,
        params=params,
        flags=flags,
        flagged={f.queue for f in flags},
        flags_now=now or round(time.time() * 1000),
        sorted_at=sorted_at,
    )
    return render(request, template(request, "overview.html", "queue-table"), ctx, status=status)
