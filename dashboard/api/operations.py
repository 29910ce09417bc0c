"""The API's actions, each once: the queues/ operation it calls and what its audit row
keeps (the role it needs and its name in the audit log are the route's Action, from
dashboard/acting/actions.py). native.py and rest_rsmq.py shape their answers."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from django.http import Http404, QueryDict, StreamingHttpResponse

from dashboard.access import bodies, tokens
from dashboard.access.callers import Caller, Refused
from dashboard.access.grants import refusal
from dashboard.access.roles import Role
from dashboard.acting import exports
from dashboard.acting import undo as undos
from dashboard.acting.actions import CREATE_QUEUE, MESSAGE_ACTIONS, QUEUE_ACTIONS
from dashboard.acting.actions import EXPORT as EXPORT
from dashboard.acting.actions import RECEIVE as RECEIVE
from dashboard.acting.message_filter import FilterError, body_refusal, checked
from dashboard.api.calls import queue_in_url, raising, run
from dashboard.audit import drain
from dashboard.audit.log import ResendParams, resend_bodies
from dashboard.models import AuditEntry
from dashboard.places.place import Place
from queues import InvalidArgument, QueueNotFound
from queues import validation as v
from queues.models import Message

CREATE = CREATE_QUEUE
SEND, REQUEUE, MOVE = QUEUE_ACTIONS["send"], QUEUE_ACTIONS["requeue"], QUEUE_ACTIONS["move"]
PURGE, DELETE_QUEUE = QUEUE_ACTIONS["purge"], QUEUE_ACTIONS["delete_queue"]
UNDO = QUEUE_ACTIONS["undo"]
DELETE, VISIBILITY = MESSAGE_ACTIONS["delete"], MESSAGE_ACTIONS["visibility"]
RESEND = MESSAGE_ACTIONS["resend"]
IMPORT = QUEUE_ACTIONS["import"]
#: audited by their own scripts, and counted against the token's rate by them too
COUNTED_BY_CALL = frozenset((SEND, RECEIVE, DELETE, VISIBILITY))


def create_queue(who: Caller, place: Place, qname: str, vt: int, delay: int, maxsize: int) -> None:
    """The name is what is created: a bad one is a 400 here, not a 404."""
    params = {"vt": vt, "delay": delay, "maxsize": maxsize}

    def work() -> tuple[None, None]:
        place.rsmq.create_queue(qname, vt=vt, delay=delay, maxsize=maxsize)
        return None, None

    run(who, place, qname, work, params=params)


def undo_answer(kept: undos.Keep) -> dict[str, Any]:
    """What a destructive route's answer says of its Undo: ``undo``, the token to
    ``POST /api/undo/{token}/`` (null when nothing was kept), and ``undo_why`` not."""
    return {"undo": kept.token, "undo_why": kept.why}


def delete_queue(who: Caller, place: Place, qname: str) -> tuple[int, undos.Keep]:
    """The messages it held, and its Undo (the whole queue kept, within the bound)."""
    queue_in_url(qname)
    kept = undos.keep(place, DELETE_QUEUE.audit_name, qname)

    def work() -> tuple[int, int]:
        # Its stats read even when its counters are spoiled, as the console does.
        stats = place.rsmq.queue_stats([qname])
        place.rsmq.delete_queue(qname, keep=kept.token)
        n = stats[0].msgs if stats else 0
        return n, n

    return run(who, place, qname, work, kept=kept), kept


def purge_queue(who: Caller, place: Place, qname: str) -> tuple[int, undos.Keep]:
    """The messages it deleted, and its Undo."""
    queue_in_url(qname)
    kept = undos.keep(place, PURGE.audit_name, qname)

    def work() -> tuple[int, int]:
        n = place.rsmq.purge_queue(qname, keep=kept.token)
        return n, n

    return run(who, place, qname, work, kept=kept), kept


class DataCall:
    """A data-plane call (send, receive, delete one, change visibility) made ready: the one
    operation it runs, audited by its own script (queues/console.py ``audited``: the
    token's count, the operation and its audit record in one atomic script), and how its
    reply becomes the answer. ``run`` in a thread (ninja's views), ``awaited`` in the
    server's event loop (the fast path): the same call either way."""

    __slots__ = ("who", "place", "qname", "name", "args", "shape", "ids", "params", "head")

    def __init__(
        self, who: Caller, place: Place, qname: str, name: str, args: tuple[Any, ...],
        shape: Callable[[Any], tuple[Any, int]], ids: list[str],
        params: dict[str, Any] | None = None,
    ) -> None:  # fmt: skip
        self.who, self.place, self.qname, self.name = who, place, qname, name
        self.args, self.shape, self.ids, self.params = args, shape, ids, params
        self.head = drain.head(place, who.action.audit_name, who.actor, qname, ids, params)

    def _work(self) -> tuple[Any, int]:
        return self.shape(self.place.rsmq.audited(self.head, self.who.rate, self.name, *self.args))

    def run(self) -> Any:
        return run(self.who, self.place, self.qname, self._work, self.ids, self.params,
                   audited=True)  # fmt: skip

    async def awaited(self) -> Any:
        """``run``'s answer, its round trip awaited on the place's pipelined client
        (``Place.aio``): the loop answers other calls meanwhile. Raises what the call
        raised — ApiRefused (nothing ran), an error its script recorded (``audited``), or
        one it never reached, which ``failed`` finishes."""
        reply = await self.place.aio.audited(self.head, self.who.rate, self.name, *self.args)
        drain.drain_soon(self.place)
        return self.shape(reply)[0]

    def failed(self, e: Exception) -> None:
        """In a thread: a call that failed in the event loop before its script ran,
        finished as ``run`` finishes it there (its row written); raises its answer."""
        run(self.who, self.place, self.qname, raising(e), self.ids, self.params, audited=True)


def send_call(
    who: Caller, place: Place, qname: str, messages: list[str], delay: int | None
) -> DataCall:
    """One message or an atomic batch (answer: their ids)."""
    queue_in_url(qname)
    params = {"delay": delay, "bytes": sum(len(m.encode()) for m in messages)}
    if len(messages) == 1:
        return DataCall(who, place, qname, "send_message", (qname, messages[0], delay),
                        lambda sent: ([sent], 1), [], params)  # fmt: skip
    return DataCall(who, place, qname, "send_messages", (qname, messages, delay),
                    lambda ids: (ids, len(ids)), [], params)  # fmt: skip


def receive_call(who: Caller, place: Place, qname: str, n: int, vt: int | None) -> DataCall:
    """Up to ``n`` messages (answer: a list of Message)."""
    queue_in_url(qname)
    got: list[str] = []
    # a consumer whose role may reveal the queue's bodies gets them as they are (no cost)
    masking = bodies.consumer(who.role, qname)

    def shape(reply: Any) -> tuple[list[Message], int]:
        ms: list[Message] = ([reply] if reply else []) if n == 1 else reply
        got.extend(m.id for m in ms)
        if masking is not None:
            ms = [dataclasses.replace(m, message=masking.mask(m.message)) for m in ms]
        return ms, len(ms)

    # n == 1: the original's receiveMessage (one message, its own script)
    name, args = (
        ("receive_message", (qname, vt)) if n == 1 else ("receive_messages", (qname, n, vt))
    )
    return DataCall(who, place, qname, name, args, shape, got, {"n": n, "vt": vt})


def delete_call(who: Caller, place: Place, qname: str, msg_id: str) -> DataCall:
    """Answer: False when it was not there."""
    queue_in_url(qname)
    return DataCall(who, place, qname, "delete_message", (qname, msg_id),
                    lambda ok: (ok, int(ok)), [msg_id])  # fmt: skip


def visibility_call(who: Caller, place: Place, qname: str, msg_id: str, vt: int) -> DataCall:
    """Answer: False when it was not there."""
    queue_in_url(qname)
    return DataCall(who, place, qname, "change_message_visibility", (qname, msg_id, vt),
                    lambda ok: (ok, int(ok)), [msg_id], {"vt": vt})  # fmt: skip


def _ids(ids: list[str]) -> list[str]:
    if not 1 <= len(ids) <= v.MAX_BATCH:
        raise InvalidArgument("ids", f"ids must hold 1 to {v.MAX_BATCH} message ids")
    for i in ids:
        v.message_id(i, "ids")
    return ids


def requeue(who: Caller, place: Place, qname: str, ids: list[str]) -> int:
    queue_in_url(qname)

    def work() -> tuple[int, int]:
        n = place.rsmq.requeue(qname, _ids(ids))
        return n, n

    return run(who, place, qname, work, ids=ids)


def move(
    who: Caller,
    place: Place,
    qname: str,
    ids: list[str],
    to: str,
    keep_counts: bool = False,
) -> tuple[int, undos.Keep]:
    """How many went, and the move's Undo (it keeps each as it was in ``qname``)."""
    queue_in_url(qname)
    try:
        kept = undos.keep(place, MOVE.audit_name, qname, ids=_ids(ids), to=v.qname(to, "to"))
    except InvalidArgument as e:  # refused (and audited) in work, below
        kept = undos.Keep(None, str(e))

    def work() -> tuple[int, int]:
        v.qname(to, "to")
        n = place.rsmq.move_messages(qname, to, _ids(ids), keep_counts=keep_counts, keep=kept.token)
        return n, n

    params = {"to": to, "keep_counts": keep_counts}
    return run(who, place, qname, work, ids=ids, params=params, kept=kept), kept


def resend(
    who: Caller,
    place: Place,
    qname: str,
    msg_id: str,
    body: str,
    to: str | None,
    delete_original: bool,
    delay: int | None,
) -> str:
    """Edit and re-send, as the message page does: the new message's id."""
    queue_in_url(qname)
    target = to or qname
    params: ResendParams = {"to": target, "delete_original": delete_original, "delay": delay}

    def work() -> tuple[str, int]:
        v.message_id(msg_id)
        original = place.rsmq.get_message(qname, msg_id)
        params["bodies"] = resend_bodies(original.message if original else None, body)
        new = place.rsmq.resend_message(
            qname, msg_id, body, to=target, delete_original=delete_original, delay=delay
        )
        params["new_id"] = new
        return new, 1

    return run(who, place, qname, work, ids=[msg_id], params=params)


def export(
    who: Caller, place: Place, qname: str, query: QueryDict, shown: bodies.Bodies
) -> StreamingHttpResponse:
    """The streamed JSON Lines of the query's filter (message_filter.checked: a bad field
    is a 400 naming it), each body as ``shown`` lets the caller read it; audited when it
    starts, its count written at its end."""
    queue_in_url(qname)
    params: dict[str, str] = {}  # the filter's URL query
    rows: list[AuditEntry] = []

    def work() -> tuple[StreamingHttpResponse, None]:
        try:
            flt = checked(query)
        except FilterError as e:
            raise InvalidArgument(e.field, str(e)) from None
        params.update(flt.query())
        params["bodies"] = exports.bodies_param(shown)
        refused = body_refusal(shown, flt)
        if refused:
            raise Refused(403, refused, who.action, who.actor)
        place.rsmq.get_queue_attributes(qname)  # a missing queue: 404 before any line
        return exports.export_response(place.rsmq, qname, flt, shown, rows), None

    return run(who, place, qname, work, params=params, rows=rows)


def import_lines(
    who: Caller, place: Place, qname: str, data: bytes, keep_ids: bool
) -> exports.ImportReport:
    """Every line checked (a bad one: 400 naming it by number, nothing written), then
    written in atomic batches: the report."""
    queue_in_url(qname)
    params: exports.ImportParams = {"keep_ids": keep_ids, "bytes": len(data)}

    def admit(n: int) -> None:
        """An import counts against the token's rate by its messages (the call was
        counted once already): refused past it, nothing written."""
        try:
            tokens.charge(who.token, n - 1)
        except tokens.RateLimited as e:
            raise Refused(429, str(e), who.action, who.actor, e.retry_after) from None

    def work() -> tuple[exports.ImportReport, int]:
        report = exports.import_file(place.rsmq, qname, data, keep_ids, admit)
        params["report"] = report
        return report, report["imported"]

    return run(who, place, qname, work, params=params)


def undo(
    who: Caller, place: Place, token: str, held: Callable[[str], Role]
) -> tuple[str, undos.UndoParams]:
    """Put back what an action kept (dashboard/acting/undo.py), as the console's Undo does: its
    words, and what its audit row keeps (restored, skipped). A token no action here
    kept, or one of a queue the caller may not see (``held``: its role at a queue): a
    404."""
    e = undos.entry(place, token) if undos.TOKEN_RE.fullmatch(token) else None
    role = Role.NONE
    if e is not None:
        try:
            role = held(e.queue)
        except QueueNotFound:
            e = None
    if e is None:
        raise Http404(f"No undo {token[:40]!r} here: no action kept one under this token.")
    reason = refusal(role, who.action.role)
    if reason:
        raise Refused(403, reason, who.action, who.actor)
    params: undos.UndoParams = {"token": e.token, "undid": e.action}

    def work() -> tuple[str, int]:
        done = undos.undo(place, e, who.actor)
        params.update(done.params)  # the audit row: what it restored and what it skipped
        return done.text, done.count

    return run(who, place, e.queue, work, params=params), params
