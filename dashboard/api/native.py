"""The API's actions, on the console's own terms: each is a row of the console's action table
(dashboard/acting/actions.py), so it needs the same role and is audited
under the same name; it calls the same queues/ operation with the same validation.

Every route is served twice: ``/api/…`` (the first connection's first namespace) and
``/api/c/<conn>/<ns>/…``, like the read API and the pages."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from ninja import Router, Schema, Status
from pydantic import Field

from dashboard.access.bodies import access
from dashboard.access.callers import Caller, caller
from dashboard.access.guard import destination, held_at
from dashboard.access.roles import Action
from dashboard.acting import exports
from dashboard.acting.exports import IMPORT_MAX_BYTES
from dashboard.api import calls, reads
from dashboard.api import operations as ops
from dashboard.api.bodies import Known
from dashboard.api.calls import RANGES, BadInput
from dashboard.api.routes import Plain, register
from dashboard.places import place as places
from dashboard.places.place import Place
from queues import validation as v
from queues.models import Message

router = Router(tags=["actions"])


def both(
    method: str | list[str], path: str, action: Action | None, name: str, **kwargs: Any
) -> Any:
    """A route of this router, at ``/api/…`` and ``/api/c/<conn>/<ns>/…``."""
    return register(router, method, path, action, name, **kwargs)


# -- schemas ---------------------------------------------------------------------------

SECONDS = f"seconds, 0 to {v.MAX_SECONDS}"


class Error(Schema):
    error: str = Field(description="what went wrong, naming the field and its allowed values")


class MessageOut(Schema):
    id: str
    message: str
    rc: int = Field(description="how often it was received")
    fr: int = Field(description="its first receive, epoch ms")
    sent: float | None = Field(
        description="when it was sent, epoch ms; null: unknown (its id has no time in it)"
    )


class CreateIn(Known):
    vt: int = Field(default=30, description=SECONDS)
    delay: int = Field(default=0, description=SECONDS)
    maxsize: int = Field(
        default=65536, description=f"bytes, {v.MAXSIZE_MIN} to {v.MAXSIZE_MAX}, or -1"
    )


class SendIn(Known):
    message: str | None = Field(default=None, description="one message (or give messages)")
    messages: list[str] | None = Field(
        default=None, description=f"a batch of 1 to {v.MAX_SEND_BATCH}: all sent, or none"
    )
    delay: int | None = Field(default=None, description=f"{SECONDS}; none: the queue's delay")


class SentOut(Schema):
    id: str | None = Field(default=None, description="the message's id (one message)")
    ids: list[str] | None = Field(default=None, description="the ids, in order (a batch)")


class ReceiveIn(Known):
    n: int = Field(default=1, description=f"up to this many messages, 1 to {v.MAX_BATCH}")
    vt: int | None = Field(default=None, description=f"{SECONDS}; none: the queue's vt")


class ReceivedOut(Schema):
    messages: list[MessageOut]


class VisibilityIn(Known):
    vt: int = Field(description=f"visible again in {SECONDS}")


class IdsIn(Known):
    ids: list[str] = Field(description=f"message ids, 1 to {v.MAX_BATCH}")


class MoveIn(IdsIn):
    to: str = Field(description="the queue they go to")
    keep_counts: bool = Field(
        False, description="keep their receive count (default: they start with a fresh one)"
    )


class ResendIn(Known):
    message: str = Field(description="the edited body, sent as a new message")
    to: str | None = Field(default=None, description="the queue it goes to; none: this queue")
    delete_original: bool = Field(
        default=False, description="delete the original in the same atomic step"
    )
    delay: int | None = Field(default=None, description=f"{SECONDS}; none: the target's delay")


class ResentOut(Schema):
    id: str = Field(description="the new message's id")


class ExportLine(Schema):
    """One line of an export (JSON Lines: one such object a line, in queue order)."""

    id: str
    body: str
    rc: int = Field(description="how often it was received")
    fr: int = Field(description="its first receive, epoch ms (0: never)")
    sent: float | None = Field(description="when it was sent, epoch ms; null: unknown")
    visible_at: int = Field(description="when it is (or was) visible, epoch ms")
    delay_ms: int = Field(description="how long after the export it was due (0: visible)")
    state: str = Field(description="visible, inflight or delayed")


class SkippedLine(Schema):
    line: int
    id: str | None
    why: str


class ImportOut(Schema):
    lines: int = Field(description="messages the file held")
    imported: int = Field(description="messages written")
    skipped: int = Field(description="messages not written: their kept id was in the queue")
    skipped_lines: list[SkippedLine] = Field(description="the first 20 skipped")
    batches: int = Field(description="atomic batches written")
    first_id: str | None = Field(description="the first message written")
    last_id: str | None = Field(description="the last message written")


class CountOut(Schema):
    count: int = Field(description="how many messages it changed")


class KeptOut(Schema):
    count: int = Field(description="how many messages it changed")
    undo: str | None = Field(
        description="the token to POST /api/undo/{token}/ (an admin's) to put back what it "
        "removed, exactly, for RSMQ_UNDO_HOURS; null: nothing was kept (see undo_why)"
    )
    undo_why: str = Field(
        description="why nothing was kept (past RSMQ_UNDO_MAX_MB, undo off, or nothing "
        "removed); empty when undo is a token"
    )


class DoneOut(Schema):
    result: bool = Field(description="false: the message was not there (gone, or never)")


class SkippedOut(Schema):
    present: int = Field(description="their id was in the queue again: not duplicated")
    gone: int = Field(description="moved elsewhere, and no longer there")
    taken: int = Field(description="moved elsewhere, and received there since")
    foreign: int = Field(
        0, description="an id no RSMQ client makes (a queue field's name): never put back"
    )


class UndoOut(Schema):
    text: str = Field(description="what it did, in words (as the console says it)")
    restored: int = Field(description="messages put back exactly: id, body, rc, fr, score")
    skipped: SkippedOut
    present_ids: list[str] = Field(description="the first 100 skipped as present")
    gone_ids: list[str] = Field(description="the first 100 skipped as gone")
    taken_ids: list[str] = Field(description="the first 100 skipped as taken")
    already: bool = Field(description="it had been undone before: nothing done now")
    expired: bool = Field(description="its time is past: nothing is kept, nothing done")
    missing: bool = Field(description="the queue is gone: create it, then undo again")
    whole_queue: bool = Field(description="a deleted queue came back whole")
    recreated: bool = Field(
        description="the deleted queue had been created again: its new attributes stay"
    )


ERRORS: dict[int, type[Schema]] = {
    400: Error, 401: Error, 403: Error, 404: Error, 409: Error, 429: Error, 503: Error
}  # fmt: skip


def message_json(m: Message) -> dict[str, Any]:
    return {"id": m.id, "message": m.message, "rc": m.rc, "fr": m.fr, "sent": m.sent}


# -- reading (a token of any role, RSMQ_METRICS_TOKEN or a viewer's session) ------------


@both(
    ["GET", "HEAD"], "/queues/", None, "list_queues", tags=["read"],
    response={200: reads.QueueList, **ERRORS},
)  # fmt: skip
def list_queues(
    request: HttpRequest, q: str = "", conn: str | None = None, ns: str | None = None
) -> HttpResponse:
    """Every queue (``q`` filters by name) with counts, attributes and current rates."""
    return reads.queue_list(request, places.resolve(conn, ns))


@both(
    ["GET", "HEAD"], "/queues/{qname}/", None, "describe_queue", tags=["read"],
    response={200: reads.QueueDetail, **ERRORS},
)  # fmt: skip
def describe_queue(
    request: HttpRequest,
    qname: str,
    range: str = "hour",
    conn: str | None = None,
    ns: str | None = None,
) -> HttpResponse:
    """One queue: counts, attributes, and its snapshots over ``range`` (hour, day, week)."""
    return reads.queue_detail(request, places.resolve(conn, ns), qname)


@both(
    ["GET", "HEAD"], "/queues/{qname}/failures/", None, "queue_failures", tags=["read"],
    response={200: reads.FailureGroupsOut | reads.FailureHistoryOut, **ERRORS},
)  # fmt: skip
def queue_failures(
    request: HttpRequest,
    qname: str,
    id: str | None = None,
    conn: str | None = None,
    ns: str | None = None,
) -> HttpResponse:
    """Why its messages failed (what the worker recorded): the groups by error type over
    retrying and dead-lettered messages; with ``id``, that message's history."""
    return reads.failing(request, places.resolve(conn, ns), qname)


