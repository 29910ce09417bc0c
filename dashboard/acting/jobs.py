"""Act on every match: a ``BulkJob`` row per job, and the two Celery tasks' bodies.

The flow: ``start`` checks what was asked (the filter with ``message_filter.checked``,
the action's fields, the pace) and queues the count; ``count`` (a task) scans every
match with progress; the page shows the typed confirmation stating the count;
``confirm`` audits the start and queues ``execute`` (a task), which runs
``queues.pacing.run`` in bounded steps, saving its progress on the row and reading the
operator's pause / resume / cancel from it after every step; its end is audited too.
The pacing itself (rate cap, canary, re-checking changed messages) is ``queues/pacing.py``,
the same code the CLI runs.
"""

from __future__ import annotations

import logging
from typing import Any, TypedDict

from django.db import transaction
from django.http import Http404, HttpRequest
from django.utils import timezone
from redis.exceptions import RedisError

from dashboard.access.roles import Role
from dashboard.acting import undo as undos
from dashboard.acting.message_filter import PARAMS, FilterError, MessageFilter, checked
from dashboard.audit import log as audit
from dashboard.celery import app
from dashboard.models import AuditEntry, BulkJob, UndoEntry
from dashboard.places.place import Place, resolve
from queues import RsmqError, pacing
from queues import validation as v
from queues.errors import InvalidArgument

log = logging.getLogger(__name__)

#: the kinds of job and how the confirmation and the audit log say them
KINDS = {
    "delete": "Delete",
    "requeue": "Requeue",
    "visibility": "Change the visibility of",
    "move": "Move",
    "redrive": "Redrive",
}
#: the audit log's name of each kind
AUDIT = {k: f"{k}_matches" for k in KINDS}
#: how often a running job writes its progress (s): the page polls every second
SAVE_EVERY = 0.5


class JobParams(TypedDict):
    """What a job does besides its filter (``BulkJob.params``, and its audit rows'): where
    a move or a redrive sends (``to``), a visibility change's ``vt``, whether moved messages
    keep their receive count, and the pace (queues.pacing.Pace's fields)."""

    to: str | None
    vt: int | None
    keep_counts: bool
    rate: float | None
    canary: int
    watch: float
    max_bounce: float


