"""The overview: every queue of a namespace, searched, sorted and paged; creating one."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.paginator import Page, Paginator
from django.db.models import F
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe
from redis.exceptions import RedisError

from dashboard.access import grants
from dashboard.access.guard import place_for
from dashboard.acting.actions import CREATE_QUEUE
from dashboard.display.formatting import Linked, duration
from dashboard.models import QueueCondition
from dashboard.places.connections import connections
from dashboard.places.place import Place
from dashboard.snapshots import latest
from dashboard.snapshots.history import current_rates, trends
from dashboard.triage import as_of, conditions, flags, forecast, thresholds
from dashboard.triage.owners import Owners
from dashboard.views.actions import Posted
from dashboard.views.common import (
    UNPROCESSABLE,
    back,
    context,
    current,
    int_param,
    query_of,
    template,
)
from dashboard.views.forms import QueueCreateForm
from dashboard.views.frozen import start
from dashboard.views.overview_flow import overview_flow
from dashboard.web.htmx import HtmxHttpRequest
from queues import RedisSMQ, RsmqError
from queues.models import Flagged, Leftovers, QueueStats

#: the default order: what needs the eye first (the score: dashboard/triage/conditions.py)
ATTENTION = "attention"
SORTS: dict[str, Callable[[QueueStats], Any]] = {
    ATTENTION: lambda s: s.qname,  # the order itself is Triage.key's
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
    "send_rate": lambda s: s.qname,  # the order itself is the conditions' (Triage.key)
    "receive_rate": lambda s: s.qname,
}
RATE_TITLE = "Messages {} per second over the last minute (sorted by the rate of the last \
snapshot interval)"
COLUMNS = [
    ("name", "Queue", "", ""),
    ("msgs", "Messages", "num", ""),
    ("visible", "Visible", "num", ""),
    ("inflight", "In flight", "num", ""),
    ("delayed", "Delayed", "num", ""),
    ("oldest", "Oldest visible", "num", ""),
    ("totalsent", "Sent", "num", ""),
    ("totalrecv", "Received", "num", ""),
    # the queue's attributes: on its page too; hidden below 1600 px, so that the health
    # columns and the last hour fit a laptop's screen
    ("vt", "vt", "num col-mid", ""),
    ("delay", "Delay", "num col-mid", ""),
    ("maxsize", "Max size", "num col-mid", ""),
    # from the snapshots (dashboard/triage/forecast.py); hidden on a phone's width
    ("wait", "Wait p95", "num col-low", ""),
    ("drain", "Drains in", "num col-low", ""),
    ("send_rate", "Send rate", "num", RATE_TITLE.format("sent")),
    ("receive_rate", "Receive rate", "num", RATE_TITLE.format("received")),
]
#: the sorts by a queue's outlook (its snapshots), not by its counters
OUTLOOK_SORTS: dict[str, Callable[[forecast.Outlook | None], float]] = {
    "wait": lambda o: -1.0 if o is None or o.wait_key is None else o.wait_key,
    "drain": lambda o: -1.0 if o is None or o.drain_key is None else o.drain_key,
}
#: a big namespace's outlook orders: the columns the snapshot stored them in (conditions)
OUTLOOK_COLUMNS = {"wait": "wait_p95", "drain": "drain_key"}
SORTS.update(dict.fromkeys(OUTLOOK_SORTS, lambda s: s.qname))  # the order is OUTLOOK_SORTS'


@login_required
@require_safe
def home(request: HtmxHttpRequest) -> HttpResponse:
    chosen = request.GET.get("place", "")  # the header's selector, without JavaScript
    if chosen.startswith("/c/") and "//" not in chosen:
        return redirect(chosen)
    scope = grants.scope_of(request)
    seen = [(c.name, ns) for c in connections() for ns in c.namespaces if scope.role_in(c.name, ns)]
    c = connections()[0]
    return redirect("rsmq-overview", *(seen[0] if seen else (c.name, c.namespaces[0])))


@login_required
@require_safe
def overview(request: HtmxHttpRequest, conn: str, ns: str) -> HttpResponse:
    place = place_for(request, conn, ns)
    if "as_of" in request.GET:  # a frozen view of a past time (dashboard/triage/as_of.py)
        return render_as_of(request, place)
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
        # The answer links to the new queue (the page without JavaScript goes there).
        url = place.url("rsmq-queue", d["name"])
        return Linked(f"Created queue {d['name']}.", d["name"], url), None

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
    """A page of a big namespace in the order of its last snapshot (its conditions, for
    the default order and the rates), its live counters (one round trip), and when that
    snapshot was taken; None to read it live."""
    if triage.only is not None:
        return None  # a caller who sees part of it: its queues read live, its totals theirs
    run = latest.last_run(place.conn.name, place.ns)
    key = sort.lstrip("-")
    judged = key in CONDITION_ORDER or key in OUTLOOK_SORTS
    if (key not in latest.ORDER and not judged) or run is None:
        return None
    taken_at, rows = run
    if not latest.is_big(rows):
        return None  # small: read live (a count would read every row)
    triage.totals = latest.run_totals(rows)
    if judged:
        names: Any = triage.condition_order(sort, search)
    else:
        names = latest.ordered_names(rows, sort, search)
    page_obj = Paginator(names, per_page).get_page(page)
    names = list(dict.fromkeys(page_obj.object_list))
    # (the flagged queues and peaks in the same round trip: overview_flow.py)
    triage.flagged = place.rsmq.queue_stats_flagged(names)
    return page_obj, triage.flagged.stats, taken_at


def queue_rows(
    rsmq: RedisSMQ, search: str, sort: str, page: int, per_page: int, triage: Triage
) -> tuple[Page[Any], list[QueueStats]]:
    """A page of queues. Sorting a big namespace by name pages the names before reading
    any counters, so a page of 10,000 queues reads only its own 50 (RabbitMQ's lesson);
    otherwise every queue is read, for the order, the totals and the dead-letter links.
    Only the queues the caller may see are listed, counted and summed."""
    every = rsmq.list_queues() if triage.only is None else triage.only
    names = [n for n in every if search.lower() in n.lower()]
    key = sort.lstrip("-")
    reverse_ = sort.startswith("-")
    if key == "name" and len(names) > latest.LIVE_MAX:
        names.sort(reverse=reverse_)
        page_obj = Paginator(names, per_page).get_page(page)
        triage.flagged = rsmq.queue_stats_flagged(list(page_obj.object_list))
        return page_obj, triage.flagged.stats
    triage.flagged = rsmq.queue_stats_flagged(names)
    read = triage.flagged.stats
    triage.read(read)
    if key in CONDITION_ORDER:
        stats = sorted(read, key=triage.key(key), reverse=reverse_)
    elif key in OUTLOOK_SORTS:
        now = read[0].now if read else triage.now_ms
        triage.outlooks = forecast.outlooks(triage.place.conn.name, triage.place.ns, None, now)
        by = OUTLOOK_SORTS[key]
        stats = sorted(read, key=lambda s: (by(triage.outlooks.get(s.qname)), s.qname))
        if reverse_:
            stats.reverse()
    else:
        stats = sorted(read, key=SORTS[key], reverse=reverse_)
    stats_page = Paginator(stats, per_page).get_page(page)
    return stats_page, list(stats_page.object_list)


#: the orders read from each queue's condition (dashboard/triage/conditions.py, at each snapshot)
CONDITION_ORDER = (ATTENTION, "send_rate", "receive_rate")


@dataclass(frozen=True, slots=True)
class Why:
    """What a row says of its queue: its consumers' state and the reasons, in words."""

    state: str = ""
    state_label: str = ""
    reason: str = ""
    alerts: int = 0
    score: float = 0.0

    @property
    def any(self) -> bool:
        return bool(self.score > 0 or self.alerts)

    @property
    def reasons(self) -> list[str]:
        return [r for r in self.reason.split("; ") if r]

    @property
    def incident(self) -> bool:
        return self.state in INCIDENTS


State = QueueCondition.State
LABELS = dict(State.choices)
JUDGED = ("state", "reason", "alerts", "score", "send_rate", "receive_rate")


class Judged(NamedTuple):
    """What the overview reads of a queue's condition (dashboard/triage/conditions.py)."""

    state: str
    reason: str
    alerts: int
    score: float
    send_rate: float | None
    receive_rate: float | None


INCIDENTS = conditions.INCIDENTS


class Triage:
    """What the overview needs to rank queues and to sum them up: each queue's condition
    as of the last snapshot (dashboard/triage/conditions.py: state, reasons, score, rates),
    which queues are dead-letter queues (and of which); the totals."""

    def __init__(self, place: Place, now_ms: int) -> None:
        self.place = place
        self.now_ms = now_ms
        self.conditions: dict[str, Judged] = {}
        self.sources: dict[str, list[str]] = {}  # dead-letter queue -> the queues sending
        self.totals: dict[str, int] = {}
        self.exact = True
        self.outlooks: dict[str, forecast.Outlook] = {}  # every queue's, when sorted by them
        self.flagged: Flagged | None = None  # paused / throttled queues, due peaks
        #: the queues of the place its caller may see, when that is not all of them
        self.only: list[str] | None = None

    def read(self, every: list[QueueStats]) -> None:
        """Learn from every queue's stats (a namespace read live) and their conditions."""
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
        rows = QueueCondition.objects.filter(
            connection=self.place.conn.name, namespace=self.place.ns
        )
        self.conditions = {r[0]: Judged(*r[1:]) for r in rows.values_list("queue", *JUDGED)}

    def of_page(self, stats: list[QueueStats]) -> None:
        """The conditions of a page's queues (a big namespace: not every one is read)."""
        missing = [s.qname for s in stats if s.qname not in self.conditions]
        if missing:
            rows = QueueCondition.objects.filter(
                connection=self.place.conn.name, namespace=self.place.ns, queue__in=missing
            )
            for r in rows.values_list("queue", *JUDGED):
                self.conditions[r[0]] = Judged(*r[1:])

    def why(self, s: QueueStats) -> Why:
        c = self.conditions.get(s.qname)
        if c is None:
            # Not judged yet (created since the last snapshot): its oldest message only.
            slo = thresholds.oldest_age_slo(self.place.conn.name, self.place.ns, s.qname)
            age = s.oldest_age
            if age is not None and slo > 0 and age > slo:
                size = conditions.size_of(s.visible, None)
                score = conditions.score(conditions.POINTS["over_slo"], 0, size)
                return Why(reason=f"oldest {duration(age)} (SLO {duration(slo)})", score=score)
            return Why()
        return Why(c.state, LABELS.get(c.state, c.state), c.reason, c.alerts, c.score)

    def key(self, sort: str) -> Callable[[QueueStats], tuple[Any, ...]]:
        """The live sort key of a condition order (ascending: reverse for the default)."""
        if sort == ATTENTION:
            # Most urgent first: the highest score, then the fullest, then by name.
            def urgent(s: QueueStats) -> tuple[Any, ...]:
                return (-self.why(s).score, -s.msgs, s.qname)

            return urgent

        def rate(s: QueueStats) -> tuple[Any, ...]:
            c = self.conditions.get(s.qname)
            value = getattr(c, sort) if c is not None else None
            return (value is not None, value or 0.0, s.qname)

        return rate

    def condition_order(self, sort: str, search: str) -> Any:
        """A big namespace's queue names in a condition order, by the database (an
        index per order): the most urgent first by default."""
        rows = QueueCondition.objects.filter(
            connection=self.place.conn.name, namespace=self.place.ns
        )
        if search:
            rows = rows.filter(queue__icontains=search)
        key = sort.lstrip("-")
        if key == ATTENTION:
            by: list[Any] = (
                ["score", "size", "queue"] if sort.startswith("-") else ["-score", "-size", "queue"]
            )
        else:
            expr = F(OUTLOOK_COLUMNS.get(key, key))
            first = (
                expr.desc(nulls_last=True) if sort.startswith("-") else expr.asc(nulls_first=True)
            )
            by = [first, "queue"]
        return rows.order_by(*by).values_list("queue", flat=True)


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
    clock = round(time.time() * 1000)
    triage = Triage(place, clock)
    scope = grants.scope_of(request)
    if not scope.whole(place.conn.name, place.ns):
        triage.only = scope.visible(place.conn.name, place.ns, place.rsmq.list_queues())
    only = triage.only
    if by_snapshot := snapshot_rows(place, search, sort, page, per_page, triage):
        page_obj, stats, sorted_at = by_snapshot
    else:
        page_obj, stats = queue_rows(place.rsmq, search, sort, page, per_page, triage)
    now = stats[0].now if stats else None
    triage.of_page(stats)
    # Each row's flags (folded into it: the row says why) and the worst queues' below the
    # table: the queues come first, whatever the number of flags.
    names = [s.qname for s in stats]
    flag_summary = flags.summary(place.conn.name, place.ns, now or clock, only)
    # Every queue's rate, summed: read from the last minutes of snapshots, a row per queue
    # and snapshot. A big namespace's sum would cost seconds (bench/RESULTS.md, "Figures
    # behind the code"), so it is shown per queue only (its rows, the page's charts and
    # /metrics have them).
    rates = None if sorted_at else current_rates(place.conn.name, place.ns, now or clock)
    if rates is not None and only is not None:
        rates = {q: rates[q] for q in only if q in rates}
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
        attention={s.qname: triage.why(s) for s in stats if not s.unreadable},
        dlq_sources=triage.sources,
        # the rows' dead-letter queues the caller may see (the others are not named)
        dlqs_seen=set(grants.visible(request, place, {s.dlq for s in stats if s.dlq})),
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
        row_flags=flags.of_queues(
            place.conn.name,
            place.ns,
            names,
            now or clock,
            {q: c.state for q, c in triage.conditions.items()},
        ),  # fmt: skip
        flag_summary=flag_summary,
        flag_groups=flags.worst(place.conn.name, place.ns, now or clock, only=only)
        if flag_summary.total
        else [],
        flags_now=now or clock,
        sorted_at=sorted_at,
        # Who owns each queue of the page: its row's hover.
        owners=Owners(place.conn.name, place.ns).summaries(s.qname for s in stats),
        # queue hashes a client's delete-queue left behind (go-rsmq's): bounded SCAN
        # steps over the whole database, so only when asked (?leftovers=1)
        leftover_queues=leftover_queues(place)
        if params.get("leftovers") and only is None
        else None,
        # paused / throttled badges and the peaks of what is coming due (overview_flow.py)
        **overview_flow(triage.flagged, stats),
        # this moment, frozen: its link (the page "as of" now, whenever it is opened)
        freeze_at=as_of.param(now or clock),
        freeze_label=as_of.label(now or clock),
    )
    return render(request, template(request, "overview.html", "queue-table"), ctx, status=status)


