"""The incident page: one timeline of operator actions, alert transitions, anomaly flags
and annotations (dashboard/triage/timeline.py) for any time range across queues, filtered by
place, queue or pattern and kind, paginated; exported as CSV or JSON for a postmortem
(streamed, at most ``timeline.EXPORT_MAX`` events)."""

from __future__ import annotations

import csv
import datetime as dt
import json
import time
from collections.abc import Iterator
from itertools import islice
from typing import Any, TypedDict

from django.contrib.auth.decorators import login_required
from django.db.models import Min
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from dashboard.access import grants
from dashboard.access.grants import require
from dashboard.access.roles import Role
from dashboard.models import Snapshot
from dashboard.places.place import configured
from dashboard.triage import as_of, timeline
from dashboard.triage.timeline import KINDS, Filter
from dashboard.views.common import context
from dashboard.views.frozen import frozen
from dashboard.web.htmx import HtmxHttpRequest
from queues import validation as v

PER_PAGE = 50
MAX_PAGE = 200  # a page reads its offset's events first: bounded
RANGES = {
    "15m": 900, "30m": 1800, "1h": 3600, "6h": 6 * 3600, "24h": 86400, "7d": 7 * 86400,
    "30d": 30 * 86400,
}  # fmt: skip
#: what an operator opens the timeline for is what just happened: the last hour, newest first
DEFAULT_RANGE = "1h"
DEFAULT_ORDER = "newest"
MAX_SPAN = 366 * 86400  # s
TIME_FORMAT = "%Y-%m-%dT%H:%M"
CSV_COLUMNS = ("time", "kind", "connection", "namespace", "queue", "text", "who", "ref")


class BadFilter(ValueError):
    """A filter out of its range: a 400 naming the field."""


def _when(field: str, value: str) -> int:
    """``2026-11-25T18:00`` (UTC; seconds allowed) as epoch ms."""
    for fmt in (TIME_FORMAT, TIME_FORMAT + ":%S"):
        try:
            at = dt.datetime.strptime(value, fmt).replace(tzinfo=dt.UTC)
            return int(at.timestamp() * 1000)
        except ValueError:
            continue
    raise BadFilter(f"{field} must be a UTC time like 2026-11-25T18:00, not {value[:40]!r}")


class Shown(TypedDict):
    """What the filter form shows (and a JSON export's ``filter`` says): the fields as
    given, the range or the start and end it stands for (UTC, the inputs' format)."""

    connection: str
    namespace: str
    queue: str
    pattern: str
    kinds: set[str]
    range: str
    order: str
    start: str
    end: str


def parse(params: Any, now_ms: int) -> tuple[Filter, Shown]:
    """The filter the query asks for, and what the form shows; BadFilter if a field is
    out of its range."""
    places = configured()
    conn, ns = params.get("connection", "").strip(), params.get("namespace", "").strip()
    if conn and conn not in {c for c, _ in places}:
        raise BadFilter("connection must be one of the configured connections")
    if ns and (conn, ns) not in places and not (not conn and ns in {n for _, n in places}):
        raise BadFilter("namespace must be a configured namespace of the connection")
    queue = params.get("queue", "").strip()
    if queue:
        try:
            v.qname(queue, "queue")
        except Exception as e:  # noqa: BLE001 - the core's words, as a 400
            raise BadFilter(str(e)) from None
    pattern = params.get("pattern", "").strip()
    if len(pattern) > 160:
        raise BadFilter("pattern must be at most 160 characters")
    if queue and pattern:
        raise BadFilter("queue or pattern: give one of the two")
    kinds = [k for k in params.getlist("kind") if k]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise BadFilter(f"kind must be one of {', '.join(KINDS)}, not {unknown[0][:40]!r}")
    start_s, end_s = params.get("start", "").strip(), params.get("end", "").strip()
    span = params.get("range", "").strip()
    if span and span not in RANGES:
        raise BadFilter(f"range must be one of {', '.join(RANGES)}")
    if start_s or end_s:
        end = _when("end", end_s) if end_s else now_ms
        start = _when("start", start_s) if start_s else end - RANGES[DEFAULT_RANGE] * 1000
        span = ""
    else:
        span = span or DEFAULT_RANGE
        end, start = now_ms, now_ms - RANGES[span] * 1000
    if end < start:
        raise BadFilter("end must be after start")
    if end - start > MAX_SPAN * 1000:
        raise BadFilter("the range (start to end) must be at most 366 days")
    order = params.get("order") or DEFAULT_ORDER
    if order not in ("oldest", "newest"):
        raise BadFilter("order must be oldest or newest")
    f = Filter(
        start, end, conn, ns, queue, pattern, frozenset(kinds or KINDS), order == "newest"
    )  # fmt: skip
    shown = Shown(
        connection=conn, namespace=ns, queue=queue, pattern=pattern, kinds=set(kinds),
        range=span, order=order,
        start=dt.datetime.fromtimestamp(start / 1000, tz=dt.UTC).strftime(TIME_FORMAT),
        end=dt.datetime.fromtimestamp(end / 1000, tz=dt.UTC).strftime(TIME_FORMAT),
    )  # fmt: skip
    return f, shown


