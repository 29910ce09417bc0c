"""rest-rsmq's own suite (smrchy/rest-rsmq, test/test.js, 14 tests), transcribed: the same
requests in its order, each checked as its test checks it (the test's name beside each),
against /api/rest-rsmq/ with an admin token — through Django's test client here, JSON and
form-encoded; tests/serve/test_rest_rsmq_suite_served.py sends them from Node as Node sends them.

And as served (dashboard/serving/app.py): a body without Content-Length (chunked) is read
whole before anything runs, within DATA_UPLOAD_MAX_MEMORY_SIZE (413 past it, nothing
changed). A created queue takes every attribute it is given, or the call is refused
naming it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.test import Client
from support.asgi import console as served_console

from dashboard.access import tokens
from dashboard.serving.app import Console
from queues import RedisSMQ

BASE = "/api/rest-rsmq"
Q1 = "mytestQueue"
FORM = "application/x-www-form-urlencoded"


def admin_token() -> str:
    return tokens.mint("rest-rsmq-suite", "admin", "test", 10_000)[1]


class Answer:
    def __init__(self, status: int, body: bytes) -> None:
        self.status, self.body = status, body

    def json(self) -> Any:
        return json.loads(self.body)


Send = Callable[[str, str, "dict[str, Any] | None"], Answer]


def via_test_client(form: bool) -> Send:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {admin_token()}")

    def send(method: str, path: str, fields: dict[str, Any] | None = None) -> Answer:
        kwargs: dict[str, Any] = {}
        if fields is not None and form:
            kwargs = {"data": urlencode(fields), "content_type": FORM}
        elif fields is not None:
            kwargs = {"data": json.dumps(fields), "content_type": "application/json"}
        r = getattr(client, method.lower())(BASE + path, **kwargs)
        return Answer(r.status_code, r.content)

    return send


def via_asgi(form: bool, chunked: bool = True) -> Send:
    """As granian hands Node's requests over: the body in pieces, chunked (no
    Content-Length)."""
    served = served_console()
    token = admin_token()

    def send(method: str, path: str, fields: dict[str, Any] | None = None) -> Answer:
        full, _, query = (BASE + path).partition("?")
        headers: list[tuple[str, str]] = []
        raw = b""
        if fields is not None:
            raw = (urlencode(fields) if form else json.dumps(fields)).encode()
            headers.append(("content-type", FORM if form else "application/json"))
        pieces = [raw[i : i + 7] for i in range(0, len(raw), 7)] if chunked and raw else None
        a = served(method, full, raw, headers=headers, token=token, query=query, chunks=pieces)
        return Answer(a.status, a.body)

    return send


def run_the_suite(send: Send) -> None:
    """test/test.js, test by test (its names in the comments)."""
    # POST /queues/mytestQueue should return 200 and create the queue
    a = send("POST", f"/queues/{Q1}", {"vt": 20, "maxsize": 2048})
    assert a.status == 200, a.body
    assert a.json()["result"] == 1
    # POST /messages/mytestQueue should return 200 and send message 1
    a = send("POST", f"/messages/{Q1}", {"message": "Hello World!"})
    assert a.status == 200, a.body
    m1 = a.json()["id"]
    assert len(m1) == 32
    # POST /messages/mytestQueue should return 200 and send message 2
    a = send("POST", f"/messages/{Q1}", {"message": "Foo", "delay": 20})
    assert a.status == 200, a.body
    m2 = a.json()["id"]
    assert len(m2) == 32
    # GET /messages/mytestQueue should return message 1
    a = send("GET", f"/messages/{Q1}", None)
    assert (a.status, a.json()["id"]) == (200, m1)
    # GET /messages/mytestQueue should not return a message
    a = send("GET", f"/messages/{Q1}", None)
    assert a.status == 200 and a.json().get("id") is None
    # PUT /messages/mytestQueue/message2 to set vt to 0
    a = send("PUT", f"/messages/{Q1}/{m2}?vt=0", None)
    assert (a.status, a.json()["result"]) == (200, 1)
    # GET /messages/mytestQueue should return message 2
    a = send("GET", f"/messages/{Q1}", None)
    assert (a.status, a.json()["id"]) == (200, m2)
    # GET /messages/mytestQueue should not return a message
    a = send("GET", f"/messages/{Q1}", None)
    assert a.status == 200 and a.json().get("id") is None
    # DELETE /messages/mytestQueue/:message1 should delete message 1
    a = send("DELETE", f"/messages/{Q1}/{m1}", None)
    assert (a.status, a.json()["result"]) == (200, 1)
    # DELETE /messages/mytestQueue/:message1 should fail
    a = send("DELETE", f"/messages/{Q1}/{m1}", None)
    assert (a.status, a.json()["result"]) == (200, 0)
    # DELETE /messages/mytestQueue/:message2 should delete message 2
    a = send("DELETE", f"/messages/{Q1}/{m2}", None)
    assert (a.status, a.json()["result"]) == (200, 1)
    # GET /queues/mytestQueue should return our queue attributes
    a = send("GET", f"/queues/{Q1}", None)
    assert a.status == 200
    assert (a.json()["maxsize"], a.json()["totalsent"]) == (2048, 2)
    # GET /queues should return our queue name
    a = send("GET", "/queues", None)
    assert a.status == 200 and Q1 in a.json()["queues"]
    # DELETE /queues/mytestQueue should return 200
    assert send("DELETE", f"/queues/{Q1}", None).status == 200


@pytest.mark.django_db
@pytest.mark.parametrize("form", [False, True], ids=["json", "form"])
def test_rest_rsmqs_suite_through_the_test_client(console, rsmq: RedisSMQ, form: bool) -> None:
    run_the_suite(via_test_client(form))
    assert rsmq.list_queues() == []


# Django answers in the application's threads: a real transaction.
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "sized"])
@pytest.mark.parametrize("form", [False, True], ids=["json", "form"])
def test_rest_rsmqs_suite_as_served(console, rsmq: RedisSMQ, chunked: bool, form: bool) -> None:
    run_the_suite(via_asgi(form, chunked))
    assert rsmq.list_queues() == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "sized"])
def test_a_body_past_the_limit_is_413_and_changes_nothing(
    console, rsmq: RedisSMQ, settings, chunked: bool
) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    send = via_asgi(form=False, chunked=chunked)
    a = send("POST", f"/queues/{Q1}", {"vt": 20, "pad": "x" * 1000})
    assert a.status == 413 and "1000 bytes" in a.json()["error"]
    assert rsmq.list_queues() == []
    # within the limit, the same route reads it
    assert send("POST", f"/queues/{Q1}", {"vt": 20}).status == 200
    assert rsmq.get_queue_attributes(Q1).vt == 20


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "sized"])
def test_it_reads_no_more_than_the_limit_plus_one(settings, chunked: bool) -> None:
    """A body a client keeps sending is not read to its end: past the limit it is a 413
    (a declared length past it, before a byte is read), and the connection closed."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10
    app = Console(WSGIHandler(), 1, 5.0, settings.DATA_UPLOAD_MAX_MEMORY_SIZE, None)
    read: list[int] = []
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        read.append(4)
        return {"type": "http.request", "body": b"x" * 4, "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    length = [(b"transfer-encoding", b"chunked")] if chunked else [(b"content-length", b"1000")]
    scope = {"type": "http", "http_version": "1.1", "method": "POST", "path": "/api/x",
             "headers": length, "query_string": b""}  # fmt: skip
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 413 and (b"connection", b"close") in sent[0]["headers"]
    assert sum(read) == (12 if chunked else 0)


@pytest.mark.django_db
@pytest.mark.parametrize("form", [False, True], ids=["json", "form"])
def test_every_attribute_of_a_create_is_applied_or_refused(
    console, rsmq: RedisSMQ, form: bool
) -> None:
    send = via_test_client(form)
    a = send("POST", "/queues/q", {"vt": 20, "maxsize": 2048, "delay": 3, "qname": "q"})
    assert a.status == 200, a.body
    attrs = rsmq.get_queue_attributes("q")
    assert (attrs.vt, attrs.delay, attrs.maxsize) == (20, 3, 2048)
    a = send("POST", "/queues/r", {"vt": 20, "maxSize": 2048})
    assert a.status == 400
    assert a.json()["error"] == (
        "maxSize: not a field here (it takes vt, delay, maxsize); nothing changed"
    )
    a = send("POST", "/queues/r", {"vt": 20, "qname": "other"})
    assert (a.status, a.json()["error"]) == (
        400, "qname is 'other' in the body but 'r' in the path"
    )  # fmt: skip
    a = send("POST", "/messages/q", {"message": "hi", "dealy": 5})
    assert a.status == 400 and a.json()["error"].startswith("dealy: not a field here")
    assert rsmq.list_queues() == ["q"] and rsmq.get_queue_attributes("q").totalsent == 0
