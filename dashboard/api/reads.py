"""The JSON API: the overview's queues and one queue with its snapshot history.

    /api/queues/                     the first connection's first namespace
    /api/queues/<name>/
    /api/c/<conn>/<ns>/queues/       like the pages' /c/<conn>/<ns>/
    /api/c/<conn>/<ns>/queues/<name>/?range=hour|day|week
    /api/…/queues/<name>/failures/[?id=]  why its messages failed (the Failing page's)
    /api/…/queues/<name>/messages/?state=&rc=&search=&where=&older=&younger=&after=&limit=
                                     the messages a filter matches
                                     (dashboard/acting/message_filter.py)

Auth: an API token (any role), RSMQ_METRICS_TOKEN as a bearer token, or a logged-in viewer
(access.callers.reader), within its grants (access/grants.py: a queue out of them is a 404).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.http import HttpRequest, JsonResponse
from ninja import Schema
from pydantic import ConfigDict, Field

from dashboard.access import bodies, grants
from dashboard.access.bodies import access
from dashboard.acting.message_filter import FilterError, body_refusal, checked
from dashboard.display.formatting import iso
from dashboard.models import QueueCondition
from dashboard.places import place as places
from dashboard.places.place import Place
from dashboard.snapshots.history import RANGES, Backlog, current_rates, queue_history
from dashboard.snapshots.rates import Interval
from queues import InvalidArgument
from queues import validation as v
from queues.models import Cursor, FailureState, QueueStats

COUNTS = ("msgs", "visible", "hidden", "inflight", "delayed", "exact", "totalsent",
          "totalrecv", "oldest_age")  # fmt: skip
ATTRIBUTES = ("vt", "delay", "maxsize", "created", "modified")


# -- what each read answers (the OpenAPI document's shapes; the views write the JSON) --
# Extra fields are refused, so a field the JSON has and the schema lacks fails the tests.

ISO = "ISO 8601 UTC, ms (null: not a time)"


class Out(Schema):
    model_config = ConfigDict(extra="forbid")


class Counts(Out):
    msgs: int
    visible: int
    hidden: int
    inflight: int = Field(description="hidden and received at least once")
    delayed: int = Field(description="hidden and never received")
    exact: bool = Field(description="false: in flight / delayed estimated from a sample")
    totalsent: int
    totalrecv: int
    oldest_age: float | None = Field(description="s since the head visible message was sent")


class Attributes(Out):
    vt: int
    delay: int
    maxsize: int
    created: str | None = Field(description=ISO)
    modified: str | None = Field(description=ISO)


class ConditionOut(Out):
    state: str = Field(description=f"its consumers: one of {', '.join(QueueCondition.State)}")
    reasons: list[str] = Field(description="why, in words (the overview's)")
    score: float = Field(description="how urgent: the overview's default order, highest first")
    judged_at: str | None = Field(description=f"the snapshot it was judged at, {ISO}")


class QueueRow(Counts, Attributes):
    name: str
    unreadable: str | None = Field(description="what could not be read of it (counts: 0)")
    send_rate: float | None = Field(description="messages/s over the last interval")
    receive_rate: float | None = Field(description="messages/s over the last interval")
    condition: ConditionOut | None = Field(
        description="as of the last snapshot (dashboard/triage/conditions.py); null: not judged yet"
    )


class Where(Out):
    connection: str
    namespace: str
    now: str | None = Field(description=f"the Redis server's time of the reading, {ISO}")


class QueueList(Where):
    queues: list[QueueRow]


class Point(Out):
    at: str | None = Field(description=ISO)
    msgs: int
    visible: int
    inflight: int
    delayed: int
    oldest_age: float | None


class Rates(Out):
    start: str | None = Field(description=ISO)
    end: str | None = Field(description=ISO)
    sent: int
    received: int
    send_rate: float
    receive_rate: float


class Series(Out):
    range: str = Field(description=f"one of {', '.join(RANGES)}")
    bucket_seconds: float
    backlog: list[Point]
    rates: list[Rates]


class QueueDetail(Where):
    name: str
    unreadable: str | None = Field(description="what could not be read of it (counts: 0)")
    condition: ConditionOut | None = Field(description="as of the last snapshot")
    counts: Counts
    attributes: Attributes
    series: Series


class ErrorLineOut(Out):
    text: str = Field(description="an error line: the failure message's first line")
    count: int = Field(description="the group's messages whose last failure said it")


class FailureGroupOut(Out):
    type: str = Field(description="the exception's type")
    state: FailureState = Field(
        description="retry: failing in the queue; dead: dead-lettered by a policy (in its "
        "dead-letter queue, or in this queue when it is one)"
    )
    queue: str = Field(description="the queue the messages are in")
    count: int
    examples: list[str] = Field(description="a few of their ids")
    first_seen: int | None = Field(description="epoch ms of its first failure (null: unknown)")
    last_seen: int | None = Field(description="epoch ms of its last failure (null: unknown)")
    texts: list[ErrorLineOut] = Field(description="its most frequent error lines")
    other_texts: int = Field(description="its messages with an error line not in texts")


class FailureGroupsOut(Out):
    name: str
    dlq: str | None = Field(description="its dead-letter queue, whose dead groups are read too")
    complete: bool = Field(description="false: the read stopped at its bound (lower bounds)")
    read_at: str | None = Field(description=ISO)
    groups: list[FailureGroupOut]


class FailureOut(Out):
    at: int = Field(description="epoch ms (0: unknown)")
    attempt: int = Field(description="the message's receive count then")
    type: str
    message: str
    trace: list[str]
    note: str | None


class FailureHistoryOut(Out):
    name: str
    id: str
    failures: list[FailureOut]


class MessageRow(Out):
    id: str
    message: str = Field(description="the body, cut to ``preview`` bytes")
    size: int = Field(description="the body's full length in bytes")
    rc: int
    fr: int | None = Field(description="epoch ms of the first receive (null: never)")
    sent: float | None = Field(description="epoch ms, from the id (null: unknown)")
    visible_at: int = Field(description="epoch ms")
    state: str = Field(description="visible, inflight or delayed")
    note: str | None = Field(description="what of it is not RSMQ data, if anything")


class MessagesOut(Out):
    name: str
    filter: dict[str, str] = Field(description="the filter as a URL's query (defaults left out)")
    described: str = Field(description="the filter in words")
    items: list[MessageRow]
    looked: int = Field(description="messages this read looked at")
    at_end: bool = Field(description="true: the state's end was reached")
    next: str | None = Field(description="?after= of the next read (null: at the end)")
    read_at: str | None = Field(description=ISO)


def _fields(s: QueueStats) -> tuple[dict[str, Any], dict[str, Any]]:
    """A queue's counts and attributes, from its one projection (times as ISO 8601)."""
    d = s.as_dict() | {"created": iso(s.created * 1000), "modified": iso(s.modified * 1000)}
    return {k: d[k] for k in COUNTS}, {k: d[k] for k in ATTRIBUTES}


