"""The audit log's page: every mutating action, filtered by who, where, what and when;
and the same rows as JSON Lines (``audit_export``), for a SIEM or a postmortem."""

from __future__ import annotations

import datetime as dt
import difflib
import json
from collections.abc import Iterator
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from dashboard.access import bodies, grants
from dashboard.access.bodies import Bodies, Level
from dashboard.access.grants import require
from dashboard.access.roles import Role
from dashboard.acting.exports import EXPORT_CHUNK, JSONL, Busy, Held
from dashboard.audit import drain as audit_drain
from dashboard.audit import log as audit
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


def filtered(request: HttpRequest) -> tuple[QuerySet[AuditEntry], dict[str, str]]:
    """The rows the caller may see (``in_sight``) that the filters name, and the filters
    as given; BadFilter if the time range can't be read."""
    params = request.GET
    entries = in_sight(request, AuditEntry.objects.all())
    filters = {}
    for field in FILTERS:
        value = params.get(field, "").strip()
        if value:
            entries = entries.filter(**{field: value})
            filters[field] = value
    entries, when = time_range(params, entries)
    return entries, filters | when


@login_required
@require_safe
def audit_log(request: HtmxHttpRequest) -> HttpResponse:
    # The log spans every place, so there is no place to resolve: only the role.
    require(request.user, Role.OBSERVER)
    # The API's records still in Redis are moved in first; what can't be yet is counted.
    audit_drain.drain()
    pending = audit_drain.pending()
    error, status = "", 200
    try:
        entries, filters = filtered(request)
    except BadFilter as bad:
        error, status = str(bad), 400
        entries = AuditEntry.objects.none()
        filters = {f: request.GET.get(f, "").strip() for f in (*FILTERS, *TIME_FIELDS)}
        filters = {f: value for f, value in filters.items() if value}
    # each row's Undo, if its action kept one (dashboard/acting/undo.py): in the same query
    page_obj = Paginator(entries.select_related("undo"), 50).get_page(request.GET.get("page"))
    masked = Masked(request)
    for row in page_obj.object_list:
        row.params = masked.params(row)
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


def kept_shown(shown: Bodies, params: Any) -> Any:
    """A row's params with the bodies it keeps (an edit and re-send's) as the reader may
    read that queue's bodies; an observer's: none."""
    kept = params.get("bodies") if isinstance(params, dict) else None
    if not isinstance(kept, dict) or shown.level == Level.CLEAR:
        return params
    if shown.hidden:
        return {k: v for k, v in params.items() if k != "bodies"}
    sides = {}
    for side, body in kept.items():
        if isinstance(body, dict) and isinstance(body.get("text"), str):
            body = {**body, "text": shown.show(body["text"])}
        sides[side] = body
    return {**params, "bodies": sides}


class Masked:
    """Rows' params as the request's caller may read them (``kept_shown``), the access to
    each queue's bodies asked once per queue: the page and the export alike."""

    def __init__(self, request: HttpRequest) -> None:
        self.request = request
        self.seen: dict[tuple[str, str, str], Bodies] = {}

    def params(self, row: AuditEntry) -> Any:
        where = (row.connection, row.namespace, row.queue)
        if where not in self.seen:  # a row keeps bodies of its queue: read as that queue's
            self.seen[where] = bodies.at(self.request, *where)
        return kept_shown(self.seen[where], row.params)


#: rows one query of an export reads (a row keeps at most two 64 KB bodies)
EXPORT_ROWS = 50


def as_line(row: AuditEntry, params: Any) -> bytes:
    return json.dumps({
        "id": row.pk, "at": row.at.isoformat(), "username": row.username,
        "connection": row.connection, "namespace": row.namespace, "queue": row.queue,
        "action": row.action, "outcome": row.outcome, "ids": row.ids, "count": row.count,
        "params": params, "detail": row.detail,
    }).encode() + b"\n"  # fmt: skip


def export_pieces(entries: QuerySet[AuditEntry], masked: Masked) -> Iterator[bytes]:
    """The rows newest first, as JSON Lines in pieces of about EXPORT_CHUNK bytes, their
    kept bodies as the page shows them (``masked``); each query reads EXPORT_ROWS rows
    after the last one sent (no cursor held open while a client takes its time)."""
    newest_first = entries.order_by("-at", "-id")
    piece: list[bytes] = []
    size = 0
    last: AuditEntry | None = None
    while True:
        after = newest_first
        if last is not None:
            after = after.filter(Q(at__lt=last.at) | Q(at=last.at, id__lt=last.pk))
        rows = list(after[:EXPORT_ROWS])
        for row in rows:
            piece.append(line := as_line(row, masked.params(row)))
            size += len(line)
            if size >= EXPORT_CHUNK:
                yield b"".join(piece)
                piece, size = [], 0
        if len(rows) < EXPORT_ROWS:
            break
        last = rows[-1]
    if piece:
        yield b"".join(piece)


@login_required
@require_safe
def audit_export(request: HtmxHttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The rows the page's filters name, as JSON Lines, newest first; the export is
    audited itself (``audit_export``, with its filters)."""
    require(request.user, Role.OBSERVER)
    audit_drain.drain()
    try:
        entries, filters = filtered(request)
    except BadFilter as bad:
        return JsonResponse({"error": str(bad)}, status=400)
    try:
        pieces = Held(export_pieces(entries, Masked(request)))
    except Busy as busy:
        response = JsonResponse({"error": str(busy)}, status=503)
        response["Retry-After"] = str(busy.retry_after)
        return response
    audit.write(None, "audit_export", AuditEntry.Outcome.OK, user=request.user, params=filters)
    streamed = StreamingHttpResponse(pieces, content_type=JSONL)
    streamed["Content-Disposition"] = 'attachment; filename="audit.jsonl"'
    streamed["Cache-Control"] = "no-store"
    return streamed


def in_sight(request: HttpRequest, rows: QuerySet[AuditEntry]) -> QuerySet[AuditEntry]:
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