def leftover_queues(place: Place) -> Leftovers | None:
    """The namespace's left-over queue hashes (queues/ops/orphans.py); None if they
    can't be looked for here (an error, or a Redis Cluster's keys spread over nodes)."""
    try:
        return place.rsmq.leftover_queues()
    except (RsmqError, RedisError):
        return None


#: the orders of an overview "as of" a past time (each a key of as_of.Then; ascending)
AS_OF_SORTS: dict[str, Callable[[as_of.Then], Any]] = {
    ATTENTION: lambda t: (-t.score, -t.msgs, t.qname),
    "name": lambda t: t.qname,
    "msgs": lambda t: t.msgs,
    "visible": lambda t: t.visible,
    "inflight": lambda t: t.inflight,
    "delayed": lambda t: t.delayed,
    "oldest": lambda t: t.oldest_age or 0.0,
    "totalsent": lambda t: t.totalsent,
    "totalrecv": lambda t: t.totalrecv,
    "send_rate": lambda t: t.send_rate or 0.0,
    "receive_rate": lambda t: t.receive_rate or 0.0,
}
AS_OF_COLUMNS = [
    ("name", "Queue", "", ""),
    ("msgs", "Messages", "num", "Messages then"),
    ("delta", "Now", "num", "Messages now, and the difference from then"),
    ("visible", "Visible", "num", ""),
    ("inflight", "In flight", "num", ""),
    ("delayed", "Delayed", "num", ""),
    ("oldest", "Oldest visible", "num", "Age of the oldest visible message then"),
    ("totalsent", "Sent", "num col-mid", ""),
    ("totalrecv", "Received", "num col-mid", ""),
    ("send_rate", "Send rate", "num", "Over the snapshot interval before then"),
    ("receive_rate", "Receive rate", "num", "Over the snapshot interval before then"),
]