def _rates(rate: Interval | None) -> dict[str, float | None]:
    return {
        "send_rate": rate.send_rate if rate else None,
        "receive_rate": rate.receive_rate if rate else None,
    }


def _where(place: Place, now: int) -> dict[str, Any]:
    return {"connection": place.conn.name, "namespace": place.ns, "now": iso(now)}


def queue_list(request: HttpRequest, place: Place) -> JsonResponse:
    """Every queue (``?q=`` filters by name) with counts, attributes and current rates."""
    search = request.GET.get("q", "").strip().lower()
    names = [
        n for n in grants.visible(request, place, place.rsmq.list_queues()) if search in n.lower()
    ]
    stats = place.rsmq.queue_stats(names)
    now = stats[0].now if stats else round(dt.datetime.now(dt.UTC).timestamp() * 1000)
    rates = current_rates(place.conn.name, place.ns, now) if stats else {}
    judged = _conditions(place, None if len(names) > CONDITIONS_ALL else names)
    queues = []
    for s in stats:
        counts, attributes = _fields(s)
        queues.append(
            {"name": s.qname, "unreadable": s.unreadable, **counts, **attributes,
             **_rates(rates.get(s.qname)), "condition": judged.get(s.qname)}
        )  # fmt: skip
    return JsonResponse({**_where(place, now), "queues": queues})


#: past this many queues a list reads its namespace's conditions whole, not by name
CONDITIONS_ALL = 500


def _conditions(place: Place, names: list[str] | None) -> dict[str, dict[str, Any]]:
    """Each queue's condition as of the last snapshot (``names``: only those)."""
    rows = QueueCondition.objects.filter(connection=place.conn.name, namespace=place.ns)
    if names is not None:
        rows = rows.filter(queue__in=names)
    return {
        q: {"state": state, "reasons": [r for r in reason.split("; ") if r],
            "score": score, "judged_at": iso(at)}
        for q, state, reason, score, at in rows.values_list(
            "queue", "state", "reason", "score", "taken_at"
        ).iterator()
    }  # fmt: skip


