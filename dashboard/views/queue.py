"""The queue page: counts, charts, the message browser and the action forms."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_safe

from queues import QueueUnreadable, RsmqError
from queues import validation as v
from queues.models import LIST_STATES

from .. import place as places
from ..access import Role, can
from ..analytics import queue_analytics
from ..context_processors import refresh_seconds
from ..forms import queue_page_forms
from ..history import RANGES, queue_history
from ..htmx import HtmxHttpRequest
from ..place import Place, place_for
from .common import context, current, int_param, query_of, template

TABS = ("all", "visible", "inflight", "delayed")
MOVE_SUGGESTIONS = 500


@login_required
@require_safe
def queue_detail(request: HtmxHttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    place = place_for(request, conn, ns)
    v.qname(qname)  # a bad name in the URL: the middleware answers 404
    lookup = request.GET.get("id", "").strip()
    try:
        found = lookup and v.ID_RE.fullmatch(lookup) and place.rsmq.get_message(qname, lookup)
    except QueueUnreadable:
        found = None  # the page says what can't be read
    if found:
        return redirect(place.url("rsmq-message", qname, lookup))
    return render_queue(request, place, qname, request.GET, lookup_done=True)


@login_required
@require_safe
def queue_charts(request: HtmxHttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    """The queue page's charts alone, for htmx: another range, or their refresh."""
    place = place_for(request, conn, ns)
    range_ = request.GET.get("range", "")
    if not request.htmx:  # the page shows them; a range that is not one is ignored
        return redirect(
            place.url("rsmq-queue", qname) + (f"?range={range_}" if range_ in RANGES else "")
        )
    stats = places.queue_stats(place, qname)
    ctx = context(
        place,
        qname=qname,
        params=query_of(request.htmx.current_url or ""),
        **charts(request, place, qname, range_, stats.now),
    )
    return render(request, "queue.html#charts", ctx)


def browse(
    place: Place, qname: str, params: QueryDict, lookup_done: bool = False
) -> dict[str, Any]:
    """The message browser: a page of one state, a filter, or an id lookup.

    ``lookup_done``: the view already looked the id up and did not find it.
    """
    state = params.get("state", "all")
    if state not in LIST_STATES:
        state = "all"
    size = settings.RSMQ_PAGE_SIZE
    min_rc = int_param(params.get("rc"), 0, low=0)
    text = params.get("search", "")
    lookup = params.get("id", "").strip()
    out: dict[str, Any] = {"state": state, "min_rc": min_rc, "text": text, "lookup": lookup}
    preview = settings.RSMQ_PREVIEW_BYTES
    if lookup:
        msg = None
        if v.ID_RE.fullmatch(lookup) and not lookup_done:
            msg = place.rsmq.get_message(qname, lookup)
        out.update(items=[msg] if msg else [], mode="lookup")
        return out
    if min_rc or text:
        cursor = int_param(params.get("cursor"), 0, low=0)
        result = place.rsmq.search_messages(
            qname, contains=text, min_rc=min_rc, state=state, cursor=cursor, limit=size,
            scan_limit=settings.RSMQ_SEARCH_SCAN_LIMIT, preview=preview,
        )  # fmt: skip
        out.update(
            items=result.items, mode="search", scanned=result.scanned, cursor=cursor,
            next_cursor=result.next_cursor, scan_limit=settings.RSMQ_SEARCH_SCAN_LIMIT,
            now=result.now,
        )  # fmt: skip
        return out
    page_no = int_param(params.get("page"), 1)
    page = place.rsmq.list_messages(
        qname, state=state, offset=(page_no - 1) * size, limit=size, preview=preview
    )
    pages = max(1, -(-page.total // size))
    out.update(items=page.items, mode="page", page=page, page_no=page_no, pages=pages, now=page.now)
    return out


def render_queue(
    request: HtmxHttpRequest,
    place: Place,
    qname: str,
    params: QueryDict,
    status: int = 200,
    lookup_done: bool = False,
    invalid: Mapping[str, forms.Form] | None = None,
) -> HttpResponse:
    stats = places.queue_stats(place, qname)
    try:
        browser = browse(place, qname, params, lookup_done)
    except QueueUnreadable as e:
        # Its counters may still read: the page shows them, and why there's no list.
        browser = {"state": "all", "min_rc": 0, "text": "", "lookup": "", "items": [],
                   "mode": "unreadable", "unreadable_messages": e.why}  # fmt: skip
    # The namespace's names (for "move to") and the queues whose policy sends here (then
    # redrive is an operator's action): one read, only when the side panel is drawn.
    around = SimpleLazyObject(lambda: names_and_sources(place, qname))
    forms_ = queue_page_forms(stats) | dict(invalid or {})
    ctx = context(
        place,
        qname=qname,
        stats=stats,
        now=browser.pop("now", stats.now),
        unreadable_messages=browser.pop("unreadable_messages", None),
        tabs=TABS,
        params=params,
        current=current(request),
        act=place.url("rsmq-queue-action", qname),
        other_queues=move_targets(request, place, qname, lambda: around[0]),
        **charts(request, place, qname, params.get("range", ""), stats.now),
        dlq_sources=SimpleLazyObject(lambda: around[1]),
        analytics=SimpleLazyObject(
            lambda: queue_analytics(place.conn.name, place.ns, qname, stats.now)
        ),
        **browser,
        **forms_,
    )
    return render(request, template(request, "queue.html", "live"), ctx, status=status)


def names_and_sources(place: Place, qname: str) -> tuple[list[str], list[str]]:
    """The namespace's names and the queues dead-lettering to ``qname``; none when another
    queue's spoiled record can't be read (that queue's own page says so, not this one)."""
    try:
        return place.rsmq.queue_names_and_sources(qname)
    except RsmqError:  # QueueUnreadable, or InvalidArgument for a name no queue may have
        return [], []


def charts(
    request: HtmxHttpRequest, place: Place, qname: str, range_: str, now: int
) -> dict[str, Any]:
    """The charts' context; their snapshots are read only if the page shows them (a live
    refresh of the counts does not)."""
    range_ = range_ if range_ in RANGES else "hour"
    refresh = refresh_seconds(request)
    return {
        "history": SimpleLazyObject(
            lambda: queue_history(place.conn.name, place.ns, qname, range_, now)
        ),
        "chart_range": range_,
        "chart_ranges": RANGES,
        # New points come once per snapshot: polling faster than that shows nothing new.
        "chart_refresh": max(refresh, round(settings.RSMQ_SNAPSHOT_INTERVAL)) if refresh else 0,
    }


def move_targets(
    request: HtmxHttpRequest,
    place: Place,
    qname: str,
    names: Callable[[], list[str]] | None = None,
) -> Any:
    """Queue names suggested for "move to" (typing any other name works too); read only
    when a template shows them (the message page's htmx answers do not). ``names``: the
    namespace's names, when the page reads them anyway."""
    if not can(request.user, Role.OPERATOR):
        return []
    read = names or place.rsmq.list_queues
    return SimpleLazyObject(lambda: [q for q in read() if q != qname][:MOVE_SUGGESTIONS])
