"""The console's Undo: a destructive action keeps what it removes (queues/ops/undo.py:
in Redis, outside the RSMQ keys, for ``RSMQ_UNDO_HOURS``) when its estimated size is
within ``RSMQ_UNDO_MAX_MB``; an ``UndoEntry`` row ties the stash to the action's audit
row, and one Undo (admin, confirmed, audited as ``undo``) puts it back. The pages
(views/queue_actions.py, views/message.py, the audit page) and the API (api/native.py)
both go through here. All the stashes of one Redis together keep at most
``RSMQ_UNDO_TOTAL_MB``: past it the oldest are given up first (``within_budget``), each
giving up audited."""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypedDict

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone
from redis.exceptions import RedisError

from dashboard.audit import log as audit
from dashboard.models import AuditEntry, UndoEntry
from dashboard.places.place import Place, resolve
from queues.errors import RsmqError, UndoNotFound
from queues.limits import UNDO_MESSAGE_BYTES
from queues.models import QueueStats, Restored

log = logging.getLogger(__name__)

#: the flash's extra tag that carries an Undo (templates/_flash.html reads it)
TAG = "undo"
#: an undo's token (queues/ops/base.py checks it again)
TOKEN_RE = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True, slots=True)
class Keep:
    """What an action keeps for its Undo: a stash's token, or None and why not; its
    expiry (epoch ms) and estimated bytes."""

    token: str | None
    why: str = ""
    expires_ms: int = 0
    bytes: int = 0
    queue: str = ""  # the queue it is kept for (its Undo is that queue's), if not the row's


def hours() -> float:
    return float(settings.RSMQ_UNDO_HOURS)


def max_bytes() -> int:
    return int(float(settings.RSMQ_UNDO_MAX_MB) * 2**20)


def fits(place: Place, qname: str, stats: QueueStats | None = None) -> bool:
    """Whether what an action on the whole queue (an upper bound for any state or
    selection of it) would remove fits the bound: read before the action, so its
    confirmation says "this cannot be undone" when it does not. Known from ``stats``
    without a Redis call when every message at its maxsize would fit."""
    limit = max_bytes()
    if limit <= 0:
        return False
    if stats is not None and stats.maxsize != -1:
        if stats.msgs * (stats.maxsize + UNDO_MESSAGE_BYTES) <= limit:
            return True
    try:
        return place.rsmq.undo_estimate(qname) <= limit
    except RsmqError:
        return False


def keep(
    place: Place,
    action: str,
    qname: str,
    ids: Iterable[str | bytes] | None = None,
    to: str | None = None,
) -> Keep:
    """A stash for the action, if it fits the bound (else none, and why)."""
    if max_bytes() <= 0:
        return Keep(None, "undo is off (RSMQ_UNDO_MAX_MB is 0)")
    try:
        opened = place.rsmq.open_undo_within(
            action, qname, max_bytes(), ids=None if ids is None else list(ids), to=to,
            hours=hours(),
        )  # fmt: skip
    except (RsmqError, RedisError) as e:
        # data another client spoiled, or Redis down: the action goes on (and says so)
        return Keep(None, f"its data can't be read ({e}): it cannot be undone")
    if not opened.token:
        mb = float(settings.RSMQ_UNDO_MAX_MB)
        return Keep(None, f"more than RSMQ_UNDO_MAX_MB ({mb:g} MB) to keep: it cannot be undone")
    return Keep(opened.token, expires_ms=opened.expires_ms, bytes=opened.bytes, queue=qname)


def times_fit(count: int) -> bool:
    """Whether the times of ``count`` rescheduled messages fit RSMQ_UNDO_MAX_MB."""
    return 0 < count * UNDO_MESSAGE_BYTES <= max_bytes()


def keep_times(place: Place, action: str, qname: str, count: int) -> Keep:
    """A stash of the times of up to ``count`` messages a rescheduling gives new ones (a
    score and the one it got, about UNDO_MESSAGE_BYTES each: no body), if it fits the
    bound (else none, and why)."""
    if max_bytes() <= 0:
        return Keep(None, "undo is off (RSMQ_UNDO_MAX_MB is 0)")
    size = count * UNDO_MESSAGE_BYTES
    if size > max_bytes():
        mb = float(settings.RSMQ_UNDO_MAX_MB)
        return Keep(None, f"more than RSMQ_UNDO_MAX_MB ({mb:g} MB) to keep: it cannot be undone")
    try:
        token = place.rsmq.open_undo(action, qname, hours=hours())
        info = place.rsmq.undo_info(token)
    except (RsmqError, RedisError) as e:
        return Keep(None, f"its data can't be read ({e}): it cannot be undone")
    expires = info.expires_ms if info else 0
    return Keep(token, expires_ms=expires, bytes=size, queue=qname)


