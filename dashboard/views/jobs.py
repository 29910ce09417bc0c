"""Act on every match: start a job (its count), its page (progress polled by htmx, the
typed confirmation stating the count), and its controls (confirm, pause, resume,
cancel). The work is dashboard/acting/jobs.py's, in Celery."""

from __future__ import annotations

import math
import time

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from dashboard.access.bodies import access
from dashboard.access.guard import authorize, destination, may_act, place_for
from dashboard.access.roles import Role
from dashboard.acting import jobs
from dashboard.acting import undo as undos
from dashboard.acting.message_filter import body_refusal, checked
from dashboard.audit import log as audit
from dashboard.models import AuditEntry, BulkJob
from dashboard.places.place import Place, queue_stats
from dashboard.views.common import UNPROCESSABLE, context, go
from dashboard.web.htmx import HtmxHttpRequest
from queues import pacing

BAD_REQUEST = 400
CONFLICT = 409  # a cap on live jobs reached
FORBIDDEN = 403  # a filter on what the caller may not read
VERBS = ("confirm", "pause", "resume", "cancel")


def _url(place: Place, job: BulkJob) -> str:
    return reverse("rsmq-job", args=(place.conn.name, place.ns, job.queue, job.pk))


def _role(place: Place, job: BulkJob) -> Role:
    dead = job.kind == "redrive" and bool(place.rsmq.dead_letter_sources(job.queue))
    return jobs.role_for(job.kind, checked(job.filter), dead)


@login_required
@require_POST
def job_start(request: HtmxHttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    kind = request.POST.get("kind", "")
    name = jobs.AUDIT.get(kind, "act_on_matches")
    place = place_for(request, conn, ns, Role.OPERATOR, name, qname)
    stats = queue_stats(place, qname)
    try:
        kind, f, plan = jobs.read_request(request.POST, qname)
    except jobs.JobError as e:
        audit.record(request, place, name, AuditEntry.Outcome.INVALID, qname, detail=str(e))
        ctx = context(place, qname=qname, stats=stats, error=str(e), field=e.field, job=None)
        return render(request, "job.html", ctx, status=BAD_REQUEST)
    dead = kind == "redrive" and bool(place.rsmq.dead_letter_sources(qname))
    authorize(request, place, jobs.role_for(kind, f, dead), name, qname)
    refused = body_refusal(access(request, place, qname), f, strict=True)
    if refused:  # its count would tell what a masked part holds
        audit.record(request, place, name, AuditEntry.Outcome.DENIED, qname, detail=refused)
        ctx = context(place, qname=qname, stats=stats, error=refused, field="search", job=None)
        return render(request, "job.html", ctx, status=FORBIDDEN)
    if kind in jobs.MOVING:
        destination(request, place, plan.to)
    try:
        job = jobs.create(request, place, qname, request.POST)
    except jobs.JobLimit as e:
        audit.record(request, place, name, AuditEntry.Outcome.INVALID, qname, detail=str(e))
        ctx = context(place, qname=qname, stats=stats, error=str(e), field=e.field, job=None)
        return render(request, "job.html", ctx, status=CONFLICT)
    return go(request, _url(place, job))


def _job(place: Place, qname: str, pk: int) -> BulkJob:
    return get_object_or_404(
        BulkJob, pk=pk, connection=place.conn.name, namespace=place.ns, queue=qname
    )


def _page(
    request: HtmxHttpRequest, place: Place, job: BulkJob, error: str = "", status: int = 200
) -> HttpResponse:
    job.refresh_from_db()
    may = may_act(request, place, _role(place, job), job.queue)
    ctx = context(
        place, qname=job.queue, job=job, job_url=_url(place, job), may_act=may,
        what=jobs.describe(job), outcome=jobs.outcome_text(job), error=error,
        percent=int(100 * job.done / job.matched) if job.matched else 100,
        # a canary's watch, counted down at each poll (the page polls every second)
        watch_left=(
            max(0, math.ceil((job.phase_until - time.time() * 1000) / 1000))
            if job.phase == "watching" and job.phase_until
            else None
        ),
        undo=jobs.undo_of(job), undo_hours=undos.hours(),
        # a delete, move or redrive keeps what it removes for an Undo when it fits
        # RSMQ_UNDO_MAX_MB: the confirmation says "cannot be undone" when not
        undoable=(
            job.state == BulkJob.State.COUNTED and job.kind in pacing.REMOVING
            and _fits(place, job.queue)
        ) or (job.kind in pacing.RESCHEDULING and undos.times_fit(job.matched)),
    )  # fmt: skip
    polled = request.htmx and request.method == "GET" and request.htmx.target == "job-progress"
    return render(request, "job.html#progress" if polled else "job.html", ctx, status=status)


def _fits(place: Place, qname: str) -> bool:
    """Whether the whole queue (a bound for any of its matches) fits RSMQ_UNDO_MAX_MB; a
    queue gone since the count: no (the page still shows, the run will say why)."""
    found = place.rsmq.queue_stats([qname])
    return undos.fits(place, qname, found[0] if found else None)


@login_required
@require_safe
def job_page(request: HtmxHttpRequest, conn: str, ns: str, qname: str, pk: int) -> HttpResponse:
    place = place_for(request, conn, ns, queue=qname)
    return _page(request, place, _job(place, qname, pk))


@login_required
@require_POST
def job_control(
    request: HtmxHttpRequest, conn: str, ns: str, qname: str, pk: int, verb: str
) -> HttpResponse:
    if verb not in VERBS:
        raise Http404(f"No job action {verb!r}.")
    place = place_for(request, conn, ns, queue=qname)
    job = _job(place, qname, pk)
    authorize(request, place, _role(place, job), jobs.AUDIT[job.kind], qname)
    try:
        if verb == "confirm":
            jobs.confirm(request, place, job, request.POST.get("confirm", ""))
        else:
            jobs.control(job, verb)
    except jobs.JobError as e:
        # htmx swaps a form's errors in when they come as a 422 (base.html)
        status = UNPROCESSABLE if request.htmx else BAD_REQUEST
        return _page(request, place, job, error=str(e), status=status)
    return go(request, _url(place, job))