def render_as_of(request: HtmxHttpRequest, place: Place) -> HttpResponse:
    """The overview as it was at a past time (``?as_of=``): the snapshot run then, each
    queue's condition and reasons then, its flags and firing alerts then; beside it each
    row's messages now and its state now. A frozen view: no actions, no refresh."""
    started = start(request, place, "overview_as_of.html")
    if isinstance(started, HttpResponse):
        return started
    ctx, moment, rows = started
    assert moment.taken_at is not None
    params = request.GET
    conn, ns = place.conn.name, place.ns
    every = as_of.queues(conn, ns, rows, moment.taken_at)
    seen = set(grants.visible(request, place, (t.qname for t in every)))
    every = [t for t in every if t.qname in seen]
    search = params.get("q", "").strip()
    sort = params.get("sort", ATTENTION)
    if sort.lstrip("-") not in AS_OF_SORTS:
        sort = ATTENTION
    shown = [t for t in every if search.lower() in t.qname.lower()]
    totals = {
        "queues": len(every),
        "msgs": sum(t.msgs for t in every),
        "visible": sum(t.visible for t in every),
        "inflight": sum(t.inflight for t in every),
        "delayed": sum(t.delayed for t in every),
        "incidents": sum(t.incident for t in every),
        "attention": sum(t.score > 0 for t in every),
    }
    # (not by "now": that would read every queue live; the page's are read below)
    shown.sort(key=AS_OF_SORTS[sort.lstrip("-")], reverse=sort.startswith("-"))
    page_obj = Paginator(shown, settings.RSMQ_PAGE_SIZE).get_page(int_param(params.get("page"), 1))
    then: list[as_of.Then] = list(page_obj.object_list)
    names = [t.qname for t in then]
    try:  # now, beside then: the page's queues, one round trip
        live = {s.qname: s for s in place.rsmq.queue_stats(names)} if names else {}
        ctx.update(live_read=True)
    except (RsmqError, RedisError):
        live = {}
        ctx.update(live_read=False)
    by_name = {t.qname: t for t in then}
    for t in then:
        t.now, t.read_now = live.get(t.qname), bool(ctx["live_read"])
    states_now = dict(
        QueueCondition.objects.filter(connection=conn, namespace=ns, queue__in=names).values_list(
            "queue", "state"
        )
    )
    for q, open_then in as_of.flags_at(conn, ns, names, moment.taken_at).items():
        by_name[q].flags = open_then
    ctx.update(
        columns=AS_OF_COLUMNS,
        then=then,
        page_obj=page_obj,
        search=search,
        sort=sort,
        totals=totals,
        states_now={q: LABELS.get(s, s) for q, s in states_now.items()},
        owners=Owners(conn, ns, moment.taken_at).summaries(names),
    )
    return render(request, "overview_as_of.html", ctx)
