"""The console's pages and actions. Every Redis access goes through the queues core."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.functional import SimpleLazyObject
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from queues import QueueNotFound, RedisSMQ, RsmqError
from queues import validation as v
from queues.models import LIST_STATES, MessageInfo, QueueStats

from .access import Role, can, require
from .analytics import open_flags, queue_analytics
from .connections import Connection, connections, get_rsmq
from .context_processors import refresh_seconds
from .forms import (
    ConfirmNameForm,
    MoveForm,
    PolicyForm,
    QueueAttributesForm,
    QueueCreateForm,
    RedriveForm,
    RefreshForm,
    SendForm,
    VisibilityForm,
)
from .history import RANGES, queue_history, trends
from .models import AuditEntry, Preference

SORTS = {
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
TABS = ("all", "visible", "inflight", "delayed")
UNPROCESSABLE = 422  # htmx is configured (base.html) to swap it: forms show their errors


@dataclass(frozen=True, slots=True)
class Place:
    """Where a page looks: a configured Redis connection and one of its namespaces."""

    conn: Connection
    ns: str
    rsmq: RedisSMQ

    def url(self, name: str, *args: str) -> str:
        return reverse(name, args=(self.conn.name, self.ns, *args))


def _place(conn: str, ns: str) -> Place:
    for c in connections():
        if c.name == conn and ns in c.namespaces:
            return Place(c, ns, get_rsmq(c, ns))
    raise Http404(f"No connection {conn!r} with namespace {ns!r} is configured.")


def _context(request: HttpRequest, place: Place | None, **extra: Any) -> dict[str, Any]:
    """Page context; what the header needs comes from context_processors.console."""
    ctx: dict[str, Any] = {"place": place, **extra}
    if place:
        ctx.update(connection=place.conn, namespace=place.ns)
    return ctx


# -- audit ---------------------------------------------------------------------------


def _audit(
    request: HttpRequest,
    place: Place,
    action: str,
    outcome: str,
    queue: str = "",
    ids: Iterable[str] = (),
    count: int | None = None,
    params: dict[str, Any] | None = None,
    detail: str = "",
) -> None:
    AuditEntry.objects.create(
        user=request.user,
        username=request.user.get_username(),
        connection=place.conn.name,
        namespace=place.ns,
        queue=queue,
        action=action,
        ids=list(ids)[:1000],
        count=count,
        params=params or {},
        outcome=outcome,
        detail=detail[:2000],
    )


def _require(request: HttpRequest, place: Place, role: Role, action: str, queue: str) -> None:
    """Raise PermissionDenied (a 403) unless allowed; denied attempts are audited too."""
    if not can(request.user, role):
        _audit(request, place, action, AuditEntry.Outcome.DENIED, queue=queue)
    require(request.user, role)


def _act(
    request: HttpRequest,
    place: Place,
    action: str,
    queue: str,
    work: Callable[[], tuple[str, int | None]],
    ids: Iterable[str] = (),
    params: dict[str, Any] | None = None,
) -> bool:
    """Run an action, report its outcome to the operator and write the audit row."""
    ids = list(ids)
    try:
        text, count = work()
    except RsmqError as e:
        _audit(request, place, action, AuditEntry.Outcome.ERROR, queue, ids, None, params, str(e))
        messages.error(request, str(e))
        return False
    except Exception as e:
        # Redis down mid-action: audit it, then let the middleware answer 503.
        _audit(request, place, action, AuditEntry.Outcome.ERROR, queue, ids, None, params, str(e))
        raise
    _audit(request, place, action, AuditEntry.Outcome.OK, queue, ids, count, params, text)
    messages.success(request, text)
    return True


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _back(request: HttpRequest, default: str) -> str:
    """The page an action was posted from (htmx tells; plain forms send `next`)."""
    current = request.htmx.current_url_abs_path if request.htmx else None
    target = current or request.POST.get("next") or default
    # Only ever a path on this site: no open redirect through `next`.
    if not target.startswith("/") or not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return default
    return target


def _query_of(url: str) -> QueryDict:
    return QueryDict(urlsplit(url).query)


# -- pages ---------------------------------------------------------------------------


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    chosen = request.GET.get("place", "")  # the header's selector, without JavaScript
    if chosen.startswith("/c/") and "//" not in chosen:
        return redirect(chosen)
    c = connections()[0]
    return redirect("rsmq-overview", c.name, c.namespaces[0])


def _queue_rows(
    rsmq: RedisSMQ, search: str, sort: str, page: int, per_page: int
) -> tuple[Any, list[QueueStats]]:
    """A page of queues. Sorting by name pages the names before reading any counters,
    so a page of 10,000 queues reads only its own 50 (RabbitMQ's lesson)."""
    names = [n for n in rsmq.list_queues() if search.lower() in n.lower()]
    key = sort.lstrip("-")
    reverse_ = sort.startswith("-")
    if key == "name":
        names.sort(reverse=reverse_)
        paginator = Paginator(names, per_page)
        page_obj = paginator.get_page(page)
        return page_obj, rsmq.queue_stats(page_obj.object_list)
    stats = sorted(rsmq.queue_stats(names), key=SORTS[key], reverse=reverse_)
    page_obj = Paginator(stats, per_page).get_page(page)
    return page_obj, list(page_obj.object_list)


@login_required
@require_GET
def overview(request: HttpRequest, conn: str, ns: str) -> HttpResponse:
    place = _place(conn, ns)
    require(request.user, Role.VIEWER)
    return _render_overview(request, place, QueueCreateForm())


def _render_overview(
    request: HttpRequest, place: Place, create_form: forms.Form, status: int = 200
) -> HttpResponse:
    params = request.GET if request.method == "GET" else _query_of(_back(request, ""))
    search = params.get("q", "").strip()
    sort = params.get("sort", "name")
    if sort.lstrip("-") not in SORTS:
        sort = "name"
    page_obj, stats = _queue_rows(
        place.rsmq, search, sort, _int(params.get("page"), 1), settings.RSMQ_PAGE_SIZE
    )
    now = stats[0].now if stats else None
    flags = open_flags(place.conn.name, place.ns)
    ctx = _context(
        request,
        place,
        current=request.get_full_path() if request.method == "GET" else _back(request, ""),
        columns=COLUMNS,
        stats=stats,
        trends=trends(place.conn.name, place.ns, [s.qname for s in stats], now) if stats else {},
        page_obj=page_obj,
        search=search,
        sort=sort,
        now=now,
        create_form=create_form,
        params=params,
        flags=flags,
        flagged={f.queue for f in flags},
        flags_now=now or round(time.time() * 1000),
    )
    return render(request, _template(request, "overview.html", "queue-table"), ctx, status=status)


def _template(request: HttpRequest, page: str, polled: str | None = None) -> str:
    """The page, or the partial of it an htmx request asks for: its live-refreshed part
    (``polled``) for a poll, the whole ``#content`` after an action."""
    if request.htmx and request.method == "GET" and polled and request.htmx.target == polled:
        return f"{page}#{polled}"
    if request.htmx and request.method == "POST":
        return f"{page}#content"
    return page


def _int(value: str | None, default: int, low: int = 1, high: int = 2**31) -> int:
    try:
        return min(max(int(value), low), high) if value not in (None, "") else default
    except ValueError:
        return default


@login_required
@require_POST
def queue_create(request: HttpRequest, conn: str, ns: str) -> HttpResponse:
    place = _place(conn, ns)
    _require(request, place, Role.ADMIN, "create_queue", request.POST.get("name", ""))
    form = QueueCreateForm(request.POST)
    if not form.is_valid():
        return _render_overview(request, place, form, status=UNPROCESSABLE)
    d = form.cleaned_data

    def work() -> tuple[str, int | None]:
        place.rsmq.create_queue(d["name"], vt=d["vt"], delay=d["delay"], maxsize=d["maxsize"])
        return f"Created queue {d['name']}.", None

    params = {k: d[k] for k in ("vt", "delay", "maxsize")}
    if not _act(request, place, "create_queue", d["name"], work, params=params):
        form.add_error("name", f"A queue named {d['name']} already exists.")
        return _render_overview(request, place, form, status=UNPROCESSABLE)
    if request.htmx:
        return _render_overview(request, place, QueueCreateForm())
    return redirect(place.url("rsmq-queue", d["name"]))


def _stats_or_404(place: Place, qname: str) -> QueueStats:
    try:
        v.qname(qname)
    except RsmqError:
        raise Http404(f"No queue {qname!r}: not a valid queue name.") from None
    stats = place.rsmq.queue_stats([qname])
    if not stats:
        raise QueueNotFound(qname)
    return stats[0]


@login_required
@require_GET
def queue_detail(request: HttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    place = _place(conn, ns)
    require(request.user, Role.VIEWER)
    v.qname(qname)  # a bad name in the URL: the middleware answers 404
    lookup = request.GET.get("id", "").strip()
    found = None
    if lookup and v.ID_RE.fullmatch(lookup):
        found = place.rsmq.get_message(qname, lookup)
        if found:
            return redirect(place.url("rsmq-message", qname, lookup))
    return _render_queue(request, place, qname, request.GET, lookup_done=True)


def _browse(
    place: Place, qname: str, params: QueryDict, lookup_done: bool = False
) -> dict[str, Any]:
    """The message browser: a page of one state, a filter, or an id lookup.

    ``lookup_done``: the view already looked the id up and did not find it.
    """
    state = params.get("state", "all")
    if state not in LIST_STATES:
        state = "all"
    size = settings.RSMQ_PAGE_SIZE
    min_rc = _int(params.get("rc"), 0, low=0)
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
        cursor = _int(params.get("cursor"), 0, low=0)
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
    page_no = _int(params.get("page"), 1)
    page = place.rsmq.list_messages(
        qname, state=state, offset=(page_no - 1) * size, limit=size, preview=preview
    )
    pages = max(1, -(-page.total // size))
    out.update(items=page.items, mode="page", page=page, page_no=page_no, pages=pages, now=page.now)
    return out


def _render_queue(
    request: HttpRequest,
    place: Place,
    qname: str,
    params: QueryDict,
    status: int = 200,
    lookup_done: bool = False,
    **form_overrides: forms.Form,
) -> HttpResponse:
    stats = _stats_or_404(place, qname)
    browser = _browse(place, qname, params, lookup_done)
    forms_ = {
        "send_form": SendForm(),
        "attributes_form": QueueAttributesForm(
            initial={"vt": stats.vt, "delay": stats.delay, "maxsize": stats.maxsize}
        ),
        "purge_form": ConfirmNameForm(qname=qname, prefix="purge"),
        "delete_form": ConfirmNameForm(qname=qname, prefix="delete"),
        "move_form": MoveForm(),
        "policy_form": PolicyForm(initial={"dlq": stats.dlq, "maxrc": stats.maxrc}),
        "redrive_form": RedriveForm(),
        **form_overrides,
    }
    ctx = _context(
        request,
        place,
        qname=qname,
        stats=stats,
        now=browser.pop("now", stats.now),
        tabs=TABS,
        params=params,
        current=request.get_full_path() if request.method == "GET" else _back(request, ""),
        other_queues=_move_targets(request, place, qname),
        **_charts(request, place, qname, params.get("range", ""), stats.now),
        analytics=SimpleLazyObject(
            lambda: queue_analytics(place.conn.name, place.ns, qname, stats.now)
        ),
        **browser,
        **forms_,
    )
    return render(request, _template(request, "queue.html", "live"), ctx, status=status)


def _charts(
    request: HttpRequest, place: Place, qname: str, range_: str, now: int
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


@login_required
@require_GET
def queue_charts(request: HttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    """The queue page's charts alone, for htmx: another range, or their refresh."""
    place = _place(conn, ns)
    require(request.user, Role.VIEWER)
    range_ = request.GET.get("range", "")
    if not request.htmx:  # the page shows them; a range that is not one is ignored
        return redirect(
            place.url("rsmq-queue", qname) + (f"?range={range_}" if range_ in RANGES else "")
        )
    stats = _stats_or_404(place, qname)
    ctx = _context(
        request,
        place,
        qname=qname,
        params=_query_of(request.htmx.current_url or ""),
        **_charts(request, place, qname, range_, stats.now),
    )
    return render(request, "queue.html#charts", ctx)


@login_required
@require_POST
def queue_action(request: HttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    """One POST view for the queue page; the button's name says which action."""
    place = _place(conn, ns)
    action = request.POST.get("action", "")
    handler = QUEUE_ACTIONS.get(action)
    if handler is None:
        raise Http404(f"No action {action!r}.")
    role, run, audit_name = handler
    _require(request, place, role, audit_name, qname)
    back = _back(request, place.url("rsmq-queue", qname))
    result = run(request, place, qname)
    if isinstance(result, HttpResponse):
        return result
    if result is not None:  # a form with errors
        return _render_queue(request, place, qname, _query_of(back), status=UNPROCESSABLE, **result)
    if request.htmx:
        return _render_queue(request, place, qname, _query_of(back))
    return redirect(back)


FormErrors = dict[str, forms.Form] | None


MOVE_SUGGESTIONS = 500


def _move_targets(request: HttpRequest, place: Place, qname: str) -> list[str]:
    """Queue names suggested for "move to" (typing any other name works too)."""
    if not can(request.user, Role.OPERATOR):
        return []
    return [q for q in place.rsmq.list_queues() if q != qname][:MOVE_SUGGESTIONS]


def _selected_ids(request: HttpRequest) -> list[str]:
    return [i for i in request.POST.getlist("ids") if v.ID_RE.fullmatch(i)]


def _send(request: HttpRequest, place: Place, qname: str) -> FormErrors:
    form = SendForm(request.POST)
    if not form.is_valid():
        return {"send_form": form}
    body, delay = form.cleaned_data["body"], form.cleaned_data["delay"]

    def work() -> tuple[str, int | None]:
        mid = place.rsmq.send_message(qname, body, delay=delay)
        return f"Sent message {mid}.", 1

    ok = _act(
        request, place, "send", qname, work, params={"delay": delay, "bytes": len(body.encode())}
    )
    return None if ok else {"send_form": form}


def _edit(request: HttpRequest, place: Place, qname: str) -> FormErrors:
    form = QueueAttributesForm(request.POST)
    if not form.is_valid():
        return {"attributes_form": form}
    d = form.cleaned_data

    def work() -> tuple[str, int | None]:
        place.rsmq.set_queue_attributes(qname, vt=d["vt"], delay=d["delay"], maxsize=d["maxsize"])
        return f"Saved: vt {d['vt']} s, delay {d['delay']} s, maxsize {d['maxsize']}.", None

    _act(request, place, "edit_queue", qname, work, params=d)
    return None


def _on_selection(verb: str, action: str, call: Callable[[RedisSMQ, str, list[str]], int]):
    def run(request: HttpRequest, place: Place, qname: str) -> FormErrors:
        ids = _selected_ids(request)
        if not ids:
            messages.error(request, "Select at least one message.")
            return None

        def work() -> tuple[str, int | None]:
            n = call(place.rsmq, qname, ids)
            text = f"{verb.capitalize()} {_plural(n, 'message')}."
            if n < len(ids):
                text += f" {len(ids) - n} had already left the queue."
            return text, n

        _act(request, place, action, qname, work, ids=ids)
        return None

    return run


def _move_selected(request: HttpRequest, place: Place, qname: str) -> FormErrors:
    form = MoveForm(request.POST)
    ids = _selected_ids(request)
    if not form.is_valid():
        return {"move_form": form}
    if not ids:
        messages.error(request, "Select at least one message.")
        return None
    to = form.cleaned_data["to"]

    def work() -> tuple[str, int | None]:
        n = place.rsmq.move_messages(qname, to, ids)
        text = f"Moved {_plural(n, 'message')} to {to}."
        if n < len(ids):
            left = len(ids) - n
            text += f" {left} {'was' if left == 1 else 'were'} gone or too large for {to}."
        return text, n

    _act(request, place, "move", qname, work, ids=ids, params={"to": to})
    return None


def _on_state(verb: str, action: str, call: Callable[[RedisSMQ, str, str], int]):
    def run(request: HttpRequest, place: Place, qname: str) -> FormErrors:
        state = request.POST.get("state", "")
        if state not in LIST_STATES:
            messages.error(request, f"state must be one of {', '.join(LIST_STATES)}.")
            return None
        if action == "delete_all" and request.POST.get("confirm_all") != "yes":
            messages.error(request, "Tick “I mean all of them” to delete every message.")
            return None

        def work() -> tuple[str, int | None]:
            n = call(place.rsmq, qname, state)
            return f"{verb.capitalize()} {_plural(n, 'message')} ({state}).", n

        _act(request, place, action, qname, work, params={"state": state})
        return None

    return run


def _purge(request: HttpRequest, place: Place, qname: str) -> FormErrors:
    form = ConfirmNameForm(request.POST, qname=qname, prefix="purge")
    if not form.is_valid():
        return {"purge_form": form}

    def work() -> tuple[str, int | None]:
        n = place.rsmq.purge_queue(qname)
        return f"Purged {_plural(n, 'message')} from {qname}.", n

    _act(request, place, "purge", qname, work)
    return None


def _delete_queue(request: HttpRequest, place: Place, qname: str) -> HttpResponse | FormErrors:
    form = ConfirmNameForm(request.POST, qname=qname, prefix="delete")
    if not form.is_valid():
        return {"delete_form": form}

    def work() -> tuple[str, int | None]:
        msgs = place.rsmq.get_queue_attributes(qname).msgs
        place.rsmq.delete_queue(qname)
        return f"Deleted queue {qname} and its {_plural(msgs, 'message')}.", msgs

    if not _act(request, place, "delete_queue", qname, work):
        return None
    url = place.url("rsmq-overview")
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


# button value: (role needed, handler, action name in the audit log)
def _policy(request: HttpRequest, place: Place, qname: str) -> FormErrors:
    form = PolicyForm(request.POST)
    if not form.is_valid():
        return {"policy_form": form}
    dlq, maxrc = form.cleaned_data["dlq"], form.cleaned_data["maxrc"]

    def work() -> tuple[str, int | None]:
        if not dlq:
            place.rsmq.clear_dead_letter_policy(qname)
            return "Dead-letter policy removed.", None
        place.rsmq.set_dead_letter_policy(qname, dlq, maxrc)
        return f"Messages received {maxrc} times now go to {dlq}.", None

    if not _act(request, place, "set_policy", qname, work, params={"dlq": dlq, "maxrc": maxrc}):
        return {"policy_form": form}
    return None


def _redrive(request: HttpRequest, place: Place, qname: str) -> FormErrors:
    form = RedriveForm(request.POST)
    if not form.is_valid():
        return {"redrive_form": form}
    to = form.cleaned_data["to"] or None

    def work() -> tuple[str, int | None]:
        n = place.rsmq.redrive(qname, to=to)
        where = to or "the queues they came from"
        if not n:
            return "Nothing to redrive: no message here has a queue to go back to.", 0
        return f"Redrove {_plural(n, 'message')} to {where}.", n

    _act(request, place, "redrive", qname, work, params={"to": to})
    return None


QUEUE_ACTIONS: dict[str, tuple[Role, Callable[..., Any], str]] = {
    "send": (Role.OPERATOR, _send, "send"),
    "requeue": (Role.OPERATOR, _on_selection("requeued", "requeue", RedisSMQ.requeue), "requeue"),
    "delete": (
        Role.OPERATOR, _on_selection("deleted", "delete", RedisSMQ.delete_messages), "delete"
    ),
    "move": (Role.OPERATOR, _move_selected, "move"),
    "requeue_all": (
        Role.ADMIN, _on_state("requeued", "requeue_all", RedisSMQ.requeue_state), "requeue_all"
    ),
    "delete_all": (
        Role.ADMIN, _on_state("deleted", "delete_all", RedisSMQ.delete_state), "delete_all"
    ),
    "edit": (Role.ADMIN, _edit, "edit_queue"),
    "purge": (Role.ADMIN, _purge, "purge"),
    "delete_queue": (Role.ADMIN, _delete_queue, "delete_queue"),
    "policy": (Role.ADMIN, _policy, "set_policy"),
    "redrive": (Role.OPERATOR, _redrive, "redrive"),
}  # fmt: skip


def _message_or_404(place: Place, qname: str, msg_id: str) -> MessageInfo:
    v.qname(qname)
    if not v.ID_RE.fullmatch(msg_id):
        raise Http404("Not a message id.")
    msg = place.rsmq.get_message(qname, msg_id)
    if msg is None:
        raise Http404(f"Message {msg_id} is no longer in queue {qname}.")
    return msg


@login_required
@require_GET
def message_detail(
    request: HttpRequest, conn: str, ns: str, qname: str, msg_id: str
) -> HttpResponse:
    place = _place(conn, ns)
    require(request.user, Role.VIEWER)
    return _render_message(request, place, qname, msg_id)


def _render_message(
    request: HttpRequest,
    place: Place,
    qname: str,
    msg_id: str,
    status: int = 200,
    **form_overrides: forms.Form,
) -> HttpResponse:
    msg = _message_or_404(place, qname, msg_id)
    ctx = _context(
        request,
        place,
        qname=qname,
        msg=msg,
        now=msg.read_at,
        **{"visibility_form": VisibilityForm(initial={"vt": 0}), "move_form": MoveForm()}
        | form_overrides,
        other_queues=_move_targets(request, place, qname),
    )
    return render(request, _template(request, "message.html"), ctx, status=status)


@login_required
@require_POST
def message_action(
    request: HttpRequest, conn: str, ns: str, qname: str, msg_id: str
) -> HttpResponse:
    place = _place(conn, ns)
    action = request.POST.get("action", "")
    if action not in ("requeue", "visibility", "delete", "move"):
        raise Http404(f"No action {action!r}.")
    v.qname(qname)
    if not v.ID_RE.fullmatch(msg_id):
        raise Http404("Not a message id.")
    _require(request, place, Role.OPERATOR, action, qname)
    ids = [msg_id]
    gone = f"Message {msg_id} is no longer in queue {qname}: another consumer deleted it."
    queue_url = place.url("rsmq-queue", qname)

    def done(next_url: str | None = None) -> HttpResponse:
        if next_url:
            if request.htmx:
                response = HttpResponse(status=204)
                response["HX-Redirect"] = next_url
                return response
            return redirect(next_url)
        if request.htmx:
            if place.rsmq.get_message(qname, msg_id) is None:
                return done(queue_url)
            return _render_message(request, place, qname, msg_id)
        return redirect(place.url("rsmq-message", qname, msg_id))

    if action == "requeue":

        def work() -> tuple[str, int | None]:
            n = place.rsmq.requeue(qname, ids)
            return ("Requeued: visible now." if n else gone), n

        _act(request, place, action, qname, work, ids=ids)
        return done(None if place.rsmq.get_message(qname, msg_id) else queue_url)

    if action == "visibility":
        form = VisibilityForm(request.POST)
        if not form.is_valid():
            return _render_message(
                request, place, qname, msg_id, status=UNPROCESSABLE, visibility_form=form
            )
        vt = form.cleaned_data["vt"]

        def work() -> tuple[str, int | None]:
            ok = place.rsmq.change_message_visibility(qname, msg_id, vt)
            return (f"Visible again in {vt} s." if ok else gone), int(ok)

        _act(request, place, action, qname, work, ids=ids, params={"vt": vt})
        return done(None if place.rsmq.get_message(qname, msg_id) else queue_url)

    if action == "delete":

        def work() -> tuple[str, int | None]:
            ok = place.rsmq.delete_message(qname, msg_id)
            return (f"Deleted message {msg_id}." if ok else gone), int(ok)

        _act(request, place, action, qname, work, ids=ids)
        return done(queue_url)

    form = MoveForm(request.POST)
    if not form.is_valid():
        return _render_message(request, place, qname, msg_id, status=UNPROCESSABLE, move_form=form)
    to = form.cleaned_data["to"]

    def work() -> tuple[str, int | None]:
        n = place.rsmq.move_messages(qname, to, ids)
        return (f"Moved to {to}." if n else f"Not moved: gone, or too large for {to}."), n

    moved = _act(request, place, "move", qname, work, ids=ids, params={"to": to})
    if moved and place.rsmq.get_message(to, msg_id):
        return done(place.url("rsmq-message", to, msg_id))
    return done(None if place.rsmq.get_message(qname, msg_id) else queue_url)


# -- audit log and preferences ---------------------------------------------------------


@login_required
@require_GET
def audit_log(request: HttpRequest) -> HttpResponse:
    require(request.user, Role.VIEWER)
    entries = AuditEntry.objects.all()
    filters = {}
    for field in ("username", "queue", "action", "outcome", "connection", "namespace"):
        value = request.GET.get(field, "").strip()
        if value:
            entries = entries.filter(**{field: value})
            filters[field] = value
    page_obj = Paginator(entries, 50).get_page(request.GET.get("page"))
    ctx = _context(
        request,
        None,
        page_obj=page_obj,
        filters=filters,
        actions=AuditEntry.objects.values_list("action", flat=True).distinct().order_by("action"),
        outcomes=AuditEntry.Outcome.choices,
        params=request.GET,
    )
    return render(request, "audit.html", ctx)


@login_required
@require_POST
def set_refresh(request: HttpRequest) -> HttpResponse:
    form = RefreshForm(request.POST)
    if form.is_valid():
        Preference.objects.update_or_create(
            user=request.user, defaults={"refresh_seconds": form.cleaned_data["refresh_seconds"]}
        )
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Refresh"] = "true"
        return response
    return redirect(_back(request, "/"))