def _point(b: Backlog) -> dict[str, Any]:
    return {
        "at": iso(b.at), "msgs": b.msgs, "visible": b.visible, "inflight": b.inflight,
        "delayed": b.delayed, "oldest_age": b.oldest_age,
    }  # fmt: skip


def _interval(i: Interval) -> dict[str, Any]:
    return {
        "start": iso(i.start), "end": iso(i.end), "sent": i.sent, "received": i.received,
        "send_rate": i.send_rate, "receive_rate": i.receive_rate,
    }  # fmt: skip


def queue_detail(request: HttpRequest, place: Place, qname: str) -> JsonResponse:
    """One queue: counts, attributes, and its snapshots over ``?range=`` (default hour)."""
    range_ = request.GET.get("range", "hour")
    if range_ not in RANGES:
        return JsonResponse({"error": f"range must be one of {', '.join(RANGES)}"}, status=400)
    s = places.queue_stats(place, qname)
    counts, attributes = _fields(s)
    history = queue_history(place.conn.name, place.ns, qname, range_, s.now)
    return JsonResponse(
        {
            **_where(place, s.now),
            "name": s.qname,
            "unreadable": s.unreadable,  # what can't be read, if anything (counts: 0)
            "condition": _conditions(place, [s.qname]).get(s.qname),
            "counts": counts,
            "attributes": attributes,
            "series": {
                "range": range_,
                "bucket_seconds": history.bucket / 1000,
                "backlog": [_point(b) for b in history.backlog],
                "rates": [_interval(i) for i in history.rates],
            },
        }
    )


def failing(request: HttpRequest, place: Place, qname: str) -> JsonResponse:
    """``/api/…/queues/<name>/failures/``: the groups; ``?id=`` one message's history."""
    mid = request.GET.get("id")
    if mid is not None:
        try:
            v.message_id(mid)
        except InvalidArgument as e:  # a bad query, not a page that isn't there
            return JsonResponse({"error": str(e)}, status=400)
        failures = place.rsmq.failures(qname, mid)
        shown = access(request, place, qname, mid)
        return JsonResponse(
            {"name": qname, "id": mid, "failures": [shown.failure(f).as_dict() for f in failures]}
        )
    g = place.rsmq.failure_groups(qname)
    return JsonResponse(
        {
            "name": g.qname,
            "dlq": g.dlq,
            "complete": g.complete,
            "read_at": iso(g.now),
            "groups": [x.as_dict() for x in bodies.groups(request, place, g.groups)],
        }  # fmt: skip
    )


MESSAGES_MAX = 500


def messages(request: HttpRequest, place: Place, qname: str) -> JsonResponse:
    """``/api/…/queues/<name>/messages/``: a keyset page of the messages a filter matches
    (the queue page's filter, read by dashboard/acting/message_filter.py: a bad field is a 400
    naming it), within browse's time budget; ``next`` goes on where it stopped."""
    q = request.GET
    try:
        f = checked(q)
    except FilterError as e:
        return JsonResponse({"error": str(e)}, status=400)
    try:
        after = Cursor.decode(q["after"]) if q.get("after") else None
        limit = int(q.get("limit") or 50)
        preview = int(q.get("preview") or 1000)
    except (ValueError, InvalidArgument):
        return JsonResponse(
            {"error": "after must be a next of this read; limit and preview whole numbers"},
            status=400,
        )
    if not 1 <= limit <= MESSAGES_MAX:
        return JsonResponse({"error": f"limit must be from 1 to {MESSAGES_MAX}"}, status=400)
    if not 0 <= preview <= 2**31:
        return JsonResponse({"error": f"preview must be from 0 to {2**31}"}, status=400)
    shown = access(request, place, qname)
    refused = body_refusal(shown, f)
    if refused:
        return JsonResponse({"error": refused}, status=403)
    b = place.rsmq.browse(qname, after=after, limit=limit, preview=preview, **f.browse_kwargs())
    items = [
        {"id": m.id, "message": shown.show(m.message), "size": m.size, "rc": m.rc, "fr": m.fr,
         "sent": m.sent, "visible_at": m.visible_at, "state": m.state, "note": m.note}
        for m in b.items
        if not f.contains or shown.hit(m.message, f.contains)
    ]  # fmt: skip
    return JsonResponse(
        {
            "name": qname,
            "filter": f.query(),
            "described": f.describe(),
            "items": items,
            "looked": b.looked,
            "at_end": b.at_end,
            "next": None if b.at_end or b.resume is None else b.resume.encode(),
            "read_at": iso(b.now),
        }  # fmt: skip
    )
