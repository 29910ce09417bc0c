"""The fast path as served (dashboard/serving/app.py, fast.py): what only it does — answer
from the event loop, share writes to Redis between calls in flight, leave to Django what
it would answer differently — while test_api_parity.py holds its answers to Django's.
And the body as the application reads it before anything runs."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from support.asgi import Served
from support.asgi import console as served_console

from dashboard.access import tokens
from dashboard.audit import drain
from dashboard.models import ApiToken, AuditEntry
from dashboard.serving.app import Console
from queues import RedisSMQ

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fast(console, rsmq: RedisSMQ) -> Iterator[tuple[Served, str]]:
    rsmq.create_queue("q1")
    token = tokens.mint("fast-operator", "operator", "test", 100_000)[1]
    served = served_console()
    served("GET", "/api/rest-rsmq/queues", token=token)  # its token: read, in this process
    yield served, token
    served.close()


def test_a_plain_call_is_answered_in_the_event_loop(fast, rsmq: RedisSMQ) -> None:
    served, token = fast
    sent = served("POST", "/api/queues/q1/messages/", {"message": "hi"}, token=token)
    got = served("GET", "/api/rest-rsmq/messages/q1", token=token, query="vt=30")
    gone = served("DELETE", f"/api/rest-rsmq/messages/q1/{got.json()['id']}", token=token)
    assert [a.status for a in (sent, got, gone)] == [201, 200, 200]
    assert all(a.fast for a in (sent, got, gone))
    assert got.json()["message"] == "hi" and gone.json() == {"result": 1}
    assert rsmq.get_queue_attributes("q1").msgs == 0


@pytest.mark.parametrize(
    "why, method, path, body, headers",
    [
        ("a read", "GET", "/api/queues/q1/", b"", []),
        ("another route", "POST", "/api/queues/q1/purge/", b"", []),
        ("a form", "POST", "/api/rest-rsmq/messages/q1", b"message=x",
         [("content-type", "application/x-www-form-urlencoded")]),
        ("an unknown field", "POST", "/api/queues/q1/messages/", {"message": "x", "y": 1}, []),
        ("a cookie", "POST", "/api/queues/q1/messages/", {"message": "x"},
         [("cookie", "sessionid=abc")]),
        ("gzip", "POST", "/api/queues/q1/receive/", b"", [("accept-encoding", "gzip")]),
        ("a query it takes not", "POST", "/api/queues/q1/receive/", b"", []),
    ],
)  # fmt: skip
def test_what_it_would_answer_otherwise_is_left_to_django(
    fast, why: str, method: str, path: str, body: Any, headers: list[tuple[str, str]]
) -> None:
    served, token = fast
    query = "x=1" if why == "a query it takes not" else ""
    answer = served(method, path, body, headers=headers, token=token, query=query)
    assert not answer.fast and answer.status < 500, (why, answer.body)


def test_an_unknown_token_is_read_by_django_then_known(console, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("q1")
    token = tokens.mint("new", "operator", "test", 100)[1]
    served = served_console()
    try:
        first = served("POST", "/api/queues/q1/messages/", {"message": "a"}, token=token)
        second = served("POST", "/api/queues/q1/messages/", {"message": "b"}, token=token)
    finally:
        served.close()
    assert (first.status, first.fast) == (201, False)
    assert (second.status, second.fast) == (201, True)


def test_a_spent_rate_is_a_429_with_retry_after(console, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("q1")
    token = tokens.mint("tight", "operator", "test", 3)[1]
    served = served_console()
    try:
        answers = [served("POST", "/api/queues/q1/messages/", {"message": "x"}, token=token)
                   for _ in range(4)]  # fmt: skip
    finally:
        served.close()
    assert [a.status for a in answers] == [201, 201, 201, 429]
    assert answers[1].fast and int(answers[3].header("retry-after") or 0) >= 1
    assert rsmq.get_queue_attributes("q1").msgs == 3


def test_a_token_revoked_is_refused_at_once(fast, rsmq: RedisSMQ) -> None:
    served, token = fast
    assert served("POST", "/api/queues/q1/messages/", {"message": "x"}, token=token).fast
    row = ApiToken.objects.get(name="fast-operator")
    row.revoked_at = row.created_at
    row.save()  # every process sees the tokens' generation change
    answer = served("POST", "/api/queues/q1/messages/", {"message": "y"}, token=token)
    assert answer.status == 401 and "revoked" in answer.json()["error"]
    assert rsmq.get_queue_attributes("q1").msgs == 1


def test_calls_in_flight_together_share_writes_and_get_each_their_own_answer(
    fast, rsmq: RedisSMQ, monkeypatch
) -> None:
    """30 sends, then 30 receives, then 30 deletes, each batch in flight at once on 3
    queues: one answer and one audit row each, their round trips written together."""
    served, token = fast
    for q in ("p0", "p1", "p2"):
        rsmq.create_queue(q)
    from queues.aio import Lane

    writes: list[int] = []
    real = Lane.write

    def write(self: Lane, entries: list[Any]) -> None:
        writes.append(len(entries))
        real(self, entries)

    monkeypatch.setattr(Lane, "write", write)

    def together(calls: list[tuple[str, str, Any]]) -> list[Any]:
        async def all_at_once() -> list[Any]:
            return await asyncio.gather(*(
                served.request(*served.scope(m, p, b, token=token)) for m, p, b in calls
            ))  # fmt: skip

        return asyncio.run_coroutine_threadsafe(all_at_once(), served.loop).result(60)

    sends = together([("POST", f"/api/queues/p{i % 3}/messages/", {"message": f"m{i}"})
                      for i in range(30)])  # fmt: skip
    receives = together([("POST", f"/api/queues/p{i % 3}/receive/", {"vt": 60})
                         for i in range(30)])  # fmt: skip
    got = [r.json()["messages"][0] for r in receives]
    deletes = together([("DELETE", f"/api/queues/p{i % 3}/messages/{m['id']}/", b"")
                        for i, m in enumerate(got)])  # fmt: skip
    sent = {s.json()["id"]: f"m{i}" for i, s in enumerate(sends)}
    assert len(sent) == 30 and all(a.fast for a in sends + receives + deletes)
    assert sorted(m["id"] for m in got) == sorted(sent)
    assert all(sent[m["id"]] == m["message"] for m in got)
    assert [d.json() for d in deletes] == [{"result": True}] * 30
    assert max(writes) >= 20 and len(writes) < 30  # written together, not one by one
    drain._drainer.submit(lambda: None).result()
    drain.drain()
    rows = AuditEntry.objects.filter(username="token:fast-operator", queue__in=("p0", "p1", "p2"))
    assert rows.count() == 90 and set(rows.values_list("outcome", flat=True)) == {"ok"}


def test_redis_stalled_after_the_call_was_sent_is_a_503_audited(
    fast, rsmq: RedisSMQ, settings, redis_url: str
) -> None:
    """Written, then nothing comes back within the socket timeout: the call may have run,
    so it is not made again — a thread answers 503 and writes its audit row."""
    served, token = fast
    settings.RSMQ_SOCKET_TIMEOUT = 0.3
    served("POST", "/api/queues/q1/messages/", {"message": "warm"}, token=token)
    stall = threading.Thread(
        target=lambda: redis.Redis.from_url(redis_url).execute_command("DEBUG", "SLEEP", 1)
    )
    stall.start()
    time.sleep(0.2)  # Redis asleep
    try:
        answer = served("POST", "/api/queues/q1/messages/", {"message": "x"}, token=token)
    finally:
        stall.join()
    assert answer.status == 503 and answer.fast
    assert "Redis is unavailable" in answer.json()["error"]
    row = AuditEntry.objects.filter(outcome=AuditEntry.Outcome.ERROR).get()  # (and the
    # script's own record of the send, which ran once Redis woke, drained later)
    assert (row.action, row.username) == ("send", "token:fast-operator")


def test_behind_an_https_proxy_it_answers_with_hsts(console, rsmq: RedisSMQ, settings) -> None:
    """docs/production.md's settings: the proxy's header says https, HSTS is on, plain
    http is redirected. The fast path answers what comes through the proxy, with Django's
    headers; a plain-http request is Django's redirect."""
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    rsmq.create_queue("q1")
    token = tokens.mint("proxied", "operator", "test", 1000)[1]
    served = served_console()
    try:
        https = [("x-forwarded-proto", "https")]
        served("GET", "/api/rest-rsmq/queues", token=token, headers=https)
        answer = served("POST", "/api/queues/q1/messages/", {"message": "x"}, token=token,
                        headers=https)  # fmt: skip
        plain = served("POST", "/api/queues/q1/messages/", {"message": "x"}, token=token)
    finally:
        served.close()
    assert (answer.status, answer.fast) == (201, True)
    assert answer.header("strict-transport-security") == "max-age=31536000"
    assert plain.status == 301 and not plain.fast
    assert rsmq.get_queue_attributes("q1").msgs == 1