@both(
    ["GET", "HEAD"], "/queues/{qname}/messages/", None, "queue_messages", tags=["read"],
    response={200: reads.MessagesOut, **ERRORS},
)  # fmt: skip
def queue_messages(
    request: HttpRequest,
    qname: str,
    state: str = "all",
    rc: str = "",
    search: str = "",
    where: str = "",
    older: str = "",
    younger: str = "",
    after: str = "",
    limit: str = "",
    preview: str = "",
    conn: str | None = None,
    ns: str | None = None,
) -> HttpResponse:
    """The messages a filter matches, as on the queue page: ``state``, ``rc`` (received
    at least), ``search`` (body contains), ``where`` (JSON fields: ``amount > 100 and
    status in (failed, retry)``), ``older`` / ``younger`` (sent more / less than N
    minutes ago); ``after``: the previous answer's ``next``."""
    return reads.messages(request, places.resolve(conn, ns), qname)


# -- queues ----------------------------------------------------------------------------


@both("PUT", "/queues/{qname}/", ops.CREATE, "create_queue", response={201: DoneOut, **ERRORS})
def create_queue(
    request: HttpRequest,
    qname: str,
    body: CreateIn | None = None,
    conn: str | None = None,
    ns: str | None = None,
) -> Status[dict[str, bool]]:
    """Create the queue (admin); no body: vt 30, delay 0, maxsize 65536. 409 if it exists."""
    b = body or CreateIn()
    ops.create_queue(caller(request), places.resolve(conn, ns), qname, b.vt, b.delay, b.maxsize)
    return Status(201, {"result": True})


