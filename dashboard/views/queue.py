"""The queue page: counts, charts, the message browser and the action forms."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_safe

from dashboard.access import grants
from dashboard.access.bodies import CLEAR, Bodies, Level, access
from dashboard.access.guard import may_act, place_for
from dashboard.access.roles import Role
from dashboard.acting import saved_filters
from dashboard.acting import undo as undos
from dashboard.acting.message_filter import MessageFilter, body_refusal, from_params, problems
from dashboard.analytics.results import queue_analytics
from dashboard.models import QueueCondition
from dashboard.places import place as places
from dashboard.places.place import Place
from dashboard.snapshots.history import RANGES, queue_history
from dashboard.templatetags.console import state_label
from dashboard.triage import as_of, conditions, flags, forecast
from dashboard.views.common import context, current, int_param, query_of, template
from dashboard.views.context import refresh_seconds
from dashboard.views.forms import SaveFilterForm, queue_page_forms
from dashboard.views.queue_as_of import render_queue_as_of
from dashboard.views.queue_flow import flow_context
from dashboard.web.htmx import HtmxHttpRequest
from queues import QueueUnreadable, RsmqError
from queues import validation as v
from queues.models import (
    Browse,
    Cursor,
    FailureGroup,
    MessageInfo,
    Orphans,
    QueueStats,
)
from queues.ops import DEFAULT_SAMPLE

log = logging.getLogger(__name__)

TABS = ("all", "visible", "inflight", "delayed")
MOVE_SUGGESTIONS = 500


@login_required
@require_safe
def queue_detail(request: HtmxHttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    place = place_for(request, conn, ns, queue=qname)
    v.qname(qname)  # a bad name in the URL: the middleware answers 404
    if "as_of" in request.GET:  # a frozen view of a past time (views/queue_as_of.py)
        range_ = request.GET.get("range", "")
        return render_queue_as_of(
            request, place, qname, lambda at: charts(request, place, qname, range_, at, True)
        )
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
    place = place_for(request, conn, ns, queue=qname)
    range_ = request.GET.get("range", "")
    if not request.htmx:  # the page shows them; a range that is not one is ignored
        return redirect(
            place.url("rsmq-queue", qname) + (f"?range={range_}" if range_ in RANGES else "")
        )
    params = query_of(request.htmx.current_url or "")
    try:  # the charts of a page "as of" a past time end then
        frozen_at = as_of.parse(params.get("as_of", "")) if "as_of" in params else None
    except as_of.BadTime:
        frozen_at = None
    if frozen_at is not None:
        chart_ctx = charts(request, place, qname, range_, frozen_at, frozen=True)
    else:
        chart_ctx = charts(request, place, qname, range_, places.queue_stats(place, qname).now)
    ctx = context(place, qname=qname, params=params, **chart_ctx)
    return render(request, "queue.html#charts", ctx)


BROWSED = ("all", "visible", "hidden")  # states whose messages are a contiguous rank range


@dataclass(frozen=True)
class Count:
    """How many messages a tab holds: the one number its badge, the pager and the bulk
    bar show, and how it was got when it is an estimate."""

    total: int
    exact: bool = True
    how: str = ""

    @property
    def shown(self) -> str:
        return f"{self.total:,}" if self.exact else f"≈{self.total:,}"


def state_count(stats: QueueStats, state: str) -> Count:
    if state in ("inflight", "delayed"):
        n = stats.inflight if state == "inflight" else stats.delayed
        if stats.exact:
            return Count(n)
        return Count(n, False, f"estimated: the share of {state_label(state)} among "
                     f"{DEFAULT_SAMPLE:,} evenly spaced hidden messages, times the "
                     f"{stats.hidden:,} hidden (an exact count would read every one)")  # fmt: skip
    return Count({"all": stats.msgs, "visible": stats.visible, "hidden": stats.hidden}[state])


def tab_counts(stats: QueueStats) -> list[tuple[str, Count]]:
    return [(t, state_count(stats, t)) for t in TABS]


def cursor_param(params: QueryDict, name: str, notes: list[str]) -> Cursor | None:
    raw = params.get(name)
    if not raw:
        return None
    try:
        return Cursor.decode(raw)
    except ValueError:
        notes.append("That link's place in the queue can't be read (it was cut or edited): "
                     "showing the first page.")  # fmt: skip
        return None


def time_param(raw: str, notes: list[str]) -> int | None:
    """A jump-to time (ISO 8601, UTC unless it says otherwise) as epoch ms."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        when = dt.datetime.fromisoformat(raw)
    except ValueError:
        notes.append(f"'{raw[:40]}' is not a time: use a date and time like "
                     "2026-11-22T23:05 (UTC).")  # fmt: skip
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0, min(int(when.timestamp() * 1000), 2**53))


