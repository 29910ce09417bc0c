"""``POST /api/annotations/`` (and ``/api/c/<conn>/<ns>/annotations/``): a marker on the
timeline — a deploy, a config change — posted by an API token of the operator role or
above (from CI, say), audited as ``annotation_create``. It shows on the incident page
and, at its time, on the charts of its queue, of the queues its pattern matches, or
(neither given) of every queue of the namespace (dashboard/triage/timeline.py)."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema, Status
from pydantic import Field

from dashboard.access.callers import Refused, caller
from dashboard.access.grants import EVERY, refusal
from dashboard.access.guard import held_at
from dashboard.acting.actions import ANNOTATE
from dashboard.api.calls import Conflict, run
from dashboard.api.routes import register
from dashboard.models import Annotation
from dashboard.places import place as places
from dashboard.triage import annotation

router = Router(tags=["timeline"])

MAX_TEXT = annotation.MAX_TEXT


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
    # the whole namespace's mark (no target): the role at every queue of it (grants on *)
    held = held_at(request, place.conn.name, place.ns, target[:160] or EVERY)
    reason = refusal(held, ANNOTATE.role)
    if reason:
        raise Refused(403, reason, ANNOTATE, caller(request).actor)
    try:
        annotation.room(place.conn.name, place.ns)
    except annotation.Full as e:
        raise Conflict(str(e)) from None

    def work() -> tuple[Annotation, None]:
        checked = annotation.check(body.text, body.queue, body.pattern, body.at, time.time())
        made = annotation.create(place.conn.name, place.ns, checked, caller(request).actor)
        return made, None

    params = {"text": body.text[:MAX_TEXT], "pattern": body.pattern[:160]}
    made = run(caller(request), place, target[:160], work, params=params)
    return Status(201, _out(made))
