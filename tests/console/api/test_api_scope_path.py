"""The plain calls answered straight from the ASGI scope (dashboard/serving/fast.py ``in_scope``,
dashboard/asgi.py ``Threads``: no WSGI environ unless a thread needs one) answer exactly
as the environ path (``in_loop``) and the Django path do — the same statuses, headers and
bodies, the same audit rows, a spent rate's 429 and a revoked token's 401 — and leave
every other request to the environ path untouched."""

from __future__ import annotations

import asyncio
import importlib
import json
import threading
from typing import Any

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.test import override_settings
from test_api_fast_path import SCRIPT, rows, shape
from test_api_in_loop import drained, play

from dashboard.access import tokens
from dashboard.models import ApiToken, AuditEntry
from dashboard.serving import fast as lean
from dashboard.serving import startup
from dashboard.serving.chunked import ChunkedBodies
from queues import RedisSMQ

pytestmark = pytest.mark.django_db(transaction=True)

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


@pytest.fixture
def asgi(monkeypatch: pytest.MonkeyPatch) -> Any:
    # The module serves (it refuses the test settings' key and checks as it is imported).
    monkeypatch.setattr(startup, "refuse_insecure_key", lambda: None)
    monkeypatch.setattr(startup, "refuse_bad_configuration", lambda: None)
    return importlib.import_module("dashboard.asgi")


class Scoped:
    """Calls through dashboard/asgi.py's ``Threads`` as ./run serves them (``in_scope``
    first, or, with ``scoped=False``, the environ path alone), noting which ones the scope
    path answered, which it handed to a thread, and which it left to the environ path."""

    def __init__(self, asgi: Any, token: str, scoped: bool = True) -> None:
        self.token, self.answered, self.deferred, self.passed = token, 0, 0, 0
        self.environs = 0
        real_scope, real_environ = lean.in_scope, asgi.Threads.environ

        async def spy(scope: dict[str, Any], body: bytes) -> Any:
            try:
                answer = await real_scope(scope, body)
            except Exception:
                self.deferred += 1
                raise
            self.answered += answer is not None
            self.passed += answer is None
            return answer

        def environ(scope: dict[str, Any], body: bytes) -> dict[str, Any]:
            self.environs += 1
            return real_environ(scope, body)

        self.app = asgi.Threads(
            ChunkedBodies(lean.dispatch(WSGIHandler())), 2, lean.in_loop, spy if scoped else None
        )
        self.app.environ = environ  # this app's own (Threads.environ is a staticmethod)

    def raw(self, method: str, path: str, body: Any = None, query: str = "",
            headers: list[tuple[bytes, bytes]] | None = None,
            data: bytes | None = None) -> Answer:  # fmt: skip
        return asyncio.run(self.call(method, path, body, query, headers, data))

    def __call__(self, method: str, path: str, body: Any = None,
                 query: str = "") -> tuple[int, dict[str, str], Any]:  # fmt: skip
        status, heads, data = self.raw(method, path, body, query)
        return status, {k.decode(): v.decode() for k, v in heads}, json.loads(data)

    async def call(
        self, method: str, path: str, body: Any, query: str,
        extra: list[tuple[bytes, bytes]] | None, raw: bytes | None,
    ) -> Answer:  # fmt: skip
        data = raw if raw is not None else json.dumps(body).encode() if body is not None else b""
        headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {self.token}".encode()),
                   (b"content-type", b"application/json")]  # fmt: skip
        if data:
            headers.append((b"content-length", str(len(data)).encode()))
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
            "query_string": query.encode(), "root_path": "", "headers": headers + (extra or []),
            "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80),
        }  # fmt: skip
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": data, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        return sent[0]["status"], sent[0]["headers"], b"".join(m["body"] for m in sent[1:])