class Bounds(TypedDict):
    """``RedisSMQ.browse``'s time budget (s), step and patience (s) for one request."""

    budget: float
    step: int
    patience: float


def bounds(patience: bool = False) -> Bounds:
    """How long one request may read, and how much one script call may look at; a page
    (not a scan step) may read up to 3 budgets more to show at least one message."""
    budget = settings.RSMQ_BROWSE_BUDGET_MS / 1000
    return {"budget": budget, "step": settings.RSMQ_BROWSE_STEP,
            "patience": 3 * budget if patience else 0.0}  # fmt: skip


def highlight(text: str, needle: str) -> list[tuple[str, bool]]:
    """A body's shown text cut into (part, is a match) for <mark>."""
    if not needle:
        return [(text, False)]
    parts: list[tuple[str, bool]] = []
    i = 0
    while (j := text.find(needle, i)) >= 0:
        parts += [(text[i:j], False), (needle, True)]
        i = j + len(needle)
    return parts + [(text[i:], False)]


def browse(
    place: Place,
    qname: str,
    params: QueryDict,
    lookup_done: bool = False,
    stats: QueueStats | None = None,
    bodies: Bodies = CLEAR,
) -> dict[str, Any]:
    """The message browser: a keyset page of one state, a scan, or an id lookup, each
    body preview as ``bodies`` lets the caller read it.

    ``lookup_done``: the view already looked the id up and did not find it.
    """
    f = from_params(params)  # the URL is the filter (dashboard/acting/message_filter.py)
    state, min_rc, text = f.state, f.min_rc, f.contains
    size = settings.RSMQ_PAGE_SIZE
    lookup = params.get("id", "").strip()
    out: dict[str, Any] = {"state": state, "min_rc": min_rc, "text": text, "lookup": lookup,
                           **filter_context(f, params)}  # fmt: skip
    preview = settings.RSMQ_PREVIEW_BYTES
    if lookup:
        msg = None
        if v.ID_RE.fullmatch(lookup) and not lookup_done:
            msg = place.rsmq.get_message(qname, lookup)
        out.update(items=[msg] if msg else [], mode="lookup",
                   rows=shown_rows(bodies, [(msg, None)] if msg else []))  # fmt: skip
        return out
    notes: list[str] = []
    count = state_count(stats, state) if stats else Count(0)
    after = cursor_param(params, "after", notes)
    before = None if after else cursor_param(params, "before", notes)
    if f.narrows:
        return out | scan(place, qname, params, f, after, count, notes, stats, bodies)
    rank: int | None = None
    pages = max(1, -(-count.total // size))
    at = time_param(params.get("at", ""), notes) if not (after or before) else None
    if at is not None:
        after = Cursor.at_time(at)
    elif params.get("last") and not (after or before):
        if state in BROWSED:
            rank = (pages - 1) * size
        else:
            before = Cursor("", b"")
    elif params.get("page") and not (after or before):
        page_no = int_param(params.get("page"), 1)
        if state not in BROWSED:
            notes.append("Pages of in-flight and delayed messages go by time, not number: "
                         "showing the first page.")  # fmt: skip
        elif page_no > pages:
            notes.append(f"Page {page_no:,} is past the end ({pages:,} page{pluralize(pages)} "
                         "now): showing the last page.")  # fmt: skip
            rank = (pages - 1) * size
        else:
            rank = (page_no - 1) * size
    # In flight / delayed hold none by the counts (a delayed tab beside 20,000 in flight):
    # counted exactly, nothing to read; estimated from a sample, one script call's look
    # (the page says where it stopped; Next goes on), not the budget and the patience a
    # page that will find something gets. Reading 20,000 hidden messages for none took
    # the page past its budget (bench/RESULTS.md, "Dashboard pages").
    none_counted = state in ("inflight", "delayed") and count.total == 0
    if none_counted and count.exact and stats is not None:
        b = Browse([], 0, True, True, None, stats.hidden, None, now=stats.now)
    else:
        reading = bounds(patience=not none_counted)
        if none_counted:
            reading["budget"] = 0.0  # one call
        b = place.rsmq.browse(qname, state, after=after, before=before, rank=rank, limit=size,
                              preview=preview, **reading)  # fmt: skip
    if not b.items and b.at_end and (after or before) and b.state_size:
        # A stale link (the messages it pointed between are gone, or it points past the
        # end): the nearest real page instead of an empty one.
        if after is not None and at is None:
            notes.append("Nothing after that place any more: showing the last page.")
        elif after is not None:
            notes.append("No message becomes visible at or after that time: showing the last page.")
        else:
            notes.append("Nothing before that place any more: showing the first page.")
        after, before, rank = None, Cursor("", b"") if after else None, None
        b = place.rsmq.browse(
            qname, state, before=before, limit=size, preview=preview, **bounds(patience=True)
        )
    prev_c: Cursor | None
    next_c: Cursor | None
    if before is not None and rank is None:  # read backwards: from the end, or Previous
        prev_c = None if b.at_end else b.resume
        next_c = b.last if before.score != "" else None
    else:
        from_start = after is None and not rank
        prev_c = None if from_start or b.position == 0 else (b.first or after)
        next_c = None if b.at_end else b.resume
    position = b.position
    page_info = PageInfo(count.total, count.exact, count.how, position, size, len(b.items))
    out.update(
        items=b.items, rows=shown_rows(bodies, [(m, None) for m in b.items]), mode="page",
        page=page_info,
        browse=b, notes=notes, now=b.now,
        prev_cursor=prev_c.encode() if prev_c else None,
        next_cursor=next_c.encode() if next_c else None,
        count=count,
    )  # fmt: skip
    return out


@dataclass(frozen=True)
class PageInfo:
    """What the pager says: the state's count (the tab's), and where this page is in it
    when the state's messages have positions (all / visible / hidden)."""

    total: int
    exact: bool
    how: str
    position: int | None  # 0-based place of the page's first message
    size: int
    shown: int

    @property
    def number(self) -> int | None:
        # a page read a moment after the counts may sit past them (messages came)
        return None if self.position is None else min(self.position // self.size + 1, self.pages)

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def first_shown(self) -> int:
        return (self.position or 0) + 1

    @property
    def last_shown(self) -> int:
        return (self.position or 0) + self.shown


def filter_context(f: MessageFilter, params: QueryDict) -> dict[str, Any]:
    """The filter bar's fields beyond state / rc / search, and what was wrong with the
    URL's (shown under the field; the page then answers 400)."""
    return {"filter": f, "where": f.where or params.get("where", ""),
            "older": f.older, "younger": f.younger,
            "filter_problems": problems(params)}  # fmt: skip


def scan(
    place: Place,
    qname: str,
    params: QueryDict,
    f: MessageFilter,
    after: Cursor | None,
    count: Count,
    notes: list[str],
    stats: QueueStats | None,
    bodies: Bodies = CLEAR,
) -> dict[str, Any]:
    """A filter (received >= N, body contains, JSON fields, age) over the whole state:
    each request reads for a bounded time and goes on from where the last one stopped,
    keeping count. A body search counts only what shows in the caller's previews
    (Bodies.hit): it tells nothing of a masked part."""
    size = settings.RSMQ_PAGE_SIZE
    state, text = f.state, f.contains
    looked = int_param(params.get("looked"), 0, low=0, high=2**53) if after else 0
    found = int_param(params.get("found"), 0, low=0, high=2**53) if after else 0
    onpage = int_param(params.get("onpage"), 0, low=0, high=size - 1) if after else 0
    stopped = bool(params.get("stop"))
    if stopped:
        b = None
        items: list[MessageInfo] = []
    else:
        b = place.rsmq.browse(
            qname, after=after, limit=size - onpage, preview=settings.RSMQ_PREVIEW_BYTES,
            **f.browse_kwargs(), **bounds(),
        )  # fmt: skip
        rows = shown_rows(bodies, [(m, None) for m in b.items])
        if text and bodies.level != Level.CLEAR:
            rows = [(m, p) for m, p in rows if text in m.message]
        items = [m for m, _ in rows]
        looked += b.looked
        found += len(items)
        onpage += len(items)
    at_end = b.at_end if b else False
    resume = (b.resume if b else after) or after
    full = onpage >= size
    of_state = "hidden" if state in ("inflight", "delayed") else state

    def url(**extra: Any) -> str:
        q = params.copy()
        for k in ("after", "before", "page", "at", "last", "looked", "found", "onpage",
                  "stop", "part"):  # fmt: skip
            q.pop(k, None)
        q.update({"after": resume.encode() if resume else "", "looked": str(looked),
                  "found": str(found)})  # fmt: skip
        for k, val in extra.items():
            q[k] = str(val)
        return "?" + q.urlencode()

    return {
        "mode": "search",
        "items": items,
        "rows": [(m, highlight(m.message[:300], text)) for m in items],  # shown (masked)
        "notes": notes,
        **({"now": b.now} if b else {}),
        "refresh": 0,  # a live refresh would start the scan over
        "scan": {
            "looked": looked, "found": found, "at_end": at_end, "size": size,
            "of": state_count(stats, of_state) if stats else count, "of_state": of_state,
            "running": not (at_end or full or stopped), "stopped": stopped, "full": full,
            "more_url": url(onpage=onpage, part="scan"),  # this page goes on (htmx)
            "stop_url": url(onpage=onpage, part="scan", stop=1),
            "continue_url": url(onpage=0),  # goes on, as a new page (no htmx)
            "next_url": url(onpage=0),  # the next page of matches
        },
    }  # fmt: skip


def render_queue(
    request: HtmxHttpRequest,
    place: Place,
    qname: str,
    params: QueryDict,
    status: int = 200,
    lookup_done: bool = False,
    invalid: Mapping[str, forms.Form] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> HttpResponse:
    stats = places.queue_stats(place, qname)
    bodies = access(request, place, qname)
    refused = body_refusal(bodies, from_params(params))
    if refused:  # searched or filtered on what it may not read: the rest of the filter runs
        params = params.copy()
        asked = [k for k in ("search", "where", "error_text") if params.pop(k, None)]
        field = asked[0] if asked else "where"
        status = 403
    try:
        browser = browse(place, qname, params, lookup_done, stats, bodies)
    except QueueUnreadable as e:
        # Its counters may still read: the page shows them, and why there's no list.
        browser = {"state": "all", "min_rc": 0, "text": "", "lookup": "", "items": [],
                   "mode": "unreadable", "unreadable_messages": e.why,
                   **filter_context(from_params(params), params)}  # fmt: skip
    if browser.get("filter_problems") and status == 200:
        status = 400  # a bad filter in the URL: said under its field, left out
    if refused:
        browser["filter_problems"] = {**browser.get("filter_problems", {}), field: refused}
    # The namespace's names (for "move to") and the queues whose policy sends here (then
    # redrive is an operator's action): one read, only when the side panel is drawn.
    around = SimpleLazyObject(lambda: names_and_sources(request, place, qname))
    dlq_seen = bool(stats.dlq and grants.visible(request, place, [stats.dlq]))
    forms_ = queue_page_forms(stats, dlq_seen) | dict(invalid or {})
    ctx = context(
        place,
        qname=qname,
        stats=stats,
        now=browser.pop("now", stats.now),
        unreadable_messages=browser.pop("unreadable_messages", None),
        tabs=tab_counts(stats),
        params=params,
        current=current(request),
        act=place.url("rsmq-queue-action", qname),
        other_queues=move_targets(request, place, qname, lambda: around[0]),
        **charts(request, place, qname, params.get("range", ""), stats.now),
        dlq_sources=SimpleLazyObject(lambda: around[1]),
        # its dead-letter queue, named only to one whose grants cover it
        dlq_seen=dlq_seen,
        # a dead-letter queue's page says why its messages died (the biggest groups)
        why_dead=SimpleLazyObject(lambda: why_dead(place, qname, bodies)),
        # what other ports left behind: a few more calls, so only when asked (?leftovers=1)
        leftovers=leftovers_of(place, qname) if params.get("leftovers") else None,
        analytics=SimpleLazyObject(
            lambda: queue_analytics(place.conn.name, place.ns, qname, stats.now)
        ),
        condition=SimpleLazyObject(lambda: condition_of(place, qname)),
        # its pause / throttle, its workers and what is coming due: one read (queue_flow.py)
        **flow_context(place, qname, params, stats),
        expectation=SimpleLazyObject(
            lambda: conditions.expectation(place.conn.name, place.ns, qname, bool(around[1]))
        ),
        queue_flags=SimpleLazyObject(
            lambda: flags.of_queue(place.conn.name, place.ns, qname, stats.now)
        ),
        saved_filters=SimpleLazyObject(lambda: saved_filters.listed(request.user, place, qname)),
        save_filter_form=SaveFilterForm(),
        job_filter=from_params(params),  # act on every match (_bulk_job.html)
        # whether what a destructive action here removes fits RSMQ_UNDO_MAX_MB: its
        # confirmation says "this cannot be undone" when not (read only if shown)
        undoable=SimpleLazyObject(lambda: undos.fits(place, qname, stats)),
        undo_hours=undos.hours(),
        # this moment, frozen: its link (the page "as of" now, whenever it is opened)
        freeze_at=as_of.param(stats.now),
        freeze_label=as_of.label(stats.now),
        bodies=bodies,
        reveal_url=place.url("rsmq-reveal", qname),
        **browser,
        **forms_,
        **(extra or {}),
    )
    page = template(request, "queue.html", "live")
    if request.htmx and request.method == "GET" and params.get("part") == "scan":
        page = "_scan_more.html"  # a scan's next step (browse's auto-continue)
    return render(request, page, ctx, status=status)


def shown_rows(
    bodies: Bodies, rows: list[tuple[MessageInfo, Any]]
) -> list[tuple[MessageInfo, Any]]:
    """The browser's rows with each body preview as the caller may read it."""
    if bodies.level == Level.CLEAR:
        return rows
    return [(dataclasses.replace(m, message=bodies.show(m.message)), None) for m, _ in rows]


def condition_of(place: Place, qname: str) -> QueueCondition | None:
    """The queue's consumers' state and reasons as of the last snapshot, if judged."""
    return QueueCondition.objects.filter(
        connection=place.conn.name, namespace=place.ns, queue=qname
    ).first()


@dataclass(frozen=True, slots=True)
class LeftBehind:
    """What other RSMQ ports left in a queue's keys: its orphaned message fields (None:
    unreadable) and whether its hash is left over (its name not in the queue set)."""

    orphans: Orphans | None
    leftover: bool


def leftovers_of(place: Place, qname: str) -> LeftBehind:
    """What other RSMQ ports left in this queue's keys (queues/ops/orphans.py). Read only
    when the page's side panel is drawn; bounded calls."""
    try:
        orphans = place.rsmq.orphans(qname)
    except RsmqError:
        orphans = None
    try:
        leftover = place.rsmq.is_leftover_queue(qname)
    except RsmqError:
        leftover = False
    return LeftBehind(orphans, leftover)


#: the failure groups a dead-letter queue's page lists (the Failing view has them all)
WHY_DEAD = 3


@dataclass(frozen=True, slots=True)
class WhyDead:
    """A dead-letter queue's biggest failure groups (at most WHY_DEAD), how many there
    are (``of``) and whether that is more than are shown."""

    groups: list[FailureGroup]
    of: int
    more: bool


def why_dead(place: Place, qname: str, bodies: Bodies) -> WhyDead:
    """One bounded read of a dead-letter queue's failure histories (failure_groups), only
    when the page shows it. None read: none."""
    try:
        read = place.rsmq.failure_groups(qname)
    except RsmqError as e:
        log.warning("failure groups of %s not read: %s", qname, e)
        return WhyDead([], 0, False)
    dead = sorted(read.of_state("dead"), key=lambda g: (-g.count, g.type))
    dead = [bodies.group(g) for g in dead if g.where == qname]
    return WhyDead(dead[:WHY_DEAD], len(dead), len(dead) > WHY_DEAD)


def names_and_sources(
    request: HtmxHttpRequest, place: Place, qname: str
) -> tuple[list[str], list[str]]:
    """The namespace's names and the queues dead-lettering to ``qname`` that the caller
    may see; none when another queue's spoiled record can't be read (that queue's own page
    says so, not this one)."""
    try:
        names, sources = place.rsmq.queue_names_and_sources(qname)
    except RsmqError:  # QueueUnreadable, or InvalidArgument for a name no queue may have
        return [], []
    return names, grants.visible(request, place, sources)


def charts(
    request: HtmxHttpRequest,
    place: Place,
    qname: str,
    range_: str,
    now: int,
    frozen: bool = False,
) -> dict[str, Any]:
    """The charts' context; their snapshots are read only if the page shows them (a live
    refresh of the counts does not). ``frozen``: they end at ``now``, a past time (a
    page "as of" it), and never refresh."""
    range_ = range_ if range_ in RANGES else "hour"
    refresh = 0 if frozen else refresh_seconds(request)
    return {
        "history": SimpleLazyObject(
            lambda: queue_history(place.conn.name, place.ns, qname, range_, now)
        ),
        "outlook": SimpleLazyObject(
            lambda: (
                forecast.outlooks(place.conn.name, place.ns, [qname], now).get(qname)
                or forecast.Outlook()
            )
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
    if not may_act(request, place, Role.OPERATOR, qname):
        return []
    read = names or place.rsmq.list_queues
    scope = grants.scope_of(request)

    def suggested() -> list[str]:
        seen = scope.visible(place.conn.name, place.ns, read())
        return [q for q in seen if q != qname][:MOVE_SUGGESTIONS]

    return SimpleLazyObject(suggested)
