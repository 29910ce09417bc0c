"""Act on every match: a ``BulkJob`` row per job, and the Celery tasks' bodies.

The flow: ``create`` checks what was asked (the filter with ``message_filter.checked``,
the action's fields, the pace, the caps on live jobs) and queues the count; ``count``
(a task) scans every match with progress; the page shows the typed confirmation stating
the count; ``confirm`` audits the start and queues ``execute`` (a task); its end is
audited too. The pacing itself (rate cap, canary, re-checking changed messages) is
``queues/pacing.py``, the same code the CLI runs.

Jobs share the console's one Celery worker with the snapshots, alert evaluation,
notifications and the audit drain, so a job never holds it: each task is one bounded
step (about ``pacing.STEP_SECONDS``) that saves where it stands on the row
(``BulkJob.walk``) and queues the next step with the countdown its pace asks for — a job
at 0.01 a second, or a canary watched for an hour, is a small task every WAIT_MAX
seconds at most, and a paused job has no task at all until it is resumed. Each step
carries its number (``BulkJob.turn``): a duplicate or a stale task does nothing, and a
step lost with its task (a worker restarted) is queued again by ``sweep`` (beat).
A queue deleted and created again since its count is never acted on (``recreated``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from typing import Any, TypedDict

from django.conf import settings
from django.db import connection, transaction
from django.http import Http404, HttpRequest
from django.utils import timezone
from redis.exceptions import RedisError

from dashboard.access.roles import Role
from dashboard.acting import undo as undos
from dashboard.acting.message_filter import PARAMS, FilterError, MessageFilter, checked
from dashboard.audit import log as audit
from dashboard.celery import app
from dashboard.display.formatting import duration
from dashboard.models import AuditEntry, BulkJob, UndoEntry
from dashboard.places.place import Place, resolve
from dashboard.triage.due import moment, window
from dashboard.web.text import refusal, storable
from queues import QueueNotFound, RsmqError, pacing
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
    # the delayed messages due in a window (queues/pacing.py When): the due view's
    "deliver": "Deliver now",
    "shift": "Shift",
    "spread": "Spread",
}
#: the audit log's name of each kind
AUDIT = {k: f"{k}_matches" for k in KINDS}
#: the kinds that put messages in another queue (its grants checked: guard.destination)
MOVING = ("move", "redrive")


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


class WhenParams(TypedDict, total=False):
    """A rescheduling's window and new times (``queues.pacing.When``'s fields, epoch ms;
    ``shift_ms`` signed), beside ``JobParams`` in its ``params``."""

    due_from: int | None
    due_until: int | None
    shift_ms: int
    spread_from: int
    spread_until: int


class JobError(ValueError):
    """Bad input for a job: ``field`` names it; nothing was started or changed."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def role_for(kind: str, f: MessageFilter, dead_letters: bool) -> Role:
    """As on the queue page: acting on what a filter narrows down (received ≥ N, a text in the body)
    is a message action, the operator's; every message of a state is a whole-queue one,
    the admin's (delete all, requeue all). A redrive from a dead-letter queue is the
    operator's; from any other queue, the admin's. Rescheduling a window's delayed
    messages (deliver now, shift, spread) is the operator's: it removes nothing, and its
    Undo puts every time back."""
    if kind in pacing.RESCHEDULING:
        return Role.OPERATOR
    if kind == "redrive":
        return Role.OPERATOR if dead_letters else Role.ADMIN
    return Role.OPERATOR if f.narrows else Role.ADMIN