class JobError(ValueError):
    """Bad input for a job: ``field`` names it; nothing was started or changed."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def role_for(kind: str, f: MessageFilter, dead_letters: bool) -> Role:
    """As on the queue page: acting on what a filter narrows down (received ≥ N, a text in the body)
    is a message action, the operator's; every message of a state is a whole-queue one,
    the admin's (delete all, requeue all). A redrive from a dead-letter queue is the
    operator's; from any other queue, the admin's."""
    if kind == "redrive":
        return Role.OPERATOR if dead_letters else Role.ADMIN
    return Role.OPERATOR if f.narrows else Role.ADMIN


def read_request(data: Any, qname: str) -> tuple[str, MessageFilter, pacing.Plan]:
    """The kind, filter and plan a form or an API body asks for; JobError naming the
    first bad field."""
    kind = data.get("kind") or ""
    if kind not in KINDS:
        raise JobError("kind", f"kind must be one of {', '.join(KINDS)}")
    try:
        # every field the one filter reads from a URL (message_filter.PARAMS), as text
        f = checked({p: str(data.get(p) or "") for p in PARAMS.values()})
    except FilterError as e:
        raise JobError(e.field, str(e)) from None
    to = (data.get("to") or "").strip() or None
    vt: int | None = None
    try:
        if kind == "visibility":
            raw = str(data.get("vt") or "").strip()
            if not raw.isdigit():
                raise InvalidArgument("vt", f"vt must be a whole number from 0 to {v.MAX_SECONDS}")
            vt = v.seconds("vt", int(raw))
        pace = pacing.checked_pace(
            data.get("rate"), data.get("canary"), data.get("watch"), data.get("max_bounce")
        )
        keep = str(data.get("keep_counts") or "").lower() in ("on", "1", "true", "yes")
        plan = pacing.Plan(qname, kind, f.browse_kwargs(), to, vt, keep, pace)
        plan.check()
    except InvalidArgument as e:
        raise JobError(e.field, str(e)) from None
    return kind, f, plan


def _queue_task(name: str, job_id: int) -> None:
    """A task of dashboard/tasks.py, by its name (tasks.py imports this module)."""
    app.send_task(name, (job_id,), retry=False)


def describe(job: BulkJob) -> str:
    """ "Delete 12,345 messages matching …" (the confirmation and the audit log)."""
    f = checked(job.filter)
    what = f"{KINDS[job.kind]} {job.matched:,} message{'' if job.matched == 1 else 's'}"
    what += f" of {job.queue} matching {f.describe()}"
    p: JobParams = job.params
    if job.kind == "move" or p.get("to"):
        what += f", to {p['to']}"
    elif job.kind == "redrive":
        what += ", back to the queues they came from"
    if job.kind == "visibility":
        what += f" (visible again in {p['vt']} s)"
    if job.kind in ("move", "redrive"):
        what += (
            "; they keep their receive count"
            if p.get("keep_counts")
            else ("; they start with a fresh receive count")
        )
    if p.get("rate"):
        what += f"; at most {p['rate']:g} a second"
    if p.get("canary"):
        what += (
            f"; a canary of {p['canary']} first, watched {p['watch']:g} s, stopping if more "
            f"than {p['max_bounce']:g}% come back to {job.queue}"
        )
    return what


def plan_of(job: BulkJob) -> pacing.Plan:
    p: JobParams = job.params
    pace = pacing.Pace(p.get("rate"), p.get("canary", 0), p.get("watch", 0), p.get("max_bounce", 0))
    match = checked(job.filter).browse_kwargs()
    return pacing.Plan(
        job.queue, job.kind, match, p.get("to"), p.get("vt"), p.get("keep_counts", False), pace
    )


def create(request: HttpRequest, place: Place, qname: str, data: Any, actor: str = "") -> BulkJob:
    """A job from what was posted, counting (its count task queued); JobError if bad.
    ``actor``: who asked when no console user did (an API token, by its name)."""
    kind, f, plan = read_request(data, qname)
    pace = plan.pace
    params: JobParams = {
        "to": plan.to, "vt": plan.vt, "keep_counts": plan.keep_counts, "rate": pace.rate,
        "canary": pace.canary, "watch": pace.watch, "max_bounce": pace.max_bounce,
    }  # fmt: skip
    job = BulkJob.objects.create(
        kind=kind, connection=place.conn.name, namespace=place.ns, queue=qname,
        filter=f.query(), params=params, username=actor or request.user.get_username(),
        phase="counting",
    )  # fmt: skip
    audit.record(
        request, place, AUDIT[kind], AuditEntry.Outcome.OK, qname,
        params={**params, "filter": job.filter, "job": job.pk, "step": "count"},
        detail=f"Counting the messages of {qname} matching {f.describe()} (job {job.pk}).",
        actor=actor,
    )  # fmt: skip
    transaction.on_commit(lambda: _queue_task("dashboard.tasks.bulk_count", job.pk))
    return job


def confirm(request: HttpRequest, place: Place, job: BulkJob, typed: str, actor: str = "") -> None:
    """The typed confirmation: the queue's name, exactly. Starts the run (audited)."""
    if job.state != BulkJob.State.COUNTED:
        raise JobError("state", f"this job is {job.state}: only a counted job can be started")
    if typed != job.queue:
        raise JobError("confirm", f"Type {job.queue} exactly to confirm.")
    try:
        pacing.checked_pace(
            job.params.get("rate"), job.params.get("canary"), job.params.get("watch"),
            job.params.get("max_bounce"), count=job.matched,
        )  # fmt: skip
    except InvalidArgument as e:
        raise JobError(e.field, str(e)) from None
    n = BulkJob.objects.filter(pk=job.pk, state=BulkJob.State.COUNTED).update(
        state=BulkJob.State.RUNNING, phase="starting", started=timezone.now(),
        updated=timezone.now(),
    )  # fmt: skip
    if not n:
        raise JobError("state", "this job was started already")
    job.refresh_from_db()
    audit.record(
        request, place, AUDIT[job.kind], AuditEntry.Outcome.OK, job.queue, count=job.matched,
        params={**job.params, "filter": job.filter, "job": job.pk, "step": "start"},
        detail=f"Started job {job.pk}: {describe(job)}.", actor=actor,
    )  # fmt: skip
    transaction.on_commit(lambda: _queue_task("dashboard.tasks.bulk_run", job.pk))