def two_ways(asgi: Any, monkeypatch: pytest.MonkeyPatch, per_minute: int = 10_000,
             role: str = "operator") -> tuple[Scoped, Scoped]:  # fmt: skip
    """The scope path and the environ path, each with a token of its own, read once."""
    _, token = tokens.mint(f"scope-{role}", role, "test", per_minute)
    _, token2 = tokens.mint(f"environ-{role}", role, "test", per_minute)
    scoped = Scoped(asgi, token)
    environ = Scoped(asgi, token2, scoped=False)
    for api in (scoped, environ):
        api("GET", "/api/rest-rsmq/queues")  # read once (a thread): the loop knows it now
    scoped.answered = scoped.deferred = scoped.passed = scoped.environs = 0
    return scoped, environ


def test_the_scope_path_answers_and_audits_as_the_environ_path(
    console, rsmq: RedisSMQ, monkeypatch: pytest.MonkeyPatch, asgi: Any
) -> None:
    scoped, environ = two_ways(asgi, monkeypatch)
    monkeypatch.setattr(lean, "FAST_MAX_BODY", 10**6)
    by_scope = play(scoped, rsmq, "qa")
    # The plain calls answered from the scope, with no environ built; the refused and
    # failed ones begun there and finished by a thread.
    assert scoped.answered >= 8 and scoped.deferred >= 5
    assert scoped.environs == scoped.deferred + scoped.passed
    assert by_scope == play(environ, rsmq, "qb")
    drained()
    scope_rows, environ_rows = rows("token:scope-operator"), rows("token:environ-operator")
    assert sorted(map(repr, scope_rows)) == sorted(map(repr, environ_rows))
    assert len(scope_rows) == len(SCRIPT)


def test_the_same_bytes_both_ways(console, rsmq: RedisSMQ, monkeypatch, asgi) -> None:
    """Status, every header in order, the body's bytes: a send's and a receive's answers
    differ only by their ids and times, a delete's (and an empty receive's) not at all."""
    scoped, environ = two_ways(asgi, monkeypatch)
    rsmq.create_queue("q1")
    with override_settings(SECURE_REFERRER_POLICY="no-referrer"):
        one = scoped.raw("POST", "/api/queues/q1/messages/", {"message": "a"})
        two = environ.raw("POST", "/api/queues/q1/messages/", {"message": "a"})
    assert scoped.answered == 1
    assert one[:2] == two[:2] and (b"referrer-policy", b"no-referrer") in one[1]
    assert len(one[2]) == len(two[2]) and one[2][:7] == two[2][:7] == b'{"id": '
    ids = []
    for api in (scoped, environ):
        status, heads, data = api.raw("GET", "/api/rest-rsmq/messages/q1", query="vt=30")
        assert status == 200
        ids.append(json.loads(data)["id"])
    assert scoped.answered == 2
    gone = [api.raw("DELETE", f"/api/rest-rsmq/messages/q1/{i}")
            for api, i in ((scoped, ids[0]), (environ, ids[1]))]  # fmt: skip
    assert gone[0] == gone[1] and gone[0][2] == b'{"result": 1}'
    empty = [api.raw("POST", "/api/queues/q1/receive/", {"n": 1})
             for api in (scoped, environ)]  # fmt: skip
    assert empty[0] == empty[1] and empty[0][2] == b'{"messages": []}'
    assert scoped.answered == 4 and scoped.environs == 0


@pytest.mark.parametrize(
    ("method", "path", "query", "headers"),
    [
        ("GET", "/api/queues/q1/", "", []),  # another route: the Django path's
        ("POST", "/api/queues/q1/messages/", "x=1", []),  # a query the plain call has not
        ("GET", "/api/rest-rsmq/messages/q1", "vt=x", []),  # a bad vt: Django's 400
        ("POST", "/api/queues/q1/messages/", "", [(b"transfer-encoding", b"chunked")]),
        ("POST", "/api/queues/q1/messages/", "", [(b"authorization", b"Bearer rsmq_x")]),
        ("POST", "/api/queues/q1/messages/", "", [(b"host", b"evil.example")]),  # joined
    ],
)
def test_what_is_not_a_plain_call_takes_the_environ_path(
    console, rsmq: RedisSMQ, monkeypatch, asgi, method, path, query, headers
) -> None:
    scoped, environ = two_ways(asgi, monkeypatch)
    rsmq.create_queue("q1")
    body = {"message": "a"} if method == "POST" else None
    got = scoped.raw(method, path, body, query, headers)
    assert scoped.passed == 1 and scoped.answered == 0 and scoped.environs == 1
    want = environ.raw(method, path, body, query, headers)
    assert got[0] == want[0]
    if got[0] < 300:  # a queue's or a sent message's own ids and times differ
        assert shape(json.loads(got[2])).keys() == shape(json.loads(want[2])).keys()
    else:
        assert got == want