def _time(field: str, raw: Any) -> int | None:
    """A time a form or an API body gives: epoch ms (a number), or ISO 8601 (UTC unless
    it says otherwise); empty: none."""
    if raw in (None, ""):
        return None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return v.integer(field, int(raw), 0, 2**53)
    text = str(raw).strip()
    if text.isdigit():
        return v.integer(field, int(text), 0, 2**53)
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgument(
            field, f"{field} must be epoch ms or a time like 2026-11-28T03:00 (UTC)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return round(when.timestamp() * 1000)


def _when(kind: str, data: Any) -> pacing.When:
    """A rescheduling's window and new times, as a form or an API body gives them."""
    when = pacing.When(_time("due_from", data.get("due_from")),
                       _time("due_until", data.get("due_until")))  # fmt: skip
    if kind == "shift":
        raw = data.get("shift")
        if raw in (None, ""):
            raise InvalidArgument("shift", "shift: a duration, earlier (-) or later: 30m, -2h")
        ms = round(v.duration("shift", raw, signed=True) * 1000)
        when = dataclasses.replace(when, shift_ms=ms)
    elif kind == "spread":
        start = _time("spread_from", data.get("spread_from"))
        end = _time("spread_until", data.get("spread_until"))
        if start is None or end is None:
            raise InvalidArgument(
                "spread_from", "spread: the window to spread over, from and until"
            )
        when = dataclasses.replace(when, spread_from=start, spread_until=end)
    return when


def read_request(data: Any, qname: str) -> tuple[str, MessageFilter, pacing.Plan]:
    """The kind, filter and plan a form or an API body asks for; JobError naming the
    first bad field. A rescheduling's filter is of delayed messages, always."""
    kind = data.get("kind") or ""
    if kind not in KINDS:
        raise JobError("kind", f"kind must be one of {', '.join(KINDS)}")
    for name in (*PARAMS.values(), "to"):  # kept in the job's row: what a database stores
        value = data.get(name)
        if isinstance(value, str) and not storable(value):
            raise JobError(name, refusal(name, value))
    try:
        # every field the one filter reads from a URL (message_filter.PARAMS), as text
        given = {p: str(data.get(p) or "") for p in PARAMS.values()}
        if kind in pacing.RESCHEDULING:
            if given["state"] not in ("", "all", "delayed"):
                raise FilterError("state", f"{kind}: state must be delayed")
            given["state"] = "delayed"
        f = checked(given)
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
        when = _when(kind, data) if kind in pacing.RESCHEDULING else None
        plan = pacing.Plan(qname, kind, f.browse_kwargs(), to, vt, keep, pace, when)
        plan.check()
    except InvalidArgument as e:
        raise JobError(e.field, str(e)) from None
    return kind, f, plan


def _queue_task(name: str, job_id: int, turn: int, countdown: float = 0.0) -> None:
    """A task of dashboard/tasks.py, by its name (tasks.py imports this module): the job's
    step number ``turn``, ``countdown`` seconds from now."""
    app.send_task(name, (job_id, turn), countdown=max(0.0, countdown), retry=False)


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
    if job.kind in pacing.RESCHEDULING:
        what += _when_words(job)
    if p.get("rate"):
        what += f"; at most {p['rate']:g} a second"
    if p.get("canary"):
        what += (
            f"; a canary of {p['canary']} first, watched {p['watch']:g} s, stopping if more "
            f"than {p['max_bounce']:g}% come back to {job.queue}"
        )
    return what


def _when_words(job: BulkJob) -> str:
    """A rescheduling's window and new times, in words (the confirmation's)."""
    w: WhenParams = job.params
    start, end = w.get("due_from"), w.get("due_until")
    if start is not None and end is not None:
        text = f" due {window(start, end)}"
    elif start is not None:
        text = f" due from {moment(start)}"
    elif end is not None:
        text = f" due before {moment(end)}"
    else:
        text = ""
    if job.kind == "deliver":
        return text + ": visible now"
    if job.kind == "shift":
        ms = w.get("shift_ms", 0)
        return text + f", each {duration(abs(ms) / 1000)} {'later' if ms > 0 else 'earlier'}"
    spread = window(w.get("spread_from", 0), w.get("spread_until", 0))
    return text + f", spread evenly over {spread} in their order"


def plan_of(job: BulkJob) -> pacing.Plan:
    p: JobParams = job.params
    pace = pacing.Pace(p.get("rate"), p.get("canary", 0), p.get("watch", 0), p.get("max_bounce", 0))
    match = checked(job.filter).browse_kwargs()
    when = None
    if job.kind in pacing.RESCHEDULING:
        w: WhenParams = job.params
        when = pacing.When(
            w.get("due_from"), w.get("due_until"), w.get("shift_ms", 0),
            w.get("spread_from", 0), w.get("spread_until", 0),
        )  # fmt: skip
    return pacing.Plan(
        job.queue, job.kind, match, p.get("to"), p.get("vt"), p.get("keep_counts", False), pace,
        when,
    )  # fmt: skip


def create(request: HttpRequest, place: Place, qname: str, data: Any, actor: str = "") -> BulkJob:
    """A job from what was posted, counting (its count task queued); JobError if bad.
    ``actor``: who asked when no console user did (an API token, by its name)."""
    kind, f, plan = read_request(data, qname)
    who = actor or request.user.get_username()
    pace = plan.pace
    params: JobParams = {
        "to": plan.to, "vt": plan.vt, "keep_counts": plan.keep_counts, "rate": pace.rate,
        "canary": pace.canary, "watch": pace.watch, "max_bounce": pace.max_bounce,
    }  # fmt: skip
    if plan.when is not None:
        when: WhenParams = {
            "due_from": plan.when.due_from, "due_until": plan.when.due_until,
            "shift_ms": plan.when.shift_ms, "spread_from": plan.when.spread_from,
            "spread_until": plan.when.spread_until,
        }  # fmt: skip
        params.update(when)  # type: ignore[typeddict-item]
    with transaction.atomic():  # counted under the caps and written, one at a time
        _one_at_a_time()
        check_caps(place, qname, who)
        # audited before it exists (nothing happens if the row can't be written: 503)
        row = audit.start(place, AUDIT[kind], actor=actor, user=request.user, queue=qname,
                          params={**params, "filter": f.query(), "step": "count"})  # fmt: skip
        job = BulkJob.objects.create(
            kind=kind, connection=place.conn.name, namespace=place.ns, queue=qname,
            filter=f.query(), params=params, username=who, phase="counting",
            due=timezone.now(),
        )  # fmt: skip
    audit.finish(
        row, AuditEntry.Outcome.OK,
        params={**params, "filter": job.filter, "job": job.pk, "step": "count"},
        detail=f"Counting the messages of {qname} matching {f.describe()} (job {job.pk}).",
    )  # fmt: skip
    transaction.on_commit(lambda: _queue_task(COUNT_TASK, job.pk, 0))
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
    stale = recreated(place, job)
    if stale:
        raise JobError("queue", stale)
    params = {**job.params, "filter": job.filter, "job": job.pk, "step": "start"}
    # audited before it runs (nothing runs if the row can't be written: 503)
    row = audit.start(place, AUDIT[job.kind], actor=actor, user=request.user, queue=job.queue,
                      params=params)  # fmt: skip
    n = BulkJob.objects.filter(pk=job.pk, state=BulkJob.State.COUNTED).update(
        state=BulkJob.State.RUNNING, phase="starting", started=timezone.now(),
        updated=timezone.now(), due=timezone.now(),
    )  # fmt: skip
    if not n:
        audit.forget(row)
        raise JobError("state", "this job was started already")
    job.refresh_from_db()
    audit.finish(row, AuditEntry.Outcome.OK, count=job.matched, params=params,
                 detail=f"Started job {job.pk}: {describe(job)}.")  # fmt: skip
    turn = job.turn
    transaction.on_commit(lambda: _queue_task(RUN_TASK, job.pk, turn))


def control(job: BulkJob, verb: str) -> None:
    """pause / resume / cancel. A running job's next step reads it (within WAIT_MAX
    seconds); a paused one has no step queued at all: resuming queues one, cancelling
    ends it here."""
    now = timezone.now()
    jobs = BulkJob.objects.filter(pk=job.pk, finished__isnull=True)
    if verb == "cancel" and job.state == BulkJob.State.COUNTED:
        jobs.filter(state=BulkJob.State.COUNTED).update(
            state=BulkJob.State.CANCELLED, finished=now, updated=now
        )
        return
    if not job.live:
        raise JobError("state", f"this job is {job.state}: nothing to {verb}")
    if job.state == BulkJob.State.COUNTING and verb != "cancel":
        raise JobError("state", "this job is counting: it can only be cancelled")
    if verb == "pause":
        jobs.filter(state=BulkJob.State.RUNNING).update(control=pacing.PAUSE, updated=now)
    elif verb == "resume":
        walk = dict(job.walk)
        if "progress" in walk:  # the rate counts from now: no burst to catch up
            p = pacing.Progress.from_state(walk["progress"])
            p.resumed()
            walk["progress"] = p.state()
        if jobs.filter(state=BulkJob.State.PAUSED).update(
            state=BulkJob.State.RUNNING, control="", phase="resuming", walk=walk, due=now,
            updated=now,
        ):  # fmt: skip
            turn = job.turn
            transaction.on_commit(lambda: _queue_task(RUN_TASK, job.pk, turn))
        else:  # its step has not seen the pause yet: it goes on
            jobs.filter(state=BulkJob.State.RUNNING).update(control="", updated=now)
    elif job.state == BulkJob.State.PAUSED:
        job.refresh_from_db()
        _end_run(job, BulkJob.State.CANCELLED, "")
    else:
        jobs.update(control=pacing.CANCEL, updated=now)


# -- caps ------------------------------------------------------------------------------


class JobLimit(JobError):
    """A cap on live jobs (RSMQ_JOBS_MAX, _PER_USER, _PER_QUEUE) is reached: 409."""


#: Postgres's advisory lock of job creations (any number: the console takes no other)
CAPS_LOCK = 0x72736D71


def _one_at_a_time() -> None:
    """In a transaction, before the caps are counted: the job creations of every web
    process one after another until it ends, so two can't both find the last place under
    a cap. SQLite's transactions take its write lock as they begin (settings.py:
    IMMEDIATE); Postgres takes an advisory lock, held until the transaction ends."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CAPS_LOCK])


def check_caps(place: Place, qname: str, who: str) -> None:
    """JobLimit naming the cap when one more job would be past it. A live job is one not
    ended: counting, counted (waiting for its confirmation), running or paused."""
    live = BulkJob.objects.filter(finished__isnull=True)
    caps = (
        (live, int(settings.RSMQ_JOBS_MAX), "in all", "RSMQ_JOBS_MAX"),
        (live.filter(username=who), int(settings.RSMQ_JOBS_PER_USER), f"by {who}",
         "RSMQ_JOBS_PER_USER"),
        (live.filter(connection=place.conn.name, namespace=place.ns, queue=qname),
         int(settings.RSMQ_JOBS_PER_QUEUE), f"on {qname}", "RSMQ_JOBS_PER_QUEUE"),
    )  # fmt: skip
    for rows, cap, where, name in caps:
        if rows.count() >= cap:
            raise JobLimit(
                "cap",
                f"{cap} live job{'s' if cap != 1 else ''} {where} already, the most allowed"
                f" ({name}): wait for one to end, or cancel one (a counted job waiting for"
                " its confirmation counts too)",
            )


def recreated(place: Place, job: BulkJob) -> str:
    """Why the job must not act ("": it may): its queue was deleted (and maybe created
    again) since it was counted — a new queue's messages were never counted nor
    confirmed."""
    if job.queue_created is None:
        return ""
    try:
        created = place.rsmq.get_queue_attributes(job.queue).created
    except QueueNotFound:
        return f"queue {job.queue} was deleted since it was counted"
    if created != job.queue_created:
        return (
            f"queue {job.queue} was deleted and created again since it was counted: its "
            "messages now are not the ones counted; start a new job"
        )
    return ""


# -- the steps: each a Celery task that queues the next -------------------------------

#: the tasks' names (dashboard/tasks.py)
COUNT_TASK, RUN_TASK = "dashboard.tasks.bulk_count", "dashboard.tasks.bulk_run"
#: the longest countdown a step queues its next with (s): a job waiting for its rate or
#: its canary looks at its controls at least this often, and a countdown stays far
#: inside the broker's visibility timeout
WAIT_MAX = 5.0
#: a live job whose step is this late (s) lost its task (a worker restarted, the broker
#: was down): the sweep queues it again (a task runs only its own step: never twice)
LATE = 60.0
#: a counted job not confirmed within this long (s) is cancelled by the sweep: an
#: abandoned confirmation holds no place under the caps for ever
CONFIRM_WITHIN = 3600.0


def _place(job: BulkJob) -> Place:
    try:
        return resolve(job.connection, job.namespace)
    except Http404 as e:  # its connection was removed from the settings since
        raise LookupError(str(e)) from None


def _claim(job_id: int, turn: int | None, state: str) -> BulkJob | None:
    """The job, if step ``turn`` of it is this task's to run (None: another task ran it,
    or the job is no longer in ``state``); the job's next step is ``turn + 1``."""
    job = BulkJob.objects.filter(pk=job_id).first()
    if job is None:
        return None
    turn = job.turn if turn is None else turn  # a task queued before steps were numbered
    if not BulkJob.objects.filter(pk=job_id, turn=turn, state=state, finished__isnull=True).update(
        turn=turn + 1, updated=timezone.now()
    ):
        return None
    job.refresh_from_db()
    return job


