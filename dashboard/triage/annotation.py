"""Annotations: markers on the timeline (a deploy, a config change, "incident opened"),
on a queue, the queues matching a pattern, or (neither) the whole namespace. Checked and
written here once, for the API (``POST /api/annotations/``, api/annotate.py) and the pages
(the incident timeline's and a queue's charts' *Mark an event*, views/annotate.py)."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass

from django.conf import settings

from dashboard.models import Annotation
from queues import InvalidArgument
from queues import validation as v

MAX_TEXT = 500
PAST = 366 * 86400  # s: how far back an annotation may be dated
FUTURE = 86400  # s: and ahead (a planned deploy)


@dataclass(frozen=True, slots=True)
class Checked:
    at: int  # epoch ms
    text: str
    queue: str
    pattern: str


def check(text: str, queue: str, pattern: str, at: dt.datetime | None, now: float) -> Checked:
    """What may be written; InvalidArgument naming the field. ``at`` without a zone is
    UTC; None: ``now`` (epoch s)."""
    text = text.strip()
    if not 1 <= len(text) <= MAX_TEXT:
        raise InvalidArgument("text", f"text must be 1 to {MAX_TEXT} characters")
    queue, pattern = queue.strip(), pattern.strip()
    if queue and pattern:
        raise InvalidArgument("queue", "queue or pattern: give one of the two (or neither)")
    if queue:
        v.qname(queue, "queue")
    if len(pattern) > 160:
        raise InvalidArgument("pattern", "pattern must be at most 160 characters")
    if at is None:
        return Checked(int(now * 1000), text, queue, pattern)
    when = at if at.tzinfo else at.replace(tzinfo=dt.UTC)
    seconds = when.timestamp()
    if not now - PAST <= seconds <= now + FUTURE:
        raise InvalidArgument(
            "at", "at must be within the last 366 days and the next 24 hours (ISO 8601)"
        )
    return Checked(int(seconds * 1000), text, queue, pattern)


class Full(Exception):
    """The place holds RSMQ_ANNOTATIONS_MAX annotations already (the API's 409)."""


def room(conn: str, ns: str) -> None:
    """Full (naming the cap) when the place has RSMQ_ANNOTATIONS_MAX annotations dated
    within the range one can be dated to (the last PAST seconds on): every chart of the
    place reads those of its range, so they stay few; older ones no longer count."""
    cap = int(settings.RSMQ_ANNOTATIONS_MAX)
    since = int((time.time() - PAST) * 1000)
    n = Annotation.objects.filter(connection=conn, namespace=ns, at__gte=since).count()
    if n >= cap:
        raise Full(
            f"{n:,} annotations on {conn}/{ns} within the last 366 days already,"
            f" the most kept (RSMQ_ANNOTATIONS_MAX, {cap:,}): nothing added"
        )


def create(conn: str, ns: str, c: Checked, by: str) -> Annotation:
    return Annotation.objects.create(
        at=c.at, connection=conn, namespace=ns, queue=c.queue, pattern=c.pattern, text=c.text,
        created_by=by,
    )  # fmt: skip
