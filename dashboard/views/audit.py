"""The audit log's page: every mutating action, filtered by who, where, what and when."""

from __future__ import annotations

import datetime as dt
import difflib
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q, QuerySet
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from dashboard.access import grants
from dashboard.access.grants import require
from dashboard.access.roles import Role
from dashboard.audit import drain as audit_drain
from dashboard.audit.log import AUDIT_BODY_BYTES
from dashboard.models import AuditEntry
from dashboard.places.place import configured
from dashboard.templatetags.console import pretty_body
from dashboard.views.common import context
from dashboard.web.htmx import HtmxHttpRequest

FILTERS = ("username", "queue", "action", "outcome", "connection", "namespace")
#: the time range's fields (UTC, as the datetime-local inputs send them), and what each
#: one's precision adds to make "to" take in the whole minute or second it names
TIME_FIELDS = ("from", "to")
TIME_FORMATS = (
    ("%Y-%m-%dT%H:%M", dt.timedelta(minutes=1)),
    ("%Y-%m-%dT%H:%M:%S", dt.timedelta(seconds=1)),
)
EARLIEST, LATEST = dt.datetime(2000, 1, 1, tzinfo=dt.UTC), dt.datetime(9999, 1, 1, tzinfo=dt.UTC)


class BadFilter(ValueError):
    """A filter the log can't read: a 400 naming the field and what it takes."""


def _time(field: str, value: str) -> tuple[dt.datetime, dt.timedelta]:
    """``2026-11-25T18:00`` (UTC; seconds allowed) and the span its precision names."""
    for fmt, span in TIME_FORMATS:
        try:
            at = dt.datetime.strptime(value, fmt).replace(tzinfo=dt.UTC)
        except ValueError:
            continue
        if EARLIEST <= at < LATEST:
            return at, span
    raise BadFilter(
        f"{field} must be a UTC time like 2026-11-25T18:00 (seconds allowed) from 2000 on,"
        f" not {value[:40]!r}"
    )


def time_range(
    params: Any, entries: QuerySet[AuditEntry]
) -> tuple[QuerySet[AuditEntry], dict[str, str]]:
    """The entries from ``from`` (inclusive) to the end of the minute or second ``to``
    names; BadFilter if either can't be read or ``to`` is before ``from``."""
    shown = {f: params.get(f, "").strip() for f in TIME_FIELDS}
    start = _time("from", shown["from"])[0] if shown["from"] else None
    if shown["to"]:
        at, span = _time("to", shown["to"])
        if start is not None and at < start:
            raise BadFilter("to must not be before from")
        entries = entries.filter(at__lt=at + span)
    if start is not None:
        entries = entries.filter(at__gte=start)
    return entries, {f: value for f, value in shown.items() if value}


@login_required
@require_safe
def audit_log(request: HtmxHttpRequest) -> HttpResponse:
    # The log spans every place, so there is no place to resolve: only the role.
    require(request.user, Role.VIEWER)
    # The API's records still in Redis are moved in first; what can't be yet is counted.
    audit_drain.drain()
    pending = audit_drain.pending()
    # each row's Undo, if its action kept one (dashboard/acting/undo.py): in the same query
    entries = in_sight(request, AuditEntry.objects.select_related("undo"))
    filters = {}
    for field in FILTERS:
        value = request.GET.get(field, "").strip()
        if value:
            entries = entries.filter(**{field: value})
            filters[field] = value
    error, status = "", 200
    try:
        entries, when = time_range(request.GET, entries)
        filters.update(when)
    except BadFilter as bad:
        error, status = str(bad), 400
        entries = AuditEntry.objects.none()
        filters.update({f: request.GET.get(f, "").strip() for f in TIME_FIELDS})
    page_obj = Paginator(entries, 50).get_page(request.GET.get("page"))
    for row in page_obj.object_list:
        row.body_diff = body_diff(row.params)
    ctx = context(
        None,
        page_obj=page_obj,
        filters=filters,
        error=error,
        actions=AuditEntry.objects.values_list("action", flat=True).distinct().order_by("action"),
        outcomes=AuditEntry.Outcome.choices,
        params=request.GET,
        pending=pending,
    )
    return render(request, "audit.html", ctx, status=status)


def in_sight(request: HtmxHttpRequest, rows: QuerySet[AuditEntry]) -> QuerySet[AuditEntry]:
    """The rows about queues the caller may see: every row for one who sees every queue;
    else the rows of the queues (by name, of each place) its grants cover — none about
    the console as a whole (grants, tokens)."""
    scope = grants.scope_of(request)
    if scope.overall > Role.NONE:
        return rows
    where = Q(pk__in=[])
    for conn, ns in configured():
        if scope.role_in(conn, ns) == Role.NONE:
            continue
        here = Q(connection=conn, namespace=ns)
        if not scope.whole(conn, ns):
            named = AuditEntry.objects.filter(here).exclude(queue="")
            names = named.values_list("queue", flat=True).distinct()
            here &= Q(queue__in=[q for q in names if scope.shows(conn, ns, q)])
        where |= here
    return rows.filter(where)


#: lines of an edit and re-send's difference the audit page shows (the rest: counted)
DIFF_LINES = 200


def body_diff(params: Any) -> list[tuple[str, str]] | None:
    """An edit and re-send's two bodies (``params["bodies"]``, audit/log.py's resend_bodies) as a
    unified difference — (kind, line): kind "add", "del", "hunk" or "" — JSON bodies
    pretty-printed first, so a re-indented body differs only where its values do. None:
    the row keeps no bodies. The template escapes every line."""
    bodies = params.get("bodies") if isinstance(params, dict) else None
    if not isinstance(bodies, dict):
        return None
    texts = []
    for side in ("before", "after"):
        kept = bodies.get(side)
        text = kept.get("text") if isinstance(kept, dict) else None
        texts.append(pretty_body(text) if isinstance(text, str) else "")
    lines = list(
        difflib.unified_diff(
            texts[0].splitlines(), texts[1].splitlines(), "before", "after", lineterm="", n=2
        )
    )
    out: list[tuple[str, str]] = []
    for line in lines[:DIFF_LINES]:
        if line.startswith(("---", "+++")):
            kind = "hunk"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = ""
        out.append((kind, line))
    if len(lines) > DIFF_LINES:
        out.append(("hunk", f"… {len(lines) - DIFF_LINES} more lines"))
    if not lines:
        out.append(("", "(the bodies are the same)"))
    for side in ("before", "after"):
        kept = bodies.get(side)
        if isinstance(kept, dict) and kept.get("cut"):
            size = kept.get("bytes", 0)
            out.append(("hunk", f"({side}: {size} bytes, only the first {AUDIT_BODY_BYTES} kept)"))
        if isinstance(kept, dict) and kept.get("text") is None:
            out.append(("hunk", f"({side}: the message was gone, its body unknown)"))
    return out