def _page_number(value: str | None) -> int:
    try:
        page = int(value or 1)
    except ValueError:
        raise BadFilter(f"page must be a whole number from 1 to {MAX_PAGE}") from None
    if not 1 <= page <= MAX_PAGE:
        raise BadFilter(f"page must be a whole number from 1 to {MAX_PAGE}")
    return page


@login_required
@require_safe
def incidents(request: HtmxHttpRequest) -> HttpResponse | StreamingHttpResponse:
    require(request.user, Role.OBSERVER)
    now_ms = int(time.time() * 1000)
    then: dict[str, Any] = {}
    try:
        if "as_of" in request.GET:  # the timeline up to a past time, frozen there
            moment = _moment(request.GET["as_of"], now_ms)
            then = {"moment": moment, **frozen(request)}
            if moment.problem:
                raise BadFilter(moment.problem)
        f, shown = parse(request.GET, then["moment"].asked if then else now_ms)
        page = _page_number(request.GET.get("page"))
    except BadFilter as e:
        ctx = context(None, error=str(e), shown={}, kinds=KINDS, ranges=RANGES,
                      place_names=grants.places(request), **then)  # fmt: skip
        return render(request, "incidents.html", ctx, status=400)
    fmt = request.GET.get("format", "")
    if fmt == "csv":
        return _csv(request, f)
    if fmt == "json":
        return _json(request, f, shown)
    if fmt:
        ctx = context(None, error="format must be csv or json", shown=shown, kinds=KINDS,
                      ranges=RANGES, place_names=grants.places(request))  # fmt: skip
        return render(request, "incidents.html", ctx, status=400)
    # One more than the page: whether there is a next one.
    rows = list(islice(_events(request, f), (page - 1) * PER_PAGE, page * PER_PAGE + 1))
    query = request.GET.copy()
    query.pop("page", None)
    # the presets' links keep the rest of the filter
    ranged = query.copy()
    for k in ("range", "start", "end"):
        ranged.pop(k, None)
    ctx = context(
        None,
        events=rows[:PER_PAGE],
        has_next=len(rows) > PER_PAGE and page < MAX_PAGE,
        page=page,
        shown=shown,
        kinds=KINDS,
        ranges=RANGES,
        place_names=grants.places(request),
        query=query.urlencode(),
        range_query=ranged.urlencode(),
        now_utc=dt.datetime.fromtimestamp(now_ms / 1000, tz=dt.UTC).strftime(TIME_FORMAT),
        error="",
        **then,
    )
    return render(request, "incidents.html", ctx)


def _events(request: HtmxHttpRequest, f: Filter) -> Iterator[timeline.Event]:
    """The timeline's events the caller may see (grants: its places and queues)."""
    return grants.shown(request, timeline.events(f), lambda e: (e.connection, e.namespace, e.queue))


def _moment(raw: str, now_ms: int) -> as_of.Moment:
    """The time a frozen timeline ends at, and how far back the conditions' history goes
    (the snapshots' retention: the timeline's other events are kept longer)."""
    try:
        asked = as_of.parse(raw)
    except as_of.BadTime as e:
        raise BadFilter(str(e)) from None
    oldest = Snapshot.objects.aggregate(t=Min("taken_at"))["t"]
    problem = f"{as_of.label(asked)} is in the future." if asked > now_ms else ""
    return as_of.Moment(asked, now_ms, None, oldest, problem)


def _name(f: Filter, ext: str) -> str:
    def stamp(ms: int) -> str:
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y%m%dT%H%MZ")

    return f"rsmq-timeline-{stamp(f.start)}-{stamp(f.end)}.{ext}"


def _cell(value: object) -> str:
    """A CSV cell a spreadsheet won't run as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


class _Line:
    """csv.writer's file: hands back each row's text."""

    def write(self, text: str) -> str:
        return text


def _csv(request: HtmxHttpRequest, f: Filter) -> StreamingHttpResponse:
    def rows() -> Iterator[str]:
        writer = csv.writer(_Line())
        yield writer.writerow(CSV_COLUMNS)
        count = 0
        for e in _events(request, f):
            if count == timeline.EXPORT_MAX:
                yield writer.writerow(["# truncated", f"more than {count} events: narrow it"])
                return
            d = e.as_dict()
            yield writer.writerow([_cell(d[c]) for c in CSV_COLUMNS])
            count += 1

    response = StreamingHttpResponse(rows(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_name(f, "csv")}"'
    return response


def _json(request: HtmxHttpRequest, f: Filter, shown: Shown) -> StreamingHttpResponse:
    def body() -> Iterator[str]:
        head = {k: (sorted(v) if isinstance(v, set) else v) for k, v in shown.items()}
        yield '{"filter": ' + json.dumps(head, sort_keys=True) + ', "events": ['
        count = 0
        truncated = False
        for e in _events(request, f):
            if count == timeline.EXPORT_MAX:
                truncated = True
                break
            yield ("\n" if count == 0 else ",\n") + json.dumps(e.as_dict(), ensure_ascii=False)
            count += 1
        yield f'\n], "count": {count}, "truncated": {json.dumps(truncated)}}}\n'

    response = StreamingHttpResponse(body(), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{_name(f, "json")}"'
    return response