def _next(job: BulkJob, task: str, wait: float) -> None:
    countdown = min(wait, WAIT_MAX)
    BulkJob.objects.filter(pk=job.pk).update(due=timezone.now() + dt.timedelta(seconds=countdown))
    _queue_task(task, job.pk, job.turn, countdown)


def count(job_id: int, turn: int | None = None) -> None:
    """A count task: one step of counting every match (bounded calls, about
    pacing.STEP_SECONDS), then the next step queued, or the job counted."""
    job = _claim(job_id, turn, BulkJob.State.COUNTING)
    if job is None:
        return
    if job.control == pacing.CANCEL:
        _finish(job, BulkJob.State.CANCELLED, "")
        return
    try:
        place = _place(job)
        created = job.queue_created
        if created is None:  # the first step: which queue is counted
            created = place.rsmq.get_queue_attributes(job.queue).created
        elif recreated(place, job):
            raise LookupError(recreated(place, job))
        plan = plan_of(job)
        p = pacing.Progress.from_state(job.walk.get("progress", {}))
        done = pacing.count_step(place.rsmq, job.queue, plan.match, p, when=plan.when)
    except (RsmqError, RedisError, LookupError, OSError) as e:
        _finish(job, BulkJob.State.FAILED, f"Counting failed: {e}")
        return
    BulkJob.objects.filter(pk=job.pk).update(
        matched=p.matched, phase=p.phase, queue_created=created, updated=timezone.now(),
        walk={} if done else {"progress": p.state()},
    )  # fmt: skip
    if not done:
        _next(job, COUNT_TASK, 0)
        return
    BulkJob.objects.filter(pk=job.pk, state=BulkJob.State.COUNTING).update(
        state=BulkJob.State.COUNTED, due=None
    )