@both("DELETE", "/queues/{qname}/", ops.DELETE_QUEUE, "delete_queue",
      response={200: KeptOut, **ERRORS})  # fmt: skip
def delete_queue(
    request: HttpRequest, qname: str, conn: str | None = None, ns: str | None = None
) -> dict[str, Any]:
    """Delete the queue and every message in it (admin); ``count``: the messages gone;
    ``undo``: the token that brings it back whole."""
    n, kept = ops.delete_queue(caller(request), places.resolve(conn, ns), qname)
    return {"count": n, **ops.undo_answer(kept)}


@both("POST", "/queues/{qname}/purge/", ops.PURGE, "purge_queue", response={200: KeptOut, **ERRORS})
def purge_queue(
    request: HttpRequest, qname: str, conn: str | None = None, ns: str | None = None
) -> dict[str, Any]:
    """Delete every message, keep the queue, its attributes and totals (admin); ``undo``:
    the token that puts them back."""
    n, kept = ops.purge_queue(caller(request), places.resolve(conn, ns), qname)
    return {"count": n, **ops.undo_answer(kept)}


@both("POST", "/undo/{token}/", ops.UNDO, "undo", response={200: UndoOut, **ERRORS})
def undo(
    request: HttpRequest, token: str, conn: str | None = None, ns: str | None = None
) -> dict[str, Any]:
    """Put back what a destructive action kept for its Undo (its token: the console's
    answer and audit log show it), once; audited as ``undo`` (admin)."""
    place = places.resolve(conn, ns)
    text, p = ops.undo(caller(request), place, token,
                       lambda q: held_at(request, place.conn.name, place.ns, q))  # fmt: skip
    skipped = p.get("skipped") or {"present": 0, "gone": 0, "taken": 0, "foreign": 0}
    flags = ("already", "expired", "missing", "whole_queue", "recreated")
    return {
        "text": text, "restored": p.get("restored", 0), "skipped": skipped,
        "present_ids": p.get("present_ids", []), "gone_ids": p.get("gone_ids", []),
        "taken_ids": p.get("taken_ids", []), **{f: bool(p.get(f)) for f in flags},
    }  # fmt: skip


