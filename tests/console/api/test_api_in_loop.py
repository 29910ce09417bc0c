"""The data plane's plain calls answered in the server's event loop (dashboard/asgi.py
``Threads`` with ``lean.in_loop``: no hop into a thread) answer and audit exactly as the
Django path does — the refusals, errors, a spent rate and a revoked token too, whose rest
(what needs the database) a thread of the pool does (calls.Deferred)."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import threading
from typing import Any

import pytest
from django.core.handlers.wsgi import WSGIHandler
from test_api_fast_path import SCRIPT, Wsgi, rows, shape

from dashboard.access import tokens
from dashboard.audit import drain as audit_drain
from dashboard.models import AuditEntry
from dashboard.serving import fast as lean
from dashboard.serving import startup
from dashboard.serving.chunked import ChunkedBodies
from queues import RedisSMQ

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def asgi(monkeypatch: pytest.MonkeyPatch) -> Any:
    # The module serves (it refuses the test settings' key and checks as it is imported).
    monkeypatch.setattr(startup, "refuse_insecure_key", lambda: None)
    monkeypatch.setattr(startup, "refuse_bad_configuration", lambda: None)
    return importlib.import_module("dashboard.asgi")


class Served:
    """Calls through dashboard/asgi.py's ``Threads`` as it serves them, noting which ones
    the event loop answered whole and which it handed to a thread after all."""

    def __init__(self, asgi: Any, token: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.token, self.in_loop, self.deferred = token, 0, 0
        self.loop_thread: int | None = None
        real = lean.fast

        def spy(environ: dict[str, Any], start: Any) -> Any:
            on_loop = threading.get_ident() == self.loop_thread
            try:
                answer = real(environ, start)
            except Exception:
                self.deferred += on_loop
                raise
            self.in_loop += on_loop and answer is not None
            return answer

        monkeypatch.setattr(lean, "fast", spy)
        self.app = asgi.Threads(ChunkedBodies(lean.dispatch(WSGIHandler())), 2, lean.in_loop)

    def __call__(self, method: str, path: str, body: Any = None,
                 query: str = "") -> tuple[int, dict[str, str], Any]:  # fmt: skip
        return asyncio.run(self.call(method, path, body, query))

    async def call(self, method: str, path: str, body: Any, query: str) -> Any:
        self.loop_thread = threading.get_ident()
        data = json.dumps(body).encode() if body is not None else b""
        headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {self.token}".encode()),
                   (b"content-type", b"application/json")]  # fmt: skip
        if data:
            headers.append((b"content-length", str(len(data)).encode()))
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
            "query_string": query.encode(), "root_path": "", "headers": headers,
            "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80),
        }  # fmt: skip
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": data, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        heads = {k.decode(): v.decode() for k, v in sent[0]["headers"]}
        return sent[0]["status"], heads, json.loads(sent[1]["body"])


def served_and_django(asgi: Any, monkeypatch: pytest.MonkeyPatch, role: str = "operator",
                      per_minute: int = 10_000) -> tuple[Served, Wsgi, str]:  # fmt: skip
    _, token = tokens.mint(f"loop-{role}", role, "test", per_minute)
    _, token2 = tokens.mint(f"django-{role}", role, "test", per_minute)
    served = Served(asgi, token, monkeypatch)
    served("GET", "/api/rest-rsmq/queues")  # read once (a thread): the loop knows it now
    return served, Wsgi(token2, None), token


def drained() -> None:
    audit_drain._drainer.submit(lambda: None).result()  # a drain handed to its thread: done
    audit_drain.drain()


def play(api: Any, rsmq: RedisSMQ, qname: str) -> list[tuple[int, Any]]:
    rsmq.create_queue(qname, maxsize=1024)
    out, last = [], ""
    for method, path, body in SCRIPT:
        status, _, answer = api(method, path.replace("q1", qname).format(last=last), body)
        if isinstance(answer, dict) and answer.get("id"):
            last = answer["id"]
        for m in answer.get("messages", []) if isinstance(answer, dict) else []:
            last = m["id"]
        out.append((status, shape(answer)))
    return out


def test_the_event_loop_answers_and_audits_as_the_django_path(
    console, rsmq, monkeypatch, asgi
) -> None:
    served, django, _ = served_and_django(asgi, monkeypatch)
    monkeypatch.setattr(lean, "FAST_MAX_BODY", 10**6)
    in_loop = play(served, rsmq, "qa")
    # The plain calls were answered in the loop; the refused and failed ones (an unknown
    # queue, a message too long, a bad delay, a bad name, n = 0, a bad id) were begun
    # there and finished by a thread (their audit rows, their answers).
    assert served.in_loop >= 8
    assert served.deferred >= 5
    without = play(django, rsmq, "qb")
    assert in_loop == without
    drained()
    loop_rows, django_rows = rows("token:loop-operator"), rows("token:django-operator")
    assert sorted(map(repr, loop_rows)) == sorted(map(repr, django_rows))
    assert len(loop_rows) == len(SCRIPT)  # every call, refused ones too


def test_a_spent_rate_in_the_loop_is_a_429_with_retry_after(console, rsmq, monkeypatch, asgi):
    served, _, _ = served_and_django(asgi, monkeypatch, per_minute=3)  # 1 spent reading it
    rsmq.create_queue("q1")
    statuses = [served("POST", "/api/queues/q1/messages/", {"message": "a"}) for _ in range(3)]
    assert [s for s, _, _ in statuses] == [201, 201, 429]
    assert served.in_loop == 2 and served.deferred == 1  # the 429: a thread's
    assert 1 <= int(statuses[2][1]["retry-after"]) <= 60
    assert "3 requests a minute" in statuses[2][2]["error"]
    assert rsmq.get_queue_attributes("q1").msgs == 2
    drained()
    assert AuditEntry.objects.filter(outcome="throttled", action="send").count() == 1


def test_a_token_revoked_is_refused_in_the_loop_at_once(console, rsmq, monkeypatch, asgi):
    served, _, _ = served_and_django(asgi, monkeypatch)
    rsmq.create_queue("q1")
    assert served("POST", "/api/queues/q1/messages/", {"message": "a"})[0] == 201
    assert served.in_loop == 1
    row = tokens.ApiToken.objects.get(name="loop-operator")
    # Revoked as the tokens page does, by another process: this one's cache of it stays,
    # only the generation in Redis tells.
    tokens.ApiToken.objects.filter(pk=row.pk).update(revoked_at=row.created_at)
    tokens.counter().api_generation_bump()
    status, _, answer = served("POST", "/api/queues/q1/messages/", {"message": "b"})
    assert status == 401 and "revoked" in answer["error"]
    assert served.deferred == 1
    assert rsmq.get_queue_attributes("q1").msgs == 1


def test_a_records_key_is_new_in_each_call_and_in_a_forked_child() -> None:
    """The drain keeps one row a key (``record``, unique): a web process forked from
    another (granian's workers) must never make a key its parent makes."""
    keys = {audit_drain._key() for _ in range(1000)}
    assert len(keys) == 1000
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first keys, then out at once
        os.write(write, " ".join(audit_drain._key() for _ in range(3)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = set(os.read(read, 4096).decode().split())
    os.close(read)
    parent = {audit_drain._key() for _ in range(3)}
    assert len(child) == 3 and not child & (keys | parent)
    assert {k[:32] for k in child} != {k[:32] for k in parent}  # its own prefix
