"""The data plane's fast path (dashboard/serving/fast.py ``fast``) answers exactly as the Django
path does — statuses, bodies, Retry-After, audit rows — for the calls it takes (send one,
receive, delete one; native and rest-rsmq routes), and leaves every other request to the
Django path before anything has run."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.handlers.wsgi import WSGIHandler

from dashboard.access import tokens
from dashboard.models import AuditEntry
from dashboard.serving import fast as lean
from queues import RedisSMQ

# WSGIHandler closes the connection after each request, as served: a real transaction.
pytestmark = pytest.mark.django_db(transaction=True)


class Wsgi:
    """Requests through the served application (dashboard/wsgi.py's dispatch), noting
    which ones the fast path answered."""

    def __init__(self, token: str, monkeypatch: pytest.MonkeyPatch | None) -> None:
        self.token, self.fast = token, 0
        if monkeypatch is None:  # the Django path only (the lean handler)
            self.app: Any = lean.LeanHandler()
            return
        real = lean.fast

        def spy(environ: dict[str, Any], start: Any) -> Any:
            answer = real(environ, start)
            self.fast += answer is not None
            return answer

        monkeypatch.setattr(lean, "fast", spy)
        self.app = lean.dispatch(WSGIHandler())

    def __call__(self, method: str, path: str, body: Any = None, raw: bytes | None = None,
                 query: str = "") -> tuple[int, dict[str, str], Any]:  # fmt: skip
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
        environ = {
            "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query,
            "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80", "HTTP_HOST": "127.0.0.1",
            "wsgi.input": io.BytesIO(data), "CONTENT_LENGTH": str(len(data)),
            "CONTENT_TYPE": "application/json", "HTTP_AUTHORIZATION": f"Bearer {self.token}",
            "wsgi.url_scheme": "http", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
        }  # fmt: skip
        got: list[Any] = []
        out = b"".join(self.app(environ, lambda s, h, e=None: got.append((s, h))))
        status, headers = got[0]
        return int(status.split()[0]), {k.lower(): v for k, v in headers}, json.loads(out)


@pytest.fixture
def q1(console, rsmq: RedisSMQ) -> RedisSMQ:
    rsmq.create_queue("q1", maxsize=1024)
    return rsmq


def both_ways(q1: RedisSMQ, monkeypatch: pytest.MonkeyPatch, role: str = "operator",
              per_minute: int = 10_000) -> tuple[Wsgi, Wsgi]:  # fmt: skip
    """The same calls two ways: with the fast path (a token this process has read) and
    without it (fast() answering nothing: the Django path)."""
    _, token = tokens.mint(f"fast-{role}", role, "test", per_minute)
    fast = Wsgi(token, monkeypatch)
    fast("GET", "/api/rest-rsmq/queues")  # read once: the fast path knows it now
    _, token2 = tokens.mint(f"slow-{role}", role, "test", per_minute)
    return fast, Wsgi(token2, None)


SCRIPT = [
    ("POST", "/api/queues/q1/messages/", {"message": "hello"}),
    ("POST", "/api/queues/q1/messages/", {"message": "later", "delay": 100}),
    ("POST", "/api/queues/q1/receive/", {"n": 3, "vt": 30}),
    ("POST", "/api/queues/q1/receive/", None),
    ("POST", "/api/rest-rsmq/messages/q1", {"message": "rest"}),
    ("GET", "/api/rest-rsmq/messages/q1", None),
    ("GET", "/api/rest-rsmq/messages/q1", None),
    ("DELETE", "/api/queues/q1/messages/{last}/", None),
    ("DELETE", "/api/queues/q1/messages/{last}/", None),
    ("DELETE", "/api/rest-rsmq/messages/q1/{last}", None),
    ("POST", "/api/queues/nope/messages/", {"message": "x"}),
    ("POST", "/api/rest-rsmq/messages/nope", {"message": "x"}),
    ("POST", "/api/queues/q1/messages/", {"message": "x" * 2000}),
    ("POST", "/api/queues/q1/messages/", {"message": "x", "delay": -1}),
    ("POST", "/api/queues/bad!name/receive/", {"n": 1}),
    ("POST", "/api/queues/q1/receive/", {"n": 0}),
    ("DELETE", "/api/queues/q1/messages/not-an-id/", None),
    ("POST", "/api/queues/q1/messages/", {"messages": ["a", "b"], "delay": 100}),  # a batch
    ("POST", "/api/queues/q1/messages/", {"messages": ["c"]}),
    ("POST", "/api/queues/nope/messages/", {"messages": ["a"]}),
    ("POST", "/api/queues/q1/messages/", {"messages": ["x" * 2000]}),
    ("POST", "/api/queues/q1/messages/", {"messages": ["a"], "delay": -1}),
]


def shape(answer: Any) -> Any:
    """An answer with its ids and times out (the two runs make their own)."""
    if isinstance(answer, dict):
        return {
            k: len(v) if k == "ids" else shape(v)
            for k, v in answer.items()
            if k not in ("id", "fr", "sent")
        }
    if isinstance(answer, list):
        return [shape(a) for a in answer]
    return answer


def play(api: Wsgi, rsmq: RedisSMQ, qname: str) -> list[tuple[int, Any]]:
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


def rows(username: str) -> list[tuple[Any, ...]]:
    return [
        (
            r.action,
            r.queue.rstrip("ab"),
            r.outcome,
            r.count,
            r.params,
            r.detail.replace("qa", "q").replace("qb", "q"),
        )
        for r in AuditEntry.objects.filter(username=username).order_by("at", "id")
    ]


def test_the_fast_path_answers_and_audits_as_the_django_path(console, rsmq, monkeypatch) -> None:
    fast, slow = both_ways(rsmq, monkeypatch)
    monkeypatch.setattr(lean, "FAST_MAX_BODY", 10**6)
    with_fast = play(fast, rsmq, "qa")
    assert fast.fast >= 10  # the plain calls went the fast way
    without = play(slow, rsmq, "qb")
    assert with_fast == without
    fast_rows, slow_rows = rows("token:fast-operator"), rows("token:slow-operator")

    assert sorted(map(repr, fast_rows)) == sorted(map(repr, slow_rows))
    assert len(rows("token:fast-operator")) == len(SCRIPT)  # every call, refused ones too


DEEP = b'{"message": ' + b"[" * 5000 + b"]" * 5000 + b"}"


def test_it_leaves_other_shapes_to_the_django_path(console, rsmq, monkeypatch) -> None:
    fast, _ = both_ways(rsmq, monkeypatch)
    rsmq.create_queue("q1")
    before = fast.fast
    cases = [
        ("POST", "/api/queues/q1/messages/", {"messages": []}, None),  # an empty batch
        ("POST", "/api/queues/q1/messages/", {"messages": ["a", 5]}, None),
        ("POST", "/api/queues/q1/messages/", {"messages": ["a"], "message": "b"}, None),
        ("POST", "/api/queues/q1/messages/", {"message": 5}, None),  # the wrong type
        ("POST", "/api/queues/q1/messages/", {"message": "a", "extra": 1}, None),
        ("POST", "/api/queues/q1/messages/", None, b"{not json"),
        ("POST", "/api/queues/q1/messages/", None, b'{"message": "\\ud800"}'),  # a surrogate
        (
            "POST",
            "/api/queues/q1/messages/",
            None,
            b'{"message": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        ),
        ("POST", "/api/queues/q1/receive/", {"n": "2"}, None),
        ("POST", "/api/c/default/x/queues/q1/receive/", {"n": 1}, None),  # no such place
    ]
    answers = [fast(m, p, b, raw)[0] for m, p, b, raw in cases]
    assert fast.fast == before
    assert answers == [400, 400, 400, 400, 400, 400, 400, 400, 200, 404]  # "extra": by name


def test_a_rate_limit_on_the_fast_path_is_a_429_with_retry_after(console, rsmq, monkeypatch):
    fast, _ = both_ways(rsmq, monkeypatch, per_minute=3)  # 1 of 3 spent on reading it
    rsmq.create_queue("q1")
    statuses = [fast("POST", "/api/queues/q1/messages/", {"message": "a"}) for _ in range(3)]
    assert [s for s, _, _ in statuses] == [201, 201, 429]
    assert 1 <= int(statuses[2][1]["retry-after"]) <= 60
    assert "3 requests a minute" in statuses[2][2]["error"]
    assert rsmq.get_queue_attributes("q1").msgs == 2


def test_a_viewer_token_is_refused_as_on_the_django_path(console, rsmq, monkeypatch) -> None:
    fast, _ = both_ways(rsmq, monkeypatch, role="viewer")
    rsmq.create_queue("q1")
    before = fast.fast
    status, _, answer = fast("POST", "/api/queues/q1/messages/", {"message": "a"})
    assert fast.fast == before  # the Django path answered
    assert status == 403 and "needs the operator role" in answer["error"]
    assert rsmq.get_queue_attributes("q1").msgs == 0
    assert AuditEntry.objects.filter(outcome="denied", action="send").count() == 1