# -- the data plane: plain calls, answered by the fast path too (api/routes.py) ---------


def _send(who: Caller, place: Place, path: dict[str, str], body: SendIn, query: Any) -> Any:
    if body.messages is not None and body.message is None:
        if not body.messages:
            raise BadInput(f"messages must be {RANGES['messages']}")
        return ops.send_call(who, place, path["qname"], body.messages, body.delay)
    if body.message is None or body.messages is not None:
        raise BadInput("Give message (one message) or messages (a batch): one of the two")
    return ops.send_call(who, place, path["qname"], [body.message], body.delay)


SEND = Plain(
    _send,
    lambda body, ids: (201, {"ids": ids} if body.messages is not None else {"id": ids[0]}),
    SendIn,
)


@both(
    "POST", "/queues/{qname}/messages/", ops.SEND, "send", plain=SEND,
    response={201: SentOut, **ERRORS}, exclude_none=True,
)  # fmt: skip
def send(
    request: HttpRequest, qname: str, body: SendIn, conn: str | None = None, ns: str | None = None
) -> Status[Any]:
    """Send one message (``message``) or a batch (``messages``, all or none) (operator)."""
    return SEND.run(request, conn, ns, {"qname": qname}, body)


RECEIVE = Plain(
    lambda who, place, path, body, query: ops.receive_call(
        who, place, path["qname"], (body or ReceiveIn()).n, (body or ReceiveIn()).vt
    ),
    lambda body, got: (200, {"messages": [message_json(m) for m in got]}),
    ReceiveIn,
    optional=True,
)


@both("POST", "/queues/{qname}/receive/", ops.RECEIVE, "receive", plain=RECEIVE,
      response={200: ReceivedOut, **ERRORS})  # fmt: skip
def receive(
    request: HttpRequest,
    qname: str,
    body: ReceiveIn | None = None,
    conn: str | None = None,
    ns: str | None = None,
) -> Status[Any]:
    """Receive up to ``n`` visible messages, hidden for ``vt`` s (operator); no body: one,
    hidden for the queue's vt."""
    return RECEIVE.run(request, conn, ns, {"qname": qname}, body)


DELETE = Plain(
    lambda who, place, path, body, query: ops.delete_call(
        who, place, path["qname"], path["msg_id"]
    ),
    lambda body, done: (200, {"result": done}),
)


@both("DELETE", "/queues/{qname}/messages/{msg_id}/", ops.DELETE, "delete_message",
      plain=DELETE, response={200: DoneOut, **ERRORS})  # fmt: skip
def delete_message(
    request: HttpRequest, qname: str, msg_id: str, conn: str | None = None, ns: str | None = None
) -> Status[Any]:
    """Delete one message (operator); ``result`` false: it was not there."""
    return DELETE.run(request, conn, ns, {"qname": qname, "msg_id": msg_id})


VISIBILITY = Plain(
    lambda who, place, path, body, query: ops.visibility_call(
        who, place, path["qname"], path["msg_id"], body.vt
    ),
    lambda body, done: (200, {"result": done}),
    VisibilityIn,
)


@both("POST", "/queues/{qname}/messages/{msg_id}/visibility/", ops.VISIBILITY,
      "change_visibility", plain=VISIBILITY, response={200: DoneOut, **ERRORS})  # fmt: skip
def change_visibility(
    request: HttpRequest,
    qname: str,
    msg_id: str,
    body: VisibilityIn,
    conn: str | None = None,
    ns: str | None = None,
) -> Status[Any]:
    """Make one message visible again in ``vt`` s (operator); false: it was not there."""
    return VISIBILITY.run(request, conn, ns, {"qname": qname, "msg_id": msg_id}, body)


# -- acting on messages --------------------------------------------------------------


@both(
    "POST", "/queues/{qname}/requeue/", ops.REQUEUE, "requeue", response={200: CountOut, **ERRORS}
)
def requeue(
    request: HttpRequest, qname: str, body: IdsIn, conn: str | None = None, ns: str | None = None
) -> dict[str, int]:
    """Make these messages visible now, their receive counts kept (operator)."""
    return {"count": ops.requeue(caller(request), places.resolve(conn, ns), qname, body.ids)}