def test_an_unknown_token_and_a_root_path_take_the_environ_path(
    console, rsmq: RedisSMQ, monkeypatch, asgi
) -> None:
    rsmq.create_queue("q1")
    _, token = tokens.mint("unread", "operator", "test", 10_000)
    fresh = Scoped(asgi, token)  # never read by this process: Django reads it
    assert fresh("POST", "/api/queues/q1/messages/", {"message": "a"})[0] == 201
    assert fresh.passed == 1 and fresh.answered == 0
    assert fresh("POST", "/api/queues/q1/messages/", {"message": "b"})[0] == 201
    assert fresh.answered == 1  # read now


def test_a_spent_rate_from_the_scope_is_a_429_with_retry_after(
    console, rsmq: RedisSMQ, monkeypatch, asgi
) -> None:
    scoped, _ = two_ways(asgi, monkeypatch, per_minute=3)  # 1 spent reading it
    rsmq.create_queue("q1")
    statuses = [scoped("POST", "/api/queues/q1/messages/", {"message": "a"}) for _ in range(3)]
    assert [s for s, _, _ in statuses] == [201, 201, 429]
    assert scoped.answered == 2 and scoped.deferred == 1  # the 429: a thread's
    assert 1 <= int(statuses[2][1]["retry-after"]) <= 60
    assert "3 requests a minute" in statuses[2][2]["error"]
    assert rsmq.get_queue_attributes("q1").msgs == 2
    drained()
    assert AuditEntry.objects.filter(outcome="throttled", action="send").count() == 1


def test_a_token_revoked_is_refused_from_the_scope_at_once(
    console, rsmq: RedisSMQ, monkeypatch, asgi
) -> None:
    scoped, _ = two_ways(asgi, monkeypatch)
    rsmq.create_queue("q1")
    assert scoped("POST", "/api/queues/q1/messages/", {"message": "a"})[0] == 201
    row = ApiToken.objects.get(name="scope-operator")
    ApiToken.objects.filter(pk=row.pk).update(revoked_at=row.created_at)
    tokens.counter().api_generation_bump()  # another process revoked it
    status, _, answer = scoped("POST", "/api/queues/q1/messages/", {"message": "b"})
    assert status == 401 and "revoked" in answer["error"]
    assert scoped.deferred == 1 and scoped.answered == 1
    assert rsmq.get_queue_attributes("q1").msgs == 1


def test_the_scope_path_runs_in_the_event_loop_thread(console, rsmq, monkeypatch, asgi):
    scoped, _ = two_ways(asgi, monkeypatch)
    rsmq.create_queue("q1")
    seen: list[int] = []
    real = lean.prepare

    def spy(*args: Any) -> Any:
        seen.append(threading.get_ident())
        return real(*args)

    monkeypatch.setattr(lean, "prepare", spy)
    main = threading.get_ident()  # asyncio.run's loop runs in this thread
    assert scoped("POST", "/api/queues/q1/messages/", {"message": "a"})[0] == 201
    assert seen == [main] and scoped.environs == 0