def remember(
    place: Place, kept: Keep, row: AuditEntry | None, count: int | None
) -> UndoEntry | None:
    """After the action: its Undo, tied to its audit row (nothing when it removed nothing,
    but a deleted queue, even empty, can come back)."""
    if kept.token is None or row is None:
        return None
    if not count and row.action != "delete_queue":
        return None
    entry = UndoEntry.objects.create(
        token=kept.token,
        connection=place.conn.name,
        namespace=place.ns,
        queue=kept.queue or row.queue,
        action=row.action,
        count=count or 0,
        bytes=kept.bytes,
        expires=dt.datetime.fromtimestamp(kept.expires_ms / 1000, tz=dt.UTC),
        audit=row,
    )
    within_budget(place, entry)
    return entry


def total_bytes() -> int:
    return int(float(settings.RSMQ_UNDO_TOTAL_MB) * 2**20)


def live(connection: str) -> QuerySet[UndoEntry]:
    """The Undos a connection's Redis still keeps: not undone, not expired, not given up."""
    return UndoEntry.objects.filter(
        connection=connection, undone_at__isnull=True, expires__gt=timezone.now()
    )


def within_budget(place: Place, newest: UndoEntry) -> list[UndoEntry]:
    """Keep all the stashes of ``place``'s Redis within RSMQ_UNDO_TOTAL_MB: the oldest
    are given up first (their keys freed; each giving up audited as ``undo_given_up``),
    never ``newest`` (the one just kept). Returns those given up. A failure here never
    fails the action that kept ``newest`` (the stashes expire by themselves)."""
    budget = total_bytes()
    given: list[UndoEntry] = []
    try:
        total = sum(live(place.conn.name).values_list("bytes", flat=True))
        oldest = live(place.conn.name).exclude(pk=newest.pk).order_by("at", "id")
        for e in oldest.iterator():
            if total <= budget:
                break
            give_up(e, f"RSMQ_UNDO_TOTAL_MB ({float(settings.RSMQ_UNDO_TOTAL_MB):g} MB) spent")
            total -= e.bytes
            given.append(e)
    except (RsmqError, RedisError, DatabaseError, Http404) as e:
        log.warning("undo budget of %s not kept: %s", place.conn.name, e)
    return given


def give_up(e: UndoEntry, why: str) -> None:
    """An Undo given up before its time: its stash freed, the entry expired with why,
    and an audit row (action ``undo_given_up``)."""
    where = resolve(e.connection, e.namespace)
    where.rsmq.drop_undo(e.token)
    now = timezone.now()
    if not UndoEntry.objects.filter(pk=e.pk, undone_at__isnull=True).update(
        expires=now, result={"given_up": True, "why": why}
    ):
        return
    audit.write(
        where, "undo_given_up", AuditEntry.Outcome.OK, actor="console", queue=e.queue,
        count=e.count, params={"token": e.token, "undid": e.action, "of": e.audit_id,
                               "bytes": e.bytes},
        detail=f"Gave up the Undo of the {e.action.replace('_', ' ')} of {e.queue} "
               f"({e.count} messages, {e.bytes:,} bytes) before its time: {why}.",
    )  # fmt: skip


def discard(place: Place, kept: Keep | None) -> None:
    """A stash its action left empty (it failed, or removed nothing) is forgotten now."""
    if kept is not None and kept.token is not None:
        place.rsmq.discard_undo(kept.token)


def entry(place: Place, token: str) -> UndoEntry | None:
    return UndoEntry.objects.filter(
        token=token, connection=place.conn.name, namespace=place.ns
    ).first()


#: what an Undo's answer calls the action it undoes, where its name is no verb
WHAT = {
    "delete_group": "the delete of a failure group from {queue}",
    "retry_group": "the retry of dead letters from {queue}",
    "deliver_matches": "the delivery now of delayed messages of {queue}",
    "shift_matches": "the shift of delayed messages of {queue}",
    "spread_matches": "the spread of delayed messages of {queue}",
}
#: the rescheduling jobs' audit names: their Undo puts times back, not messages
RESCHEDULED = ("deliver_matches", "shift_matches", "spread_matches")


class Skipped(TypedDict):
    """Messages an Undo left out, never duplicated: by why (queues.models.Restored)."""

    present: int
    gone: int
    taken: int
    foreign: int


