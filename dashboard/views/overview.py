"""The overview: every queue of a namespace, searched, sorted and paged; creating one."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, overload

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.paginator import Page, Paginator
from django.db.models import Q
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from queues import RedisSMQ
from queues.models import QueueStats

from .. import forecast, latest, thresholds
from ..actions import CREATE_QUEUE
from ..analytics import open_flags
from ..connections import connections
from ..forms import QueueCreateForm
from ..history import current_rates, trends
from ..htmx import HtmxHttpRequest
from ..place import Place, place_for
from .actions import Posted
from .common import UNPROCESSABLE, back, context, current, int_param, query_of, template

#: the default order: what needs the operator's eye first (thresholds.attention)
ATTENTION = "attention"
SORTS: dict[str, Callable[[QueueStats], Any]] = {
    ATTENTION: lambda s: s.qname,  # the order itself is attention_order's
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
    # from the snapshots (dashboard/forecast.py); hidden on a phone's width
    ("wait", "Wait p95", "num col-low"),
    ("drain", "Drains in", "num col-low"),
]
#: the sorts by a queue's outlook (its snapshots), not by its counters
OUTLOOK_SORTS: dict[str, Callable[[forecast.Outlook | None], float]] = {
    "wait": lambda o: o.wait.p95 if o is not None and o.wait is not None else -1.0,
    "drain": lambda o: o.drain.sort_key() if o is not None and o.drain is not None else -1.0,
}
SORTS.update(dict.fromkeys(OUTLOOK_SORTS, lambda s: s.qname))  # the order is OUTLOOK_SORTS'


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
    place = place_for(request, conn, ns, CREATE_QUEUE.role, CREATE_QUEUE.audit_name, name)
    form = QueueCreateForm(request.POST)
    if not form.is_valid():
        Posted(request, place, name, CREATE_QUEUE.audit_name).refused({"create_form": form})
        return render_overview(request, place, form, status=UNPROCESSABLE)
    d = form.cleaned_data

    def work() -> tuple[str, int | None]:
        place.rsmq.create_queue(d["name"], vt=d["vt"], delay=d["delay"], maxsize=d["maxsize"])
        return f"Created queue {d['name']}.", None

    params = {k: d[k] for k in ("vt", "delay", "maxsize")}
    if not Posted(request, place, d["name"], CREATE_QUEUE.audit_name).act(work, params=params):
        form.add_error("name", f"A queue named {d['name']} already exists.")
        return render_overview(request, place, form, status=UNPROCESSABLE)
    if request.htmx:
        return render_overview(request, place, QueueCreateForm())
    return redirect(place.url("rsmq-queue", d["name"]))


def snapshot_rows(
    place: Place, search: str, sort: str, page: int, per_page: int, triage: Triage
) -> tuple[Page[Any], list[QueueStats], int] | None:
    """A page of a big namespace in the order of its last snapshot, its live counters
    (one round trip), and when that snapshot was taken; None to read it live."""
    run = latest.last_run(place.conn.name, place.ns)
    key = sort.lstrip("-")
    if (key not in latest.ORDER and key != ATTENTION) or run is None:
        return None
    taken_at, rows = run
    if not latest.is_big(rows):
        return None  # small: read live (a count would read every row)
    triage.totals = latest.run_totals(rows)
    if key == ATTENTION:
        names: Any = triage.snapshot_order(rows, search)
    else:
        names = latest.ordered_names(rows, sort, search)
    page_obj = Paginator(names, per_page).get_page(page)
    names = list(dict.fromkeys(page_obj.object_list))
    return page_obj, place.rsmq.queue_stats(names), taken_at


def queue_rows(
    rsmq: RedisSMQ, search: str, sort: str, page: int, per_page: int, triage: Triage
) -> tuple[Page[Any], list[QueueStats]]:
    """A page of queues. Sorting a big namespace by name pages the names before reading
    any counters, so a page of 10,000 queues reads only its own 50 (RabbitMQ's lesson);
    otherwise every queue is read, for the order, the totals and the dead-letter links."""
    names = [n for n in rsmq.list_queues() if search.lower() in n.lower()]
    key = sort.lstrip("-")
    reverse_ = sort.startswith("-")
    if key == "name" and len(names) > latest.LIVE_MAX:
        names.sort(reverse=reverse_)
        page_obj = Paginator(names, per_page).get_page(page)
        return page_obj, rsmq.queue_stats(list(page_obj.object_list))
    every = rsmq.queue_stats(names)
    triage.read(every)
    if key == ATTENTION:
        stats = sorted(every, key=triage.key, reverse=reverse_)
    elif key in OUTLOOK_SORTS:
        now = every[0].now if every else triage.now_ms
        triage.outlooks = forecast.outlooks(triage.place.conn.name, triage.place.ns, None, now)
        by = OUTLOOK_SORTS[key]
        stats = sorted(every, key=lambda s: (by(triage.outlooks.get(s.qname)), s.qname))
        if reverse_:
            stats.reverse()
    else:
        stats = sorted(every, key=SORTS[key], reverse=reverse_)
    stats_page = Paginator(stats, per_page).get_page(page)
    return stats_page, list(stats_page.object_list)


#: a big namespace's "needs attention" order ranks at most this many queues in Python
RANKED_MAX = 5_000


class Chain(Sequence[str]):
    """A list, then a query's values: one sequence for the paginator."""

    def __init__(self, first: list[str], rest: Any) -> None:
        self.first, self.rest = first, rest

    def __len__(self) -> int:
        return len(self.first) + self.rest.count()

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, int):
            got = self[i : i + 1]
            if not got:
                raise IndexError(i)
            return got[0]
        start, stop = i.start or 0, i.stop if i.stop is not None else len(self)
        n = len(self.first)
        head = self.first[start:stop]
        if stop <= n:
            return head
        return head + list(self.rest[max(0, start - n) : stop - n])


