"""Mark an event on the timeline from the pages (operator): *Mark an event* on the incident
timeline (any configured place, a queue, a pattern or the whole namespace) and under a
queue's charts (that queue, at a time a click on a chart chose, or now). Checked and
written by dashboard/triage/annotation.py, as the API's ``POST /api/annotations/`` is,
and audited as ``annotation_create`` like it; the page it came from is shown again."""

from __future__ import annotations

import datetime as dt
import time

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from dashboard.access.grants import EVERY
from dashboard.access.guard import place_for
from dashboard.acting.actions import ANNOTATE
from dashboard.triage import annotation
from dashboard.views.actions import Posted
from dashboard.views.common import back
from dashboard.web.htmx import HtmxHttpRequest
from queues import InvalidArgument

TIME_FORMATS = ("%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S")


def _at(raw: str) -> dt.datetime | None:
    """A datetime-local field's value, UTC; "" is now; InvalidArgument if not a time."""
    raw = raw.strip()
    if not raw:
        return None
    for fmt in TIME_FORMATS:
        try:
            return dt.datetime.strptime(raw, fmt).replace(tzinfo=dt.UTC)
        except ValueError:
            continue
    raise InvalidArgument("at", f"at must be a UTC time like 2026-11-25T18:00, not {raw[:40]!r}")


def _mark(post: Posted, data: QueryDict, queue: str, pattern: str) -> None:
    try:
        checked = annotation.check(
            data.get("text", ""), queue, pattern, _at(data.get("at", "")), time.time()
        )
        annotation.room(post.place.conn.name, post.place.ns)
    except (InvalidArgument, annotation.Full) as e:
        post.refuse(str(e))  # said, and audited as refused input
        return

    def work() -> tuple[str, int | None]:
        annotation.create(
            post.place.conn.name, post.place.ns, checked, post.request.user.get_username()
        )
        where = checked.queue or checked.pattern or f"every queue of {post.place.ns}"
        return f"Marked the timeline of {where}: {checked.text}", None

    params = {"text": data.get("text", "")[: annotation.MAX_TEXT], "pattern": pattern[:160]}
    post.act(work, params=params)


@login_required
@require_POST
def annotate(request: HtmxHttpRequest) -> HttpResponse:
    """The incident timeline's *Mark an event*."""
    data = request.POST
    # the form's one choice of place: "<connection>/<namespace>" (a connection is a slug)
    conn, _, ns = data.get("place", "").partition("/")
    queue, pattern = data.get("queue", "").strip(), data.get("pattern", "").strip()
    target = (queue or pattern)[:160]
    # the whole namespace's mark: the role at every queue of it (grants on *)
    place = place_for(request, conn, ns, ANNOTATE.role, ANNOTATE.audit_name, target or EVERY)
    _mark(Posted(request, place, target, ANNOTATE.audit_name), data, queue, pattern)
    return redirect(back(request, reverse("rsmq-incidents")))


@login_required
@require_POST
def queue_annotate(request: HtmxHttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    """*Mark an event* under a queue's charts: on that queue."""
    place = place_for(request, conn, ns, ANNOTATE.role, ANNOTATE.audit_name, qname)
    _mark(Posted(request, place, qname, ANNOTATE.audit_name), request.POST, qname, "")
    return redirect(back(request, place.url("rsmq-queue", qname)) + "#charts")
