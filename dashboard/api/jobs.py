"""Act on every match, for machines: start a job (it counts), read it (its count and
progress), confirm it with the queue's name, pause / resume / cancel it. The same jobs
as the console's (dashboard/acting/jobs.py: a Celery task runs them), at the same roles: a
filter's matches are the operator's, every message of a state the admin's (a redrive:
the operator's from a dead-letter queue)."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest
from ninja import Schema, Status
from pydantic import Field

from dashboard.access.bodies import access
from dashboard.access.callers import Refused, caller
from dashboard.access.grants import refusal
from dashboard.access.guard import destination, held_at
from dashboard.access.roles import Action, Role
from dashboard.acting import jobs
from dashboard.acting.message_filter import RC_MAX, body_refusal, checked
from dashboard.api.bodies import Known
from dashboard.api.calls import BadInput, Conflict
from dashboard.api.native import ERRORS, both
from dashboard.audit import log as audit
from dashboard.models import AuditEntry, BulkJob
from dashboard.places import place as places
from dashboard.places.place import Place
from queues import validation as v
from queues.pacing import RATE_MAX, WATCH_MAX

#: the least role a job takes (its own, the operator's or the admin's, is checked after)
JOB = Action(Role.OPERATOR, "act_on_matches")


class JobIn(Known):
    kind: str = Field(description=f"one of {', '.join(jobs.KINDS)}")
    state: str = Field("all", description="the filter's state: all, visible, hidden, ...")
    rc: int = Field(0, description=f"the filter: received at least this often, 0 to {RC_MAX}")
    search: str = Field("", description="the filter: the body contains this text")
    where: str = Field("", description="the filter: JSON fields, e.g. amount > 100 (console.md)")
    older: int = Field(0, description="the filter: sent more than this many minutes ago")
    younger: int = Field(0, description="the filter: sent less than this many minutes ago")
    error: str = Field("", description="the filter: the last recorded failure's type, exactly")
    error_text: str = Field("", description="the filter: its error line says this text")
    attempt: int = Field(0, description="the filter: it failed last at this attempt or later")
    to: str | None = Field(None, description="move: the queue they go to; redrive: instead")
    vt: int | None = Field(None, description=f"visibility: seconds, 0 to {v.MAX_SECONDS}")
    keep_counts: bool = Field(False, description="move, redrive: keep their receive count")
    rate: float | None = Field(None, description=f"at most this many a second, to {RATE_MAX}")
    canary: int = Field(0, description="move, redrive: the first N, then watched")
    watch: float = Field(0, description=f"seconds the canary is watched, to {WATCH_MAX}")
    max_bounce: float = Field(0, description="stop if more than this % of the canary came back")
    due_from: int | str | None = Field(
        None, description="deliver, shift, spread: the delayed messages due at or after this "
        "(epoch ms, or ISO 8601: UTC unless it says otherwise)",
    )  # fmt: skip
    due_until: int | str | None = Field(None, description="... and before this")
    shift: str | float | None = Field(
        None, description="shift: by this long, later (a duration: 90, 30m, 2h; -30m: earlier)"
    )
    spread_from: int | str | None = Field(
        None, description="spread: evenly over [spread_from, spread_until), in their order"
    )
    spread_until: int | str | None = Field(None, description="... and the window's end")


class ConfirmIn(Known):
    confirm: str = Field("", description="confirm: the queue's name, exactly")


class JobOut(Schema):
    id: int
    kind: str
    queue: str
    filter: dict[str, str] = Field(description="the filter, as the queue page's URL query")
    params: dict[str, Any]
    state: str = Field(description="counting, counted, running, paused, done, cancelled, "
                       "stopped (the canary came back), failed")  # fmt: skip
    phase: str
    matched: int = Field(description="the count (so far, while counting)")
    done: int
    changed: int = Field(description="changed since they were read: left alone")
    skipped: int = Field(description="too large for the destination, or no queue to go to")
    canary: int
    bounced: int = Field(description="canary messages that came back")
    what: str = Field(description="what it does, in words (the confirmation's)")
    note: str
    by: str
    undo: str | None = Field(
        description="once it ended having kept what it changed: the token to POST "
        "/api/undo/{token}/ (an admin's) to put it back, exactly; else null"
    )


def _out(job: BulkJob) -> dict[str, Any]:
    job.refresh_from_db()
    undo = jobs.undo_of(job)
    return {
        "id": job.pk, "kind": job.kind, "queue": job.queue, "filter": job.filter,
        "params": job.params, "state": job.state, "phase": job.phase, "matched": job.matched,
        "done": job.done, "changed": job.changed, "skipped": job.skipped,
        "canary": job.canary, "bounced": job.bounced, "what": jobs.describe(job),
        "note": job.note, "by": job.username, "undo": undo.token if undo else None,
    }  # fmt: skip


def _allow(request: HttpRequest, place: Place, kind: str, needed: Role, qname: str) -> None:
    """The token's role, for this job's kind (what JOB's check could not know): a refusal
    is audited under the job's own name."""
    reason = refusal(held_at(request, place.conn.name, place.ns, qname), needed)
    if reason:
        raise Refused(403, reason, Action(needed, jobs.AUDIT.get(kind, JOB.audit_name)))


def _bad(e: jobs.JobError, audited: bool = False) -> BadInput:
    """``audited``: its row is written (no refusal row)."""
    text = str(e)
    bad = BadInput(text if text.startswith(e.field) else f"{e.field}: {text}")
    bad.audited = audited  # type: ignore[attr-defined]
    return bad


@both("POST", "/queues/{qname}/jobs/", JOB, "job_start", response={201: JobOut, **ERRORS})
def job_start(
    request: HttpRequest, qname: str, body: JobIn, conn: str | None = None, ns: str | None = None
) -> Status[dict[str, Any]]:
    """Start a job on every message the filter matches: it counts them first (``state``
    counting, then counted); nothing changes until it is confirmed."""
    place = places.resolve(conn, ns)
    places.queue_stats(place, qname)
    data = body.model_dump()
    try:
        kind, f, plan = jobs.read_request(data, qname)
    except jobs.JobError as e:
        audit.write(
            place, jobs.AUDIT.get(data["kind"], JOB.audit_name), AuditEntry.Outcome.INVALID,
            actor=caller(request).actor, queue=qname, detail=str(e),
        )  # fmt: skip
        raise _bad(e, audited=True) from None
    dead = kind == "redrive" and bool(place.rsmq.dead_letter_sources(qname))
    _allow(request, place, kind, jobs.role_for(kind, f, dead), qname)
    refused = body_refusal(access(request, place, qname), f, strict=True)
    if refused:  # its count would tell what a masked part holds
        raise Refused(403, refused, Action(JOB.role, jobs.AUDIT.get(kind, JOB.audit_name)))
    if kind in jobs.MOVING:
        destination(request, place, plan.to)
    try:
        job = jobs.create(request, place, qname, data, actor=caller(request).actor)
    except jobs.JobLimit as e:
        audit.write(
            place, jobs.AUDIT[kind], AuditEntry.Outcome.INVALID, actor=caller(request).actor,
            queue=qname, detail=str(e),
        )  # fmt: skip
        conflict = Conflict(str(e))
        conflict.audited = True  # type: ignore[attr-defined]
        raise conflict from None
    return Status(201, _out(job))


def _job(place: Place, qname: str, pk: int) -> BulkJob:
    try:
        return BulkJob.objects.get(
            pk=pk, connection=place.conn.name, namespace=place.ns, queue=qname
        )
    except BulkJob.DoesNotExist:
        raise Http404(f"No job {pk} on queue {qname!r}.") from None


@both(["GET", "HEAD"], "/queues/{qname}/jobs/{pk}/", None, "job_read", tags=["read"],
      response={200: JobOut, **ERRORS})  # fmt: skip
def job_read(
    request: HttpRequest, qname: str, pk: int, conn: str | None = None, ns: str | None = None
) -> dict[str, Any]:
    """A job: its count, state and progress (poll it)."""
    return _out(_job(places.resolve(conn, ns), qname, pk))


@both("POST", "/queues/{qname}/jobs/{pk}/{verb}/", JOB, "job_control",
      response={200: JobOut, **ERRORS})  # fmt: skip
def job_control(
    request: HttpRequest,
    qname: str,
    pk: int,
    verb: str,
    body: ConfirmIn | None = None,
    conn: str | None = None,
    ns: str | None = None,
) -> dict[str, Any]:
    """``confirm`` (body ``{"confirm": "<the queue's name>"}``: it runs), ``pause``,
    ``resume`` or ``cancel``."""
    if verb not in ("confirm", "pause", "resume", "cancel"):
        raise Http404(f"No job action {verb!r}.")
    place = places.resolve(conn, ns)
    job = _job(place, qname, pk)
    dead = job.kind == "redrive" and bool(place.rsmq.dead_letter_sources(qname))
    _allow(request, place, job.kind, jobs.role_for(job.kind, checked(job.filter), dead), qname)
    try:
        if verb == "confirm":
            typed = body.confirm if body else ""
            jobs.confirm(request, place, job, typed, actor=caller(request).actor)
        else:
            jobs.control(job, verb)
    except jobs.JobError as e:
        raise _bad(e) from None
    return _out(job)