class Triage:
    """What the overview needs to rank queues and to sum them up: open flags, which
    queues are dead-letter queues (and of which), backlogs a window ago; the totals."""

    def __init__(self, place: Place, flagged: set[str], now_ms: int) -> None:
        self.place = place
        self.flagged = flagged
        self.now_ms = now_ms
        self.before = latest.backlog_before(place.conn.name, place.ns, now_ms)
        self.sources: dict[str, list[str]] = {}  # dead-letter queue -> the queues sending
        self.totals: dict[str, int] = {}
        self.exact = True
        self.outlooks: dict[str, forecast.Outlook] = {}  # every queue's, when sorted by them

    def read(self, every: list[QueueStats]) -> None:
        """Learn from every queue's stats (a namespace read live)."""
        for s in every:
            if s.dlq:
                self.sources.setdefault(s.dlq, []).append(s.qname)
        readable = [s for s in every if not s.unreadable]
        self.totals = {
            "queues": len(every),
            **{k: sum(getattr(s, k) for s in readable)
               for k in ("msgs", "visible", "inflight", "delayed")},
        }  # fmt: skip
        self.exact = all(s.exact for s in readable)

    def attention(self, s: QueueStats) -> thresholds.Attention:
        return thresholds.attention(
            s, self.place.conn.name, self.place.ns, self.flagged, self.sources, self.before
        )

    def key(self, s: QueueStats) -> tuple[Any, ...]:
        return self.attention(s).key(s)

    def snapshot_order(self, rows: Any, search: str) -> Sequence[str]:
        """A big namespace's queues, most urgent first, from its last snapshot (its rows
        hold no policies: dead letters arriving count from the page read live only).

        Only the queues that may need attention are ranked here (flagged, older than the
        smallest SLO, or with as many messages as a growing backlog needs): the rest keep
        their order in the database, most messages first (100,000 queues ranked in Python
        took 0.9 s a page)."""
        if search:
            rows = rows.filter(queue__icontains=search)
        conn, ns = self.place.conn.name, self.place.ns
        maybe = rows.filter(
            Q(queue__in=self.flagged)
            | Q(oldest_age__gt=thresholds.smallest_oldest_age_slo())
            | Q(msgs__gte=settings.RSMQ_BACKLOG_GROWTH_MIN)
        )
        if maybe.values_list("pk", flat=True)[RANKED_MAX : RANKED_MAX + 1]:
            maybe = rows  # most of them: rank them all
        ranked = []
        for qname, msgs, age in maybe.values_list("queue", "msgs", "oldest_age"):
            slo = thresholds.oldest_age_slo(conn, ns, qname)
            over = age / slo if age is not None and slo > 0 and age > slo else 0.0
            growing = thresholds.backlog_growing(msgs, self.before.get(qname))
            if qname in self.flagged or over or growing or maybe is rows:
                key = (qname not in self.flagged, not over, not growing, -over, -msgs, qname)
                ranked.append((key, qname))
        ranked.sort()
        first = [q for _, q in ranked]
        if maybe is rows:
            return first
        rest = rows.exclude(queue__in=first).order_by("-msgs", "queue")
        return Chain(first, rest.values_list("queue", flat=True))


def render_overview(
    request: HtmxHttpRequest, place: Place, create_form: forms.Form, status: int = 200
) -> HttpResponse:
    params = request.GET if request.method == "GET" else query_of(back(request, ""))
    search = params.get("q", "").strip()
    sort = params.get("sort", ATTENTION)
    if sort.lstrip("-") not in SORTS:
        sort = ATTENTION
    page, per_page = int_param(params.get("page"), 1), settings.RSMQ_PAGE_SIZE
    sorted_at = None
    flags = open_flags(place.conn.name, place.ns)
    flagged = {f.queue for f in flags}
    clock = round(time.time() * 1000)
    triage = Triage(place, flagged, clock)
    if by_snapshot := snapshot_rows(place, search, sort, page, per_page, triage):
        page_obj, stats, sorted_at = by_snapshot
    else:
        page_obj, stats = queue_rows(place.rsmq, search, sort, page, per_page, triage)
    now = stats[0].now if stats else None
    # Every queue's rate, summed: read from the last minutes of snapshots, a row per queue
    # and snapshot. A big namespace's sum would cost seconds (100,000 queues: 2 s), so it
    # is shown per queue only (its rows, the page's charts and /metrics have them).
    rates = None if sorted_at else current_rates(place.conn.name, place.ns, now or clock)
    ctx = context(
        place,
        current=current(request),
        columns=COLUMNS,
        stats=stats,
        trends=trends(place.conn.name, place.ns, [s.qname for s in stats], now) if now else {},
        outlooks=(
            triage.outlooks
            or forecast.outlooks(place.conn.name, place.ns, [s.qname for s in stats], now)
        )
        if now
        else {},
        attention={s.qname: triage.attention(s) for s in stats if not s.unreadable},
        dlq_sources=triage.sources,
        totals=triage.totals,
        totals_exact=triage.exact,
        # Each queue's current rate, summed (None: no recent snapshots to tell).
        totals_rates={
            "send": sum(r.send_rate for r in rates.values()) if rates else None,
            "receive": sum(r.receive_rate for r in rates.values()) if rates else None,
        },
        rates_summed=rates is not None,
        page_obj=page_obj,
        search=search,
        sort=sort,
        now=now,
        create_form=create_form,
        params=params,
        flags=flags,
        flagged=flagged,
        flags_now=now or clock,
        sorted_at=sorted_at,
    )
    return render(request, template(request, "overview.html", "queue-table"), ctx, status=status)
