"""rest-rsmq's routes (smrchy/rest-rsmq, its README), so that its clients can point at
``/api/rest-rsmq/`` (or ``/api/c/<conn>/<ns>/rest-rsmq/``) instead of an unauthenticated
Node server: the same paths, request bodies and answers, plus a token, the console's
roles, audit log and errors. Each route runs the same operation as native.py's."""

from __future__ import annotations

from typing import Any, ClassVar

from django.http import HttpRequest
from ninja import Router, Schema, Status
from pydantic import Field

from dashboard.access import grants
from dashboard.access.callers import caller
from dashboard.access.roles import Action
from dashboard.api import native
from dashboard.api import operations as ops
from dashboard.api.bodies import Known
from dashboard.api.calls import BadInput, queue_in_url
from dashboard.api.routes import Plain, register
from dashboard.places import place as places

router = Router(tags=["rest-rsmq"])


def route(method: str, path: str, action: Action | None, name: str, **kwargs: Any) -> Any:
    """A route of rest-rsmq's, at ``/api/rest-rsmq/…`` and ``/api/c/<conn>/<ns>/rest-rsmq/…``."""
    return register(router, method, path, action, f"rest_rsmq_{name}",
                    ("/rest-rsmq", "/c/{conn}/{ns}/rest-rsmq"), **kwargs)  # fmt: skip


class Result(Schema):
    result: int = Field(description="1: done; 0: the message was not there")


class Queues(Schema):
    queues: list[str]


class Attributes(Schema):
    vt: int
    delay: int
    maxsize: int
    totalrecv: int
    totalsent: int
    created: int
    modified: int
    msgs: int
    hiddenmsgs: int


class Sent(Schema):
    id: str


class Strict(Known):
    """A body field we don't know is refused (400 naming it), never ignored; ``qname``
    (its README lists it) may repeat the path's."""

    hidden_fields: ClassVar[frozenset[str]] = frozenset({"qname"})
    qname: str | None = None


class Received(Schema):
    """The message, or no field at all when none is visible (rest-rsmq answers ``{}``)."""

    id: str | None = None
    message: str | None = None
    rc: int | None = Field(default=None, description="how often it was received")
    fr: int | None = Field(default=None, description="its first receive, epoch ms")
    sent: float | None = Field(default=None, description="when it was sent, epoch ms")


class SendIn(Strict):
    message: str
    delay: int | None = None


class CreateIn(Strict):
    vt: int = 30
    delay: int = 0
    maxsize: int = 65536


def same_queue(qname: str, body: Strict | None) -> str:
    if body is not None and body.qname is not None and body.qname != qname:
        raise BadInput(f"qname is {body.qname!r} in the body but {qname!r} in the path")
    return qname


ERRORS = native.ERRORS


@route("GET", "/queues", None, "list_queues", response={200: Queues, **ERRORS})
def list_queues(
    request: HttpRequest, conn: str | None = None, ns: str | None = None
) -> dict[str, Any]:
    """listQueues."""
    place = places.resolve(conn, ns)
    return {"queues": grants.visible(request, place, place.rsmq.list_queues())}


@route("GET", "/queues/{qname}", None, "get_queue_attributes", response={200: Attributes, **ERRORS})
def get_queue_attributes(
    request: HttpRequest, qname: str, conn: str | None = None, ns: str | None = None
) -> dict[str, Any]:
    """getQueueAttributes."""
    a = places.resolve(conn, ns).rsmq.get_queue_attributes(queue_in_url(qname))
    return {k: getattr(a, k) for k in Attributes.model_fields}


@route("POST", "/queues/{qname}", ops.CREATE, "create_queue", response={200: Result, **ERRORS})
def create_queue(
    request: HttpRequest,
    qname: str,
    body: CreateIn | None = None,
    conn: str | None = None,
    ns: str | None = None,
) -> dict[str, int]:
    """createQueue."""
    b = body or CreateIn()
    place = places.resolve(conn, ns)
    ops.create_queue(caller(request), place, same_queue(qname, b), b.vt, b.delay, b.maxsize)
    return {"result": 1}


@route(
    "DELETE", "/queues/{qname}", ops.DELETE_QUEUE, "delete_queue", response={200: Result, **ERRORS}
)
def delete_queue(
    request: HttpRequest, qname: str, conn: str | None = None, ns: str | None = None
) -> dict[str, int]:
    """deleteQueue."""
    ops.delete_queue(caller(request), places.resolve(conn, ns), qname)
    return {"result": 1}


SEND = Plain(
    lambda who, place, path, body, query: ops.send_call(
        who, place, same_queue(path["qname"], body), [body.message], body.delay
    ),
    lambda body, ids: (200, {"id": ids[0]}),
    SendIn,
)


@route("POST", "/messages/{qname}", ops.SEND, "send_message", plain=SEND,
       response={200: Sent, **ERRORS})  # fmt: skip
def send_message(
    request: HttpRequest, qname: str, body: SendIn, conn: str | None = None, ns: str | None = None
) -> Status[Any]:
    """sendMessage."""
    return SEND.run(request, conn, ns, {"qname": qname}, body)


RECEIVE = Plain(
    lambda who, place, path, body, query: ops.receive_call(
        who, place, path["qname"], 1, query.get("vt")
    ),
    lambda body, got: (200, native.message_json(got[0]) if got else {}),
    query={"vt": int | None},
)


@route("GET", "/messages/{qname}", ops.RECEIVE, "receive_message", plain=RECEIVE,
       response={200: Received, **ERRORS}, exclude_unset=True)  # fmt: skip
def receive_message(
    request: HttpRequest,
    qname: str,
    vt: int | None = None,
    conn: str | None = None,
    ns: str | None = None,
) -> Status[Any]:
    """receiveMessage: the message, or ``{}`` when none is visible."""
    return RECEIVE.run(request, conn, ns, {"qname": qname}, query={"vt": vt})


RESULT = Plain(
    lambda who, place, path, body, query: ops.delete_call(
        who, place, path["qname"], path["msg_id"]
    ),
    lambda body, done: (200, {"result": int(done)}),
)


@route("DELETE", "/messages/{qname}/{msg_id}", ops.DELETE, "delete_message", plain=RESULT,
       response={200: Result, **ERRORS})  # fmt: skip
def delete_message(
    request: HttpRequest, qname: str, msg_id: str, conn: str | None = None, ns: str | None = None
) -> Status[Any]:
    """deleteMessage."""
    return RESULT.run(request, conn, ns, {"qname": qname, "msg_id": msg_id})


VISIBILITY = Plain(
    lambda who, place, path, body, query: ops.visibility_call(
        who, place, path["qname"], path["msg_id"], query["vt"]
    ),
    lambda body, done: (200, {"result": int(done)}),
    query={"vt": int},
)


def change_message_visibility(
    request: HttpRequest,
    qname: str,
    msg_id: str,
    vt: int,
    conn: str | None = None,
    ns: str | None = None,
) -> Status[Any]:
    """changeMessageVisibility (its README says /message/, its server /messages/: both)."""
    return VISIBILITY.run(request, conn, ns, {"qname": qname, "msg_id": msg_id}, query={"vt": vt})


VISIBILITY_PATHS = {
    "/message/{qname}/{msg_id}": "change_message_visibility",
    "/messages/{qname}/{msg_id}": "change_message_visibility_plural",
}
for _path, _name in VISIBILITY_PATHS.items():
    route("PUT", _path, ops.VISIBILITY, _name, plain=VISIBILITY,
          response={200: Result, **ERRORS})(change_message_visibility)  # fmt: skip
