"""A queue's page "as of" a past time (``?as_of=``, dashboard/triage/as_of.py): its
snapshot then beside its counters now, its condition and reasons then and now, the
condition changes that led there, its flags open and alerts firing then, its owner, and
its charts ending then. A frozen view: no action, no refresh."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpResponse
from django.shortcuts import render
from redis.exceptions import RedisError

from dashboard.models import QueueCondition
from dashboard.places.place import Place
from dashboard.triage import as_of
from dashboard.triage.flags import in_figures
from dashboard.triage.owners import owner_of
from dashboard.views.frozen import start
from dashboard.web.htmx import HtmxHttpRequest
from queues import RsmqError

#: the counts side by side: (label, attribute of as_of.Then and of QueueStats)
COUNTS = (
    ("Messages", "msgs"),
    ("Visible", "visible"),
    ("In flight", "inflight"),
    ("Delayed", "delayed"),
    ("Sent (total)", "totalsent"),
    ("Received (total)", "totalrecv"),
)


def render_queue_as_of(
    request: HtmxHttpRequest,
    place: Place,
    qname: str,
    charts: Callable[[int], dict[str, Any]],
) -> HttpResponse:
    """``charts``: views/queue.py's charts context, as a function of the time they end at."""
    started = start(request, place, "queue_as_of.html", qname=qname)
    if isinstance(started, HttpResponse):
        return started
    ctx, moment, rows = started
    assert moment.taken_at is not None
    conn, ns = place.conn.name, place.ns
    at = moment.taken_at
    then = as_of.queues(conn, ns, rows, at, [qname])
    t = then[0] if then else None
    try:
        found = place.rsmq.queue_stats([qname])
        now = found[0] if found else None
        live_read = True
    except (RsmqError, RedisError):
        now, live_read = None, False
    if t is not None:
        t.now, t.read_now = now, live_read
    then_now = []
    if t is not None:
        read = now if t.delta is not None else None
        for label, key in COUNTS:
            a = getattr(t, key)
            b = getattr(read, key) if read is not None else None
            then_now.append((label, a, b, None if b is None else b - a))
    open_then = as_of.flags_at(conn, ns, [qname], at).get(qname, [])
    ctx.update(
        then=t,
        then_now=then_now,
        now=now,
        live_read=live_read,
        condition_now=QueueCondition.objects.filter(
            connection=conn, namespace=ns, queue=qname
        ).first(),
        changes=as_of.changes(conn, ns, qname, at),
        flags_then=[(f, in_figures(f)) for f in open_then],
        alerts_then=as_of.alerts_at(conn, ns, qname, at),
        owner=owner_of(conn, ns, qname, at),
        **charts(moment.asked),
    )
    return render(request, "queue_as_of.html", ctx)
