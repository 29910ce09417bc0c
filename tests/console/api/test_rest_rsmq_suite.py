"""rest-rsmq's own suite (smrchy/rest-rsmq, test/test.js, 14 tests), transcribed: the same
requests in its order, each checked as its test checks it (the test's name beside each),
against /api/rest-rsmq/ with an admin token — through Django's test client here, JSON and
form-encoded; tests/serve/test_rest_rsmq_suite_served.py sends them from Node as Node sends them.

And the WSGI layer (dashboard/serving/chunked.py): a body without Content-Length is read when the
server ends it for us, within DATA_UPLOAD_MAX_MEMORY_SIZE (413 past it, nothing changed).
A created queue takes every attribute it is given, or the call is refused naming it."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.test import Client

from dashboard.access import tokens
from dashboard.serving.chunked import ChunkedBodies
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


def via_wsgi(terminated: bool, form: bool) -> Send:
    """As a WSGI server hands Node's chunked requests on: no CONTENT_LENGTH, the body in
    wsgi.input, its end marked (wsgi.input_terminated) or Transfer-Encoding passed on."""
    app = ChunkedBodies(WSGIHandler())
    auth = f"Bearer {admin_token()}"

    def send(method: str, path: str, fields: dict[str, Any] | None = None) -> Answer:
        full, _, query = (BASE + path).partition("?")
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method, "PATH_INFO": full, "QUERY_STRING": query,
            "SERVER_NAME": "testserver", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
            "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(b""), "wsgi.errors": io.StringIO(),
            "HTTP_AUTHORIZATION": auth, "HTTP_HOST": "testserver",
        }  # fmt: skip
        if fields is not None:
            raw = urlencode(fields) if form else json.dumps(fields)
            environ["CONTENT_TYPE"] = FORM if form else "application/json"
            environ["wsgi.input"] = io.BytesIO(raw.encode())
            environ["HTTP_TRANSFER_ENCODING"] = "chunked"
            if terminated:
                environ["wsgi.input_terminated"] = True
        got: list[str] = []
        body = b"".join(app(environ, lambda status, headers, *exc: got.append(status)))
        return Answer(int(got[0].split()[0]), body)

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


# WSGIHandler closes the connection after each request, as served: a real transaction.
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("terminated", [True, False], ids=["input_terminated", "te_chunked"])
@pytest.mark.parametrize("form", [False, True], ids=["json", "form"])
def test_rest_rsmqs_suite_with_bodies_of_no_length(
    console, rsmq: RedisSMQ, terminated: bool, form: bool
) -> None:
    run_the_suite(via_wsgi(terminated, form))
    assert rsmq.list_queues() == []


@pytest.mark.django_db(transaction=True)
def test_a_chunked_body_past_the_limit_is_413_and_changes_nothing(
    console, rsmq: RedisSMQ, settings
) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    send = via_wsgi(terminated=True, form=False)
    a = send("POST", f"/queues/{Q1}", {"vt": 20, "pad": "x" * 1000})
    assert a.status == 413 and "1000 bytes" in a.json()["error"]
    assert rsmq.list_queues() == []
    # within the limit, the same route reads it
    assert send("POST", f"/queues/{Q1}", {"vt": 20}).status == 200
    assert rsmq.get_queue_attributes(Q1).vt == 20


@pytest.mark.django_db(transaction=True)
def test_a_sized_body_past_the_limit_is_the_same_413(console, rsmq: RedisSMQ, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    app = ChunkedBodies(WSGIHandler())
    raw = json.dumps({"vt": 20, "pad": "x" * 1000}).encode()
    stream = io.BytesIO(raw)
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": f"{BASE}/queues/{Q1}", "SERVER_NAME": "t",
        "SERVER_PORT": "80", "wsgi.input": stream, "CONTENT_LENGTH": str(len(raw)),
        "CONTENT_TYPE": "application/json", "HTTP_AUTHORIZATION": f"Bearer {admin_token()}",
    }  # fmt: skip
    got: list[str] = []
    body = b"".join(app(environ, lambda status, headers, *exc: got.append(status)))
    assert got == ["413 Request Entity Too Large"] and b"1000 bytes" in body
    assert stream.tell() == 0 and rsmq.list_queues() == []


def test_it_reads_no_more_than_the_limit_plus_one(settings) -> None:
    """A body a client keeps sending is not read to its end: limit + 1 bytes tell."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10

    class Endless(io.RawIOBase):
        read_bytes = 0

        def read(self, size: int = -1) -> bytes:
            assert size > 0, "read to the end of an endless body"
            self.read_bytes += size
            return b"x" * size

    stream = Endless()
    statuses: list[str] = []
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/api/x", "wsgi.input": stream,
               "wsgi.input_terminated": True}  # fmt: skip
    ChunkedBodies(lambda e, s: [b"never"])(environ, lambda st, h, *x: statuses.append(st))
    assert statuses == ["413 Request Entity Too Large"] and stream.read_bytes == 11


def test_a_body_with_a_length_or_no_end_is_left_to_django() -> None:
    seen: list[dict[str, Any]] = []
    app = ChunkedBodies(lambda e, s: seen.append(dict(e)) or [b""])
    sized = io.BytesIO(b'{"vt": 1}')
    app({"CONTENT_LENGTH": "9", "wsgi.input": sized, "wsgi.input_terminated": True}, print)
    unended = io.BytesIO(b"data a server may never end")
    app({"wsgi.input": unended}, print)  # no length, no end marked: not read (could block)
    assert seen[0]["wsgi.input"] is sized and seen[0]["CONTENT_LENGTH"] == "9"
    assert seen[1]["wsgi.input"] is unended and "CONTENT_LENGTH" not in seen[1]


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