def control(job: BulkJob, verb: str) -> None:
    """pause / resume / cancel: the running task reads it after its next step."""
    if verb == "cancel" and job.state == BulkJob.State.COUNTED:
        BulkJob.objects.filter(pk=job.pk).update(
            state=BulkJob.State.CANCELLED, finished=timezone.now(), updated=timezone.now()
        )
        return
    if not job.live:
        raise JobError("state", f"this job is {job.state}: nothing to {verb}")
    word = {"pause": pacing.PAUSE, "resume": "", "cancel": pacing.CANCEL}[verb]
    BulkJob.objects.filter(pk=job.pk).update(control=word, updated=timezone.now())


def _place(job: BulkJob) -> Place:
    try:
        return resolve(job.connection, job.namespace)
    except Http404 as e:  # its connection was removed from the settings since
        raise LookupError(str(e)) from None


class _Saver:
    """The task's ``control``: saves progress at most every SAVE_EVERY seconds (and at
    every change of phase), and answers the operator's latest word."""

    def __init__(self, job: BulkJob, counting: bool) -> None:
        self.job = job
        self.counting = counting
        self.last = 0.0
        self.phase = ""
        self.word = ""

    def __call__(self, p: pacing.Progress) -> str:
        import time

        now = time.monotonic()
        if now - self.last >= SAVE_EVERY or p.phase != self.phase:
            self.last, self.phase = now, p.phase
            fields: dict[str, Any] = {"phase": p.phase, "updated": timezone.now()}
            if self.counting:
                fields["matched"] = p.matched
            else:
                fields.update(
                    done=p.done, changed=p.changed, skipped=p.skipped, canary=len(p.canary_ids),
                    bounced=p.bounced, note=p.note,
                    state=BulkJob.State.PAUSED if p.phase == "paused" else BulkJob.State.RUNNING,
                    phase_until=round(p.until * 1000) if p.until else None,
                )  # fmt: skip
            BulkJob.objects.filter(pk=self.job.pk).update(**fields)
            self.word = BulkJob.objects.values_list("control", flat=True).get(pk=self.job.pk)
        return self.word or pacing.RUN


def count(job_id: int) -> None:
    """The count task: every match, counted with bounded calls."""
    job = BulkJob.objects.get(pk=job_id)
    if job.state != BulkJob.State.COUNTING:
        return
    try:
        place = _place(job)
        p = pacing.count_matches(place.rsmq, job.queue, checked(job.filter).browse_kwargs(),
                                 _Saver(job, counting=True))  # fmt: skip
    except (RsmqError, RedisError, LookupError, OSError) as e:
        _finish(job, BulkJob.State.FAILED, f"Counting failed: {e}")
        return
    state = BulkJob.State.CANCELLED if p.phase == "cancelled" else BulkJob.State.COUNTED
    BulkJob.objects.filter(pk=job_id).update(
        matched=p.matched, state=state, phase=p.phase, updated=timezone.now(),
        finished=timezone.now() if state == BulkJob.State.CANCELLED else None,
    )  # fmt: skip