@pytest.mark.parametrize("version", ["1.1", "2"])
def test_no_body_is_read_when_http_1_has_none(console, version: str) -> None:
    """Neither Content-Length nor Transfer-Encoding: an HTTP/1 request has no body, and
    the application asks the server for none; an HTTP/2 one may have one, and is read."""
    asked: list[int] = []
    app = Console(lambda e, s: [], 1, 1.0, 1000, None)

    async def receive() -> dict[str, Any]:
        asked.append(1)
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "http_version": version, "method": "GET", "headers": []}
    whole = asyncio.run(app.body(scope, receive, _nothing))
    assert whole is not None and whole[1] == b"" and len(asked) == (0 if version == "1.1" else 1)


def test_a_body_is_whole_once_its_declared_length_is_in(console) -> None:
    """granian sends a body, then an empty last message: the application does not wait
    for that one once the declared length is in; a body short of its length still waits,
    and is a 408."""
    app = Console(lambda e, s: [], 1, 0.5, 1000, None)
    data = b'{"message": "hello"}'

    def call(declared: int) -> tuple[Any, list[int], list[dict[str, Any]]]:
        taken: list[int] = []
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            taken.append(1)
            if len(taken) == 1:
                return {"type": "http.request", "body": data, "more_body": True}
            await asyncio.sleep(30)  # the last message, late
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {"type": "http", "http_version": "1.1", "method": "POST", "path": "/api/x",
                 "headers": [(b"content-length", str(declared).encode())]}  # fmt: skip
        return asyncio.run(app.body(scope, receive, send)), taken, sent

    whole, taken, _ = call(len(data))
    assert whole is not None and whole[1] == data and len(taken) == 1
    whole, taken, sent = call(len(data) + 1)
    assert whole is None and len(taken) == 2 and sent[0]["status"] == 408
    assert "did not arrive within 0.5 s" in json.loads(sent[1]["body"])["error"]


async def _nothing(message: dict[str, Any]) -> None:
    pass