class UndoParams(TypedDict, total=False):
    """What an Undo's audit row keeps, and its UndoEntry's ``result``: the stash's token,
    the action it undid and that action's audit row (``of``); then what came of it —
    ``already`` / ``expired`` / ``missing``, or what it restored and skipped (counts, and
    the first ids of each)."""

    token: str
    undid: str
    of: int | None
    already: bool
    expired: bool
    missing: bool
    restored: int
    skipped: Skipped
    present_ids: list[str]
    gone_ids: list[str]
    taken_ids: list[str]
    foreign_ids: list[str]
    whole_queue: bool
    recreated: bool


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an Undo did, in words and as the audit row's params; ``done``: nothing is left
    to undo (restored, already undone, or expired)."""

    text: str
    count: int
    params: UndoParams
    done: bool


def undo(place: Place, e: UndoEntry, who: str) -> Outcome:
    """Put back what ``e`` kept: once (a second Undo says it was done), never after it
    expired."""
    what = WHAT.get(e.action, "the {action} of {queue}").format(
        action=e.action.replace("_", " "), queue=e.queue
    )
    base: UndoParams = {"token": e.token, "undid": e.action, "of": e.audit_id}
    if e.undone_at is not None:
        when = timezone.localtime(e.undone_at).strftime("%Y-%m-%d %H:%M:%S %Z")
        text = f"Already undone: {what} was undone at {when} by {e.undone_by}. Nothing to do."
        return Outcome(text, 0, {**base, "already": True}, True)
    expired = Outcome(
        f"The undo of {what} expired: nothing is kept.", 0, {**base, "expired": True}, True
    )
    if e.expired:
        return expired
    try:
        r = place.rsmq.undo(e.token)
    except UndoNotFound:
        return expired
    if r.missing:
        text = f"Queue {e.queue} is gone: create it again, then Undo ({what})."
        return Outcome(text, 0, {**base, "missing": True}, False)
    params: UndoParams = {**base, **_counts(r)}
    with transaction.atomic():
        UndoEntry.objects.filter(pk=e.pk, undone_at__isnull=True).update(
            undone_at=timezone.now(), undone_by=who[:150], result=params
        )
    return Outcome(_words(what, e, r), r.restored, params, True)


def _counts(r: Restored) -> UndoParams:
    return {
        "restored": r.restored,
        "skipped": {
            "present": r.present,
            "gone": r.gone,
            "taken": r.taken,
            "foreign": r.foreign,
        },  # fmt: skip
        "present_ids": list(r.present_ids),
        "gone_ids": list(r.gone_ids),
        "taken_ids": list(r.taken_ids),
        "foreign_ids": list(r.foreign_ids),
        "whole_queue": r.whole_queue,
        "recreated": r.recreated,
        "already": r.already,
    }


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _words(what: str, e: UndoEntry, r: Restored) -> str:
    if r.already:
        return f"Already undone: {what}. Nothing to do."
    if r.whole_queue:
        text = (
            f"Undid {what}: queue {e.queue} is back with its attributes, totals and "
            f"{_plural(r.restored, 'message')}."
        )
    elif r.recreated:
        text = (
            f"Undid {what}: {e.queue} had been created again, so its new attributes stay; "
            f"put back {_plural(r.restored, 'message')} into it."
        )
    elif e.action in RESCHEDULED:
        text = f"Undid {what}: {_plural(r.restored, 'message')} back at their times."
    else:
        text = f"Undid {what}: put back {_plural(r.restored, 'message')}."
    if e.action in RESCHEDULED:
        skipped = [f"{r.gone} no longer in the queue"] if r.gone else []
        if r.taken:
            skipped.append(f"{r.taken} received or moved since")
        if skipped:
            text += f" Left {', '.join(skipped)} as {'it is' if r.skipped == 1 else 'they are'}."
        return text
    skipped = []
    if r.present:
        skipped.append(f"{r.present} whose id is in the queue again")
    if r.gone:
        skipped.append(f"{r.gone} no longer where {'it' if r.gone == 1 else 'they'} went")
    if r.taken:
        skipped.append(f"{r.taken} received since where {'it' if r.taken == 1 else 'they'} went")
    if r.foreign:
        them = "it" if r.foreign == 1 else "them"
        skipped.append(
            f"{r.foreign} whose id no RSMQ client makes (putting {them} back would break"
            " the queue again)"
        )
    if skipped:
        text += f" Skipped {', '.join(skipped)} (not duplicated)."
    return text