def execute(job_id: int) -> None:
    """The run task: paced, in bounded steps, progress saved; its end audited."""
    job = BulkJob.objects.get(pk=job_id)
    if job.state != BulkJob.State.RUNNING or job.finished:
        return
    saver = _Saver(job, counting=False)
    kept: undos.Keep | None = None
    place: Place | None = None
    try:
        place = _place(job)
        plan = plan_of(job)
        if job.kind in pacing.REMOVING:
            # one stash for the whole run (within RSMQ_UNDO_MAX_MB), filled by each step's
            # removal in the same script call; remembered with the job's end audit row
            kept = undos.keep(place, AUDIT[job.kind], job.queue, to=plan.to)
        p = pacing.run(place.rsmq, plan, job.matched, saver, keep=kept.token if kept else None)
    except (RsmqError, RedisError, LookupError, OSError) as e:
        log.warning("bulk job %s failed: %s", job_id, e)
        job.refresh_from_db()
        row = _finish(job, BulkJob.State.FAILED, f"Failed after {job.done:,}: {e}")
        _remember(place, kept, row, job.done)
        return
    state = {"done": BulkJob.State.DONE, "cancelled": BulkJob.State.CANCELLED,
             "stopped": BulkJob.State.STOPPED}[p.phase]  # fmt: skip
    BulkJob.objects.filter(pk=job_id).update(
        done=p.done, changed=p.changed, skipped=p.skipped, canary=len(p.canary_ids),
        bounced=p.bounced, phase=p.phase, note=p.note, phase_until=None,
    )  # fmt: skip
    job.refresh_from_db()
    _remember(place, kept, _finish(job, state, p.note), p.done)


def _remember(place: Place | None, kept: undos.Keep | None, row: AuditEntry | None, n: int) -> None:
    """The job's Undo, tied to its end audit row (a stash it left empty is forgotten)."""
    if place is None or kept is None or kept.token is None:
        return
    try:
        if not (n and undos.remember(place, kept, row, n)):
            undos.discard(place, kept)
    except (RsmqError, RedisError) as e:  # the stash expires by itself
        log.warning("bulk job undo: %s", e)


def undo_of(job: BulkJob) -> UndoEntry | None:
    """The job's Undo (an ``UndoEntry``), once it ended having removed something."""
    if job.kind not in pacing.REMOVING or job.finished is None:
        return None
    return (
        UndoEntry.objects.filter(
            connection=job.connection, namespace=job.namespace, queue=job.queue,
            audit__action=AUDIT[job.kind], audit__params__job=job.pk,
            audit__params__step="end",
        ).first()
    )  # fmt: skip


def outcome_text(job: BulkJob) -> str:
    verb = {"delete": "deleted", "requeue": "requeued", "visibility": "changed",
            "move": "moved", "redrive": "redriven"}[job.kind]  # fmt: skip
    text = f"{job.done:,} of {job.matched:,} {verb}"
    if job.changed:
        text += f"; {job.changed:,} had changed since they were read and were left alone"
    if job.skipped:
        text += f"; {job.skipped:,} could not go (too large, or no queue to go back to)"
    return text


def _finish(job: BulkJob, state: str, note: str) -> AuditEntry | None:
    BulkJob.objects.filter(pk=job.pk).update(
        state=state, note=note, finished=timezone.now(), updated=timezone.now()
    )
    job.refresh_from_db()
    if job.started is None:
        return None  # never started: nothing was done, the start was never audited
    outcome = AuditEntry.Outcome.OK if state != BulkJob.State.FAILED else AuditEntry.Outcome.ERROR
    return AuditEntry.objects.create(
        username=job.username, connection=job.connection, namespace=job.namespace,
        queue=job.queue, action=AUDIT[job.kind], count=job.done, outcome=outcome,
        params={**job.params, "filter": job.filter, "job": job.pk, "step": "end",
                "state": state, "changed": job.changed, "skipped": job.skipped},
        detail=f"Job {job.pk} {state}: {outcome_text(job)}." + (f" {note}" if note else ""),
    )  # fmt: skip