def test_through_whole_body_as_served(console, rsmq: RedisSMQ, monkeypatch, asgi) -> None:
    """WholeBody hands Threads the body it read (Threads.whole): a plain call is answered
    from the scope; a chunked one (no Content-Length) reaches the environ path whole, its
    length declared, and is answered the same."""
    scoped, _ = two_ways(asgi, monkeypatch)
    rsmq.create_queue("q1")
    served = asgi.WholeBody(scoped.app, seconds=5, max_bytes=10_000)
    data = json.dumps({"message": "hello"}).encode()

    async def call(chunked: bool) -> tuple[int, Any]:
        headers = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                   (b"authorization", f"Bearer {scoped.token}".encode())]  # fmt: skip
        pieces = [data[:5], data[5:]] if chunked else [data]
        headers.append(
            (b"transfer-encoding", b"chunked") if chunked
            else (b"content-length", str(len(data)).encode())
        )  # fmt: skip
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": "/api/queues/q1/messages/",
            "raw_path": b"/api/queues/q1/messages/", "query_string": b"", "root_path": "",
            "headers": headers, "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80),
        }  # fmt: skip
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            if pieces:
                piece = pieces.pop(0)
                return {"type": "http.request", "body": piece, "more_body": bool(pieces)}
            await asyncio.sleep(10)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await served(scope, receive, send)
        return sent[0]["status"], json.loads(sent[1]["body"])

    assert asyncio.run(call(False))[0] == 201
    assert scoped.answered == 1 and scoped.environs == 0
    status, answer = asyncio.run(call(True))
    assert status == 201 and answer["id"]
    assert scoped.answered == 1 and scoped.passed == 1 and scoped.environs == 1
    assert rsmq.get_queue_attributes("q1").msgs == 2


def test_a_body_is_whole_once_its_declared_length_is_in(console, rsmq, monkeypatch, asgi):
    """granian sends a body, then an empty last message: WholeBody does not wait for that
    one when the body's Content-Length is in (a POST's second trip into the server's
    runtime), and a body that stops short of its length still waits, and is a 408."""
    scoped, _ = two_ways(asgi, monkeypatch)
    rsmq.create_queue("q1")
    served = asgi.WholeBody(scoped.app, seconds=1, max_bytes=10_000)
    data = json.dumps({"message": "hello"}).encode()
    taken: list[int] = []

    async def call(declared: int) -> tuple[int, Any]:
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": "/api/queues/q1/messages/",
            "raw_path": b"/api/queues/q1/messages/", "query_string": b"", "root_path": "",
            "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                        (b"authorization", f"Bearer {scoped.token}".encode()),
                        (b"content-length", str(declared).encode())],
            "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80),
        }  # fmt: skip
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            taken.append(1)
            if len(taken) == 1:
                return {"type": "http.request", "body": data, "more_body": True}
            await asyncio.sleep(30)  # the last message, late
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await asyncio.wait_for(served(scope, receive, send), 5)
        return sent[0]["status"], json.loads(sent[1]["body"])

    status, answer = asyncio.run(call(len(data)))
    assert status == 201 and answer["id"] and len(taken) == 1
    assert scoped.answered == 1
    taken.clear()
    status, answer = asyncio.run(call(len(data) + 1))  # one byte still to come
    assert status == 408 and "did not arrive within 1 s" in answer["error"]
    assert len(taken) == 2 and rsmq.get_queue_attributes("q1").msgs == 1


@pytest.mark.parametrize("version", ["1.1", "2"])
def test_no_body_is_read_when_http_1_has_none(console, rsmq, monkeypatch, asgi, version):
    """Neither Content-Length nor Transfer-Encoding: an HTTP/1 request has no body, and
    WholeBody asks the server for none (a trip into its runtime); an HTTP/2 one may have
    one all the same, and is read."""
    scoped, _ = two_ways(asgi, monkeypatch)
    rsmq.create_queue("q1")
    rsmq.send_message("q1", "hello")
    served = asgi.WholeBody(scoped.app, seconds=1, max_bytes=10_000)
    asked: list[int] = []

    async def call() -> tuple[int, Any]:
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": version,
            "method": "GET", "scheme": "http", "path": "/api/rest-rsmq/messages/q1",
            "raw_path": b"/api/rest-rsmq/messages/q1", "query_string": b"vt=30",
            "root_path": "", "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80),
            "headers": [(b"host", b"127.0.0.1"),
                        (b"authorization", f"Bearer {scoped.token}".encode())],
        }  # fmt: skip
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            asked.append(1)
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await served(scope, receive, send)
        return sent[0]["status"], json.loads(sent[1]["body"])

    status, answer = asyncio.run(call())
    assert status == 200 and answer["message"] == "hello" and scoped.answered == 1
    assert len(asked) == (0 if version == "1.1" else 1)