@both("POST", "/queues/{qname}/move/", ops.MOVE, "move", response={200: KeptOut, **ERRORS})
def move(
    request: HttpRequest, qname: str, body: MoveIn, conn: str | None = None, ns: str | None = None
) -> dict[str, Any]:
    """Move these messages to queue ``to`` (operator); ``count``: how many went; ``undo``:
    the token that takes them back (an admin's)."""
    place = places.resolve(conn, ns)
    destination(request, place, body.to)
    n, kept = ops.move(caller(request), place, qname, body.ids, body.to, body.keep_counts)
    return {"count": n, **ops.undo_answer(kept)}


@both(
    "POST", "/queues/{qname}/messages/{msg_id}/resend/", ops.RESEND, "resend_message",
    response={201: ResentOut, **ERRORS},
)  # fmt: skip
def resend_message(
    request: HttpRequest,
    qname: str,
    msg_id: str,
    body: ResendIn,
    conn: str | None = None,
    ns: str | None = None,
) -> Status[dict[str, str]]:
    """Edit and re-send (operator): ``message`` goes to ``to`` (default: this queue) as a
    new message; with ``delete_original`` the original is deleted in the same atomic step
    (404, nothing sent, when it is gone meanwhile). The audit row keeps both bodies (the
    first 64 KB of each)."""
    place = places.resolve(conn, ns)
    destination(request, place, body.to or qname)
    new = ops.resend(
        caller(request), place, qname, msg_id, body.message, body.to, body.delete_original,
        body.delay,
    )  # fmt: skip
    return Status(201, {"id": new})


FILTER_QUERY = (
    "the queue page's filter, as its URL has it (dashboard/acting/message_filter.py): state"
    " (all, visible, hidden, inflight, delayed), rc (received at least), search (body"
    " contains), where (JSON fields: amount > 100 and status in (failed, retry)), older /"
    " younger (sent more / less than N minutes ago), error / error_text / attempt (the last"
    " recorded failure's type, a text in its error line, its attempt at least)"
)


@both(
    "GET", "/queues/{qname}/export/", ops.EXPORT, "export_messages",
    response={200: ExportLine, **ERRORS},
    openapi_extra={"responses": {200: {
        "description": "JSON Lines, streamed: one ExportLine a line (no Content-Length)",
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
    }}},
)  # fmt: skip
def export_messages(
    request: HttpRequest, qname: str, conn: str | None = None, ns: str | None = None
) -> HttpResponseBase:
    """Export (viewer): the messages of a state or of a filter's matches as JSON Lines
    (one ExportLine each), streamed; the query is the queue page's filter."""
    place = places.resolve(conn, ns)
    return ops.export(caller(request), place, qname, request.GET, access(request, place, qname))


@both(
    "POST", "/queues/{qname}/import/", ops.IMPORT, "import_messages",
    response={200: ImportOut, **ERRORS, 413: Error},
    openapi_extra={"requestBody": {
        "required": True,
        "description": f"an export's JSON Lines, at most {IMPORT_MAX_BYTES:,} bytes (larger:"
        " `rsmq message import`)",
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
    }},
)  # fmt: skip
def import_messages(
    request: HttpRequest,
    qname: str,
    keep_ids: bool = False,
    conn: str | None = None,
    ns: str | None = None,
) -> exports.ImportReport | HttpResponse:
    """Import (operator): each line of an export as a message — new ids (rc 0) unless
    ``keep_ids`` (ids, rc and fr kept; an id already in the queue skipped), relative delays
    kept — checked first (a bad line: 400 naming it by number, nothing written), then
    written in atomic batches; the answer reports exactly what was written. A body over
    the server's limit (DATA_UPLOAD_MAX_MEMORY_SIZE): 413."""
    place = places.resolve(conn, ns)
    try:
        data = request.body
    except RequestDataTooBig:
        size = int(request.META["CONTENT_LENGTH"])
        return calls.error(413, str(exports.too_large(size)), request)
    return ops.import_lines(caller(request), place, qname, data, keep_ids)