class Kept(TypedDict):
    """A job's Undo stash, between its steps (``BulkJob.walk["keep"]``): undo.Keep's."""

    token: str | None
    why: str
    expires_ms: int
    bytes: int
    queue: str


def _kept(job: BulkJob) -> undos.Keep | None:
    k: Kept | None = job.walk.get("keep")
    return None if k is None else undos.Keep(**k)


def execute(job_id: int, turn: int | None = None) -> None:
    """A run task: one step of the confirmed job (paced, bounded: pacing.step), its
    progress saved, then the next step queued with the countdown its pace asks for — or
    the job ended, audited. A paused job's step queues none (resume does)."""
    job = _claim(job_id, turn, BulkJob.State.RUNNING)
    if job is None:
        return
    if job.control == pacing.CANCEL:
        _end_run(job, BulkJob.State.CANCELLED, "")
        return
    if job.control == pacing.PAUSE and BulkJob.objects.filter(
        pk=job.pk, state=BulkJob.State.RUNNING, control=pacing.PAUSE
    ).update(state=BulkJob.State.PAUSED, phase="paused", due=None, updated=timezone.now()):
        return  # no next step: resume queues it
    walk = dict(job.walk)
    try:
        place = _place(job)
        stale = recreated(place, job)
        if stale:
            raise LookupError(f"Stopped: {stale}")
        plan = plan_of(job)
        if "progress" in walk:
            p = pacing.Progress.from_state(walk["progress"])
        else:
            p = pacing.begin(plan, job.matched)
        if "keep" not in walk and job.kind in pacing.KEEPING:
            # one stash for the whole run (within RSMQ_UNDO_MAX_MB), filled by each step in
            # the same script call as its change (a rescheduling's: each message's time
            # before); remembered with the job's end audit row
            if job.kind in pacing.RESCHEDULING:
                k = undos.keep_times(place, AUDIT[job.kind], job.queue, job.matched)
            else:
                k = undos.keep(place, AUDIT[job.kind], job.queue, to=plan.to)
            walk["keep"] = Kept(token=k.token, why=k.why, expires_ms=k.expires_ms,
                                bytes=k.bytes, queue=k.queue)  # fmt: skip
            BulkJob.objects.filter(pk=job.pk).update(walk=walk)
        kept = walk.get("keep") or {}
        wait = pacing.step(place.rsmq, plan, p, keep=kept.get("token"))
    except (RsmqError, RedisError, LookupError, OSError) as e:
        log.warning("bulk job %s failed: %s", job_id, e)
        job.walk = walk
        _end_run(job, BulkJob.State.FAILED, f"Failed after {job.done:,}: {e}")
        return
    walk["progress"] = p.state()
    BulkJob.objects.filter(pk=job.pk).update(
        done=p.done, changed=p.changed, skipped=p.skipped, canary=len(p.canary_ids),
        bounced=p.bounced, phase=p.phase, note=p.note, walk=walk, updated=timezone.now(),
        phase_until=round(p.watch_until * 1000) if p.phase == "watching" else None,
    )  # fmt: skip
    job.refresh_from_db()
    if wait is None:
        state = {"done": BulkJob.State.DONE, "stopped": BulkJob.State.STOPPED}[p.phase]
        _end_run(job, state, p.note)
        return
    _next(job, RUN_TASK, wait)