def test_calls_in_flight_together_are_answered_each_its_own(console, rsmq, monkeypatch, asgi):
    """The scope path awaits its round trip (DataCall.awaited on the pipelined client):
    calls in flight in one event loop share writes to Redis, and each still gets its own
    answer and its own audit record — 30 sends, then 30 receives, then 30 deletes, each
    batch gathered at once on 3 queues."""
    scoped, _ = two_ways(asgi, monkeypatch)
    for q in ("p0", "p1", "p2"):
        rsmq.create_queue(q)
    from queues.aio import Lane

    writes: list[int] = []  # round trips per write to Redis
    real_write = Lane.write

    def write(self: Lane, entries: list[Any]) -> None:
        writes.append(len(entries))
        real_write(self, entries)

    monkeypatch.setattr(Lane, "write", write)

    async def gathered(calls: list[tuple[str, str, Any]]) -> list[Answer]:
        return await asyncio.gather(*(scoped.call(m, p, b, "", None, None) for m, p, b in calls))

    async def run() -> tuple[list[Answer], list[Answer], list[Answer]]:
        sends = await gathered(
            [("POST", f"/api/queues/p{i % 3}/messages/", {"message": f"m{i}"}) for i in range(30)]
        )
        receives = await gathered(
            [("POST", f"/api/queues/p{i % 3}/receive/", {"n": 1, "vt": 60}) for i in range(30)]
        )
        got = [json.loads(r[2])["messages"][0] for r in receives]
        deletes = await gathered(
            [("DELETE", f"/api/queues/p{i % 3}/messages/{m['id']}/", None)
             for i, m in enumerate(got)]
        )  # fmt: skip
        return sends, receives, deletes

    sends, receives, deletes = asyncio.run(run())
    assert [s[0] for s in sends] == [201] * 30
    sent = {json.loads(s[2])["id"]: f"m{i}" for i, s in enumerate(sends)}
    assert len(sent) == 30
    got = [json.loads(r[2])["messages"] for r in receives]
    assert all(len(m) == 1 for m in got)
    # every message received once, by a receive on its own queue, with its own body
    assert sorted(m[0]["id"] for m in got) == sorted(sent)
    assert all(sent[m[0]["id"]] == m[0]["message"] for m in got)
    assert [json.loads(d[2]) for d in deletes] == [{"result": True}] * 30
    assert scoped.answered == 90 and scoped.deferred == 0
    # written together: of each gathered batch, the first at once, the other 29 in one
    # write after it (and again when the scripts were not loaded yet: NOSCRIPT, then
    # the calls with their scripts)
    assert sum(writes) in (90, 180) and len(writes) <= 12 and max(writes) >= 29
    for q in ("p0", "p1", "p2"):
        assert rsmq.get_queue_attributes(q).msgs == 0
    drained()
    made = AuditEntry.objects.filter(username="token:scope-operator", queue__in=("p0", "p1", "p2"))
    assert sorted(made.values_list("outcome", flat=True)) == [AuditEntry.Outcome.OK] * 90
    by_action = sorted(made.values_list("action", "queue"))
    assert len(by_action) == 90 and len({a for a, _ in by_action}) == 3


def test_redis_down_in_the_loop_is_a_503_audited_as_failed(console, monkeypatch, asgi) -> None:
    """The awaited round trip fails (nothing listens): the call is finished by a thread,
    as the Django path answers it — a 503 naming no password, its audit row an error."""
    scoped, _ = two_ways(asgi, monkeypatch)
    from queues.server import free_port

    down = f"redis://:pw@127.0.0.1:{free_port()}/0"
    with override_settings(
        RSMQ_CONNECTIONS=[{"name": "default", "url": down, "namespaces": ["rsmq"]}]
    ):
        status, _, answer = scoped("POST", "/api/queues/q1/messages/", {"message": "x"})
    assert status == 503 and scoped.deferred == 1
    assert answer["error"].startswith("Redis is unavailable at ") and "pw@" not in answer["error"]
    row = AuditEntry.objects.get(username="token:scope-operator")
    assert (row.action, row.outcome) == ("send", "error")
