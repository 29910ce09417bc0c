"""A data-plane call's audit record is written by the call's own script (in Redis,
atomically) and drained into the audit table by its key (twice: once); the token's count
and the tokens' generation are read in the same round trip, so a revoked token is refused
at once, and within 1 s even when no process was told; /metrics and the read API take any
API token; a token call makes no session and sets no cookie."""

from __future__ import annotations

import io
import json
import os
import time
from typing import Any

import pytest
import redis
from django.core.handlers.wsgi import WSGIHandler
from django.test import Client
from django.utils import timezone

from dashboard.access import tokens
from dashboard.audit import drain as audit
from dashboard.models import ApiToken, AuditEntry
from queues import RedisSMQ
from queues.console import ConsoleRSMQ

pytestmark = pytest.mark.django_db


def client_of(role: str, per_minute: int = 10_000) -> tuple[ApiToken, str, Client]:
    row, token = tokens.mint(f"speed-{role}", role, "test", per_minute)
    return row, token, Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def post(client: Client, path: str, body: Any) -> Any:
    return client.post(path, data=json.dumps(body), content_type="application/json")


@pytest.fixture
def q1(console, rsmq: RedisSMQ) -> ConsoleRSMQ:
    rsmq.create_queue("q1")
    return ConsoleRSMQ(client=rsmq.redis, ns=rsmq.ns)


def test_a_calls_record_is_in_redis_with_it_until_drained(settings, q1: ConsoleRSMQ) -> None:
    settings.RSMQ_AUDIT_DRAIN_EVERY = 3600  # no drain by the web process in this test
    audit.drain()  # (and none left from before)
    _, _, api = client_of("operator")
    sent = post(api, "/api/queues/q1/messages/", {"message": "hello"})
    assert sent.status_code == 201
    mid = sent.json()["id"]
    # Done, and its record written with it: in Redis, not yet in the table.
    assert q1.audit_pending() == 1 and not AuditEntry.objects.exists()
    got = post(api, "/api/queues/q1/receive/", {"n": 5, "vt": 30}).json()["messages"]
    assert [m["id"] for m in got] == [mid]
    assert api.delete(f"/api/queues/q1/messages/{mid}/").json() == {"result": True}
    assert api.delete(f"/api/queues/nope/messages/{mid}/").status_code == 404
    assert q1.audit_pending() == 4
    assert audit.drain() == 4
    rows = {r.action: r for r in AuditEntry.objects.all()}
    assert set(rows) == {"send", "receive", "delete"}
    assert (rows["send"].ids, rows["send"].count, rows["send"].outcome) == ([mid], 1, "ok")
    assert (rows["receive"].ids, rows["receive"].params) == ([mid], {"n": 5, "vt": 30})
    assert rows["send"].username == "token:speed-operator"
    failed = AuditEntry.objects.get(outcome="error")
    assert (failed.queue, failed.ids, failed.detail) == ("nope", [mid], "Queue not found: nope")
    # No record left, and no key of the console's in the namespace.
    assert q1.audit_pending() == 0 and not q1.redis.exists(q1.audit_key)


def test_a_drain_that_dies_before_removing_duplicates_nothing(
    settings, q1: ConsoleRSMQ, monkeypatch
) -> None:
    settings.RSMQ_AUDIT_DRAIN_EVERY = 3600
    _, _, api = client_of("operator")
    for i in range(3):
        assert post(api, "/api/queues/q1/messages/", {"message": str(i)}).status_code == 201

    def dies(self: ConsoleRSMQ, ids: list[str]) -> int:
        raise redis.ConnectionError("the drain died here")

    with monkeypatch.context() as m:
        m.setattr(ConsoleRSMQ, "audit_ack", dies)
        audit.drain()
    assert AuditEntry.objects.count() == 3 and q1.audit_pending() == 3
    assert audit.drain() == 3  # read again, inserted again: ignored by record id
    assert AuditEntry.objects.count() == 3 and q1.audit_pending() == 0


def test_a_hostile_record_is_a_row_saying_so_never_a_failed_drain(console, q1) -> None:
    q1.redis.xadd(q1.audit_key, {"h": "not json", "o": "ok", "r": "1"})
    assert audit.drain() == 1
    row = AuditEntry.objects.get()
    assert row.outcome == "error" and row.detail.startswith("Unreadable audit record")


def test_the_audit_page_drains_and_says_what_is_pending(settings, q1, viewer: Client) -> None:
    settings.RSMQ_AUDIT_DRAIN_EVERY = 3600
    _, _, api = client_of("operator")
    assert post(api, "/api/queues/q1/messages/", {"message": "x"}).status_code == 201
    page = viewer.get("/audit/").content.decode()
    assert "token:speed-operator" in page and "audit-pending" not in page
    q1.redis.xadd(q1.audit_key, {"h": "{}", "o": "ok", "r": "1"})
    with pytest.MonkeyPatch.context() as m:
        m.setattr(audit, "drain", lambda places=None: 0)  # a drain that can't run now
        page = viewer.get("/audit/").content.decode()
    assert "1 API call recorded in Redis, not yet moved here" in page