def _end_run(job: BulkJob, state: str, note: str) -> None:
    """The run's end: the job finished (once), audited, its Undo remembered — in one
    transaction, so whoever reads the job ended reads its Undo too."""
    with transaction.atomic():
        row = _finish(job, state, note)
        kept = _kept(job)
        if row is None or kept is None or kept.token is None:
            return
        try:
            place = _place(job)
        except LookupError:
            return  # the stash expires by itself
        _remember(place, kept, row, job.done)


def sweep() -> dict[str, int]:
    """A live job whose step is LATE lost its task: queued again. A counted job not
    confirmed within CONFIRM_WITHIN: cancelled."""
    now = timezone.now()
    late = now - dt.timedelta(seconds=LATE)
    again = 0
    for state, task in ((BulkJob.State.COUNTING, COUNT_TASK), (BulkJob.State.RUNNING, RUN_TASK)):
        for job in BulkJob.objects.filter(state=state, finished__isnull=True, due__lt=late):
            BulkJob.objects.filter(pk=job.pk).update(due=now)
            _queue_task(task, job.pk, job.turn)
            again += 1
    stale = now - dt.timedelta(seconds=CONFIRM_WITHIN)
    abandoned = BulkJob.objects.filter(
        state=BulkJob.State.COUNTED, finished__isnull=True, updated__lt=stale
    ).update(
        state=BulkJob.State.CANCELLED, finished=now, updated=now,
        note=f"Not confirmed within {CONFIRM_WITHIN / 3600:g} h: cancelled.",
    )  # fmt: skip
    return {"queued_again": again, "abandoned": abandoned}


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
    if job.kind not in pacing.KEEPING or job.finished is None:
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
            "move": "moved", "redrive": "redriven", "deliver": "delivered",
            "shift": "shifted", "spread": "spread"}[job.kind]  # fmt: skip
    text = f"{job.done:,} of {job.matched:,} {verb}"
    if job.changed:
        text += f"; {job.changed:,} had changed since they were read and were left alone"
    if job.skipped:
        text += f"; {job.skipped:,} could not go (too large, or no queue to go back to)"
    return text


def _finish(job: BulkJob, state: str, note: str) -> AuditEntry | None:
    """The job ended (once: None when it had ended already), and its end audited if it
    had started."""
    if not BulkJob.objects.filter(pk=job.pk, finished__isnull=True).update(
        state=state,
        note=note,
        finished=timezone.now(),
        updated=timezone.now(),
        due=None,
        control="",
    ):
        return None
    job.refresh_from_db()
    if job.started is None:
        return None  # never started: nothing was done, the start was never audited
    outcome = AuditEntry.Outcome.OK if state != BulkJob.State.FAILED else AuditEntry.Outcome.ERROR
    return audit.write(
        (job.connection, job.namespace), AUDIT[job.kind], outcome, actor=job.username,
        queue=job.queue, count=job.done,
        params={**job.params, "filter": job.filter, "job": job.pk, "step": "end",
                "state": state, "changed": job.changed, "skipped": job.skipped},
        detail=f"Job {job.pk} {state}: {outcome_text(job)}." + (f" {note}" if note else ""),
    )  # fmt: skip
