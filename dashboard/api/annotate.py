"""``POST /api/annotations/`` (and ``/api/c/<conn>/<ns>/annotations/``): a marker on the
timeline — a deploy, a config change — posted by an API token of the operator role or
above (from CI, say), audited as ``annotation_create``. It shows on the incident page
and, at its time, on the charts of its queue, of the queues its pattern matches, or
(neither given) of every queue of the namespace (dashboard/triage/timeline.py)."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja import Router, Schema, Status
from pydantic import Field

from dashboard.access.callers import caller
from dashboard.acting.actions import ANNOTATE
from dashboard.api.calls import Conflict, run
from dashboard.api.routes import register
from dashboard.models import Annotation
from dashboard.places import place as places
from dashboard.places.place import Place
from queues import InvalidArgument
from queues import validation as v

router = Router(tags=["timeline"])

MAX_TEXT = 500
PAST = 366 * 86400  # s: how far back an annotation may be dated
FUTURE = 86400  # s: and ahead (a planned deploy)


class AnnotationIn(Schema):
    text: str = Field(description=f"what happened, 1 to {MAX_TEXT} characters")
    queue: str = Field(default="", description="the queue it concerns (or give pattern)")
    pattern: str = Field(
        default="", description="the queues it concerns, a pattern (orders-*); neither: all"
    )
    at: dt.datetime | None = Field(
        default=None,
        description="when, ISO 8601 (no zone: UTC); default now; within the last 366 days"
        " and the next 24 hours",
    )


class AnnotationOut(Schema):
    id: int
    at: str = Field(description="when, ISO 8601 UTC")
    connection: str
    namespace: str
    queue: str
    pattern: str
    text: str
    created_by: str


class Error(Schema):
    error: str = Field(description="what went wrong, naming the field and its allowed values")


ERRORS: dict[int, type[Schema]] = {
    400: Error, 401: Error, 403: Error, 404: Error, 409: Error, 429: Error
}  # fmt: skip


def _check(body: AnnotationIn, now: float) -> tuple[int, str, str, str]:
    """(at in epoch ms, text, queue, pattern); InvalidArgument naming the field."""
    text = body.text.strip()
    if not 1 <= len(text) <= MAX_TEXT:
        raise InvalidArgument("text", f"text must be 1 to {MAX_TEXT} characters")
    queue, pattern = body.queue.strip(), body.pattern.strip()
    if queue and pattern:
        raise InvalidArgument("queue", "queue or pattern: give one of the two (or neither)")
    if queue:
        v.qname(queue, "queue")
    if len(pattern) > 160:
        raise InvalidArgument("pattern", "pattern must be at most 160 characters")
    if body.at is None:
        return int(now * 1000), text, queue, pattern
    when = body.at if body.at.tzinfo else body.at.replace(tzinfo=dt.UTC)
    seconds = when.timestamp()
    if not now - PAST <= seconds <= now + FUTURE:
        raise InvalidArgument(
            "at", "at must be within the last 366 days and the next 24 hours (ISO 8601)"
        )
    return int(seconds * 1000), text, queue, pattern


def capped(place: Place) -> None:
    """Conflict (409, naming the cap) when the place has RSMQ_ANNOTATIONS_MAX annotations
    dated within the range one can be dated to (the last PAST seconds on): every chart of
    the place reads those of its range, so they stay few; older ones no longer count."""
    cap = int(settings.RSMQ_ANNOTATIONS_MAX)
    since = int((time.time() - PAST) * 1000)
    n = Annotation.objects.filter(
        connection=place.conn.name, namespace=place.ns, at__gte=since
    ).count()
    if n >= cap:
        raise Conflict(
            f"{n:,} annotations on {place.conn.name}/{place.ns} within the last 366 days already,"
            f" the most kept (RSMQ_ANNOTATIONS_MAX, {cap:,}): nothing added"
        )


def _out(a: Annotation) -> dict[str, Any]:
    at = dt.datetime.fromtimestamp(a.at / 1000, tz=dt.UTC)
    return {
        "id": a.pk, "at": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "connection": a.connection, "namespace": a.namespace, "queue": a.queue,
        "pattern": a.pattern, "text": a.text, "created_by": a.created_by,
    }  # fmt: skip


@register(router, "POST", "/annotations/", ANNOTATE, "create_annotation",
          response={201: AnnotationOut, **ERRORS})  # fmt: skip
def create_annotation(
    request: HttpRequest, body: AnnotationIn, conn: str | None = None, ns: str | None = None
) -> Status[dict[str, Any]]:
    """Mark the timeline (operator): ``text``, on ``queue`` or ``pattern`` (or the whole
    namespace), ``at`` a time (default now). 201 with the annotation."""
    place = places.resolve(conn, ns)
    target = body.queue.strip() or body.pattern.strip()
    capped(place)

    def work() -> tuple[Annotation, None]:
        at, text, queue, pattern = _check(body, time.time())
        made = Annotation.objects.create(
            at=at, connection=place.conn.name, namespace=place.ns, queue=queue,
            pattern=pattern, text=text, created_by=caller(request).actor,
        )  # fmt: skip
        return made, None

    params = {"text": body.text[:MAX_TEXT], "pattern": body.pattern[:160]}
    made = run(caller(request), place, target[:160], work, params=params)
    return Status(201, _out(made))