def test_a_revoked_token_is_refused_at_once_by_a_process_that_read_it(q1) -> None:
    row, _, api = client_of("operator")
    assert post(api, "/api/queues/q1/messages/", {"message": "a"}).status_code == 201
    # Another process revokes it (this one's cache still holds the live row) and bumps
    # the generation, as every change of a token does.
    ApiToken.objects.filter(pk=row.pk).update(revoked_at=timezone.now())
    assert tokens._seen.get(row.digest) is not None  # this process still holds it live
    tokens.counter().api_generation_bump()
    refused = post(api, "/api/queues/q1/messages/", {"message": "b"})
    assert refused.status_code == 401 and "revoked" in refused.json()["error"]
    assert q1.get_queue_attributes("q1").msgs == 1


def test_a_revocation_nobody_announced_is_refused_within_a_second(q1) -> None:
    row, _, api = client_of("operator")
    assert post(api, "/api/queues/q1/messages/", {"message": "a"}).status_code == 201
    ApiToken.objects.filter(pk=row.pk).update(revoked_at=timezone.now())  # no bump
    time.sleep(tokens.CACHE_TTL + 0.1)
    assert post(api, "/api/queues/q1/messages/", {"message": "b"}).status_code == 401
    assert api.get("/api/rest-rsmq/queues").status_code == 401


def test_a_revocation_on_the_tokens_page_is_refused_at_once(q1, admin: Client) -> None:
    row, _, api = client_of("operator")
    assert post(api, "/api/queues/q1/messages/", {"message": "a"}).status_code == 201
    admin.post("/tokens/", {"revoke": str(row.pk)})
    assert post(api, "/api/queues/q1/messages/", {"message": "b"}).status_code == 401


@pytest.mark.parametrize("role", ["viewer", "operator", "admin"])
def test_metrics_and_the_read_api_take_any_api_token(q1, role: str) -> None:
    _, _, api = client_of(role)
    assert api.get("/metrics").status_code == 200
    assert api.get("/api/queues/").status_code == 200
    assert api.get("/api/queues/q1/").status_code == 200


def test_metrics_refuses_an_unknown_or_revoked_api_token(q1) -> None:
    row, token, api = client_of("viewer")
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer rsmq_nope").status_code == 401
    row.revoked_at = timezone.now()
    row.save()
    assert api.get("/metrics").status_code == 401


# WSGIHandler closes the connection after each request, as served: a real transaction.
@pytest.mark.django_db(transaction=True)
def test_a_token_call_makes_no_session_and_sets_no_cookie(q1) -> None:
    application = WSGIHandler()  # Django, as the served console's threads run it
    _, token, _ = client_of("operator")
    body = json.dumps({"message": "lean"}).encode()
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/api/queues/q1/messages/", "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80", "HTTP_HOST": "127.0.0.1",
        "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": "application/json", "HTTP_AUTHORIZATION": f"Bearer {token}",
        "wsgi.url_scheme": "http", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
    }  # fmt: skip
    answers: list[tuple[str, list[tuple[str, str]]]] = []
    out = b"".join(application(environ, lambda s, h, e=None: answers.append((s, h))))
    status, headers = answers[0]
    assert status.startswith("201"), out
    names = {k.lower() for k, _ in headers}
    assert "set-cookie" not in names and "vary" not in names
    assert q1.get_queue_attributes("q1").msgs == 1


def test_beats_task_drains_the_records(settings, q1: ConsoleRSMQ) -> None:
    from dashboard import tasks

    settings.RSMQ_AUDIT_DRAIN_EVERY = 3600
    assert "dashboard.tasks.drain_audit" in {
        e["task"] for e in settings.CELERY_BEAT_SCHEDULE.values()
    }
    _, _, api = client_of("operator")
    assert post(api, "/api/queues/q1/messages/", {"message": "x"}).status_code == 201
    assert not AuditEntry.objects.exists()
    assert tasks.drain_audit() == {"moved": 1}
    assert AuditEntry.objects.get().action == "send"


def test_a_tokens_first_call_sets_last_used(q1: ConsoleRSMQ) -> None:
    row, _, api = client_of("operator")
    assert row.last_used_at is None
    assert post(api, "/api/queues/q1/messages/", {"message": "x"}).status_code == 201
    row.refresh_from_db()
    assert row.last_used_at is not None
    assert (timezone.now() - row.last_used_at).total_seconds() < 60


def test_a_records_key_is_new_in_each_call_and_in_a_forked_child() -> None:
    """The drain keeps one row a key (``record``, unique): a web process forked from
    another (granian's workers) must never make a key its parent makes."""
    keys = {audit._key() for _ in range(1000)}
    assert len(keys) == 1000
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first keys, then out at once
        os.write(write, " ".join(audit._key() for _ in range(3)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = set(os.read(read, 4096).decode().split())
    os.close(read)
    parent = {audit._key() for _ in range(3)}
    assert len(child) == 3 and not child & (keys | parent)
    assert {k[:32] for k in child} != {k[:32] for k in parent}  # its own prefix
