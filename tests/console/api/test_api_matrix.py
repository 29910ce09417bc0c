"""Every API action × every kind of token: viewer, operator, admin, an admin's in
read-only mode, none, a revoked one — on the native routes and the rest-rsmq mount.

An allowed call runs (2xx, its audit row "ok" under the token's name, Redis changed); a
refused one changes nothing: 403 audited as denied (the role; read-only), or 401 audited
as denied under "anonymous" (no token, a revoked one: nobody to name; issue 23)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from dashboard.access import tokens
from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

ROLES = ["viewer", "operator", "admin", "admin, read-only", "no token", "revoked"]


@dataclass(frozen=True)
class Call:
    method: str
    path: Callable[[list[str]], str]
    body: dict[str, Any] | Callable[[list[str]], dict[str, Any]] | None
    audited_as: str
    needs: str  # the least role that may


RANK = {"viewer": 1, "operator": 2, "admin": 3}
CALLS: dict[str, Call] = {
    "send": Call(
        "POST", lambda ids: "/api/queues/q1/messages/", {"message": "hi"}, "send", "operator"
    ),
    "send_batch": Call(
        "POST", lambda ids: "/api/queues/q1/messages/", {"messages": ["a", "b"]}, "send", "operator"
    ),
    "receive": Call("POST", lambda ids: "/api/queues/q1/receive/", {"n": 2}, "receive", "operator"),
    "delete": Call(
        "DELETE", lambda ids: f"/api/queues/q1/messages/{ids[1]}/", None, "delete", "operator"
    ),
    "visibility": Call(
        "POST",
        lambda ids: f"/api/queues/q1/messages/{ids[0]}/visibility/",
        {"vt": 0},
        "visibility",
        "operator",
    ),
    "requeue": Call(
        "POST",
        lambda ids: "/api/queues/q1/requeue/",
        lambda ids: {"ids": [ids[0]]},
        "requeue",
        "operator",
    ),
    "move": Call(
        "POST",
        lambda ids: "/api/queues/q1/move/",
        lambda ids: {"ids": [ids[1]], "to": "q2"},
        "move",
        "operator",
    ),
    "resend": Call(
        "POST",
        lambda ids: f"/api/queues/q1/messages/{ids[1]}/resend/",
        {"message": "fixed", "to": "q2", "delete_original": True},
        "resend",
        "operator",
    ),
    "create_queue": Call("PUT", lambda ids: "/api/queues/q3/", {}, "create_queue", "admin"),
    "delete_queue": Call("DELETE", lambda ids: "/api/queues/q1/", None, "delete_queue", "admin"),
    "purge": Call("POST", lambda ids: "/api/queues/q1/purge/", None, "purge", "admin"),
    "rest_send": Call(
        "POST", lambda ids: "/api/rest-rsmq/messages/q1", {"message": "hi"}, "send", "operator"
    ),
    "rest_receive": Call(
        "GET", lambda ids: "/api/rest-rsmq/messages/q1", None, "receive", "operator"
    ),
    "rest_delete": Call(
        "DELETE", lambda ids: f"/api/rest-rsmq/messages/q1/{ids[1]}", None, "delete", "operator"
    ),
    "rest_visibility": Call(
        "PUT",
        lambda ids: f"/api/rest-rsmq/message/q1/{ids[0]}?vt=0",
        None,
        "visibility",
        "operator",
    ),
    "rest_create_queue": Call(
        "POST", lambda ids: "/api/rest-rsmq/queues/q3", {}, "create_queue", "admin"
    ),
    "rest_delete_queue": Call(
        "DELETE", lambda ids: "/api/rest-rsmq/queues/q1", None, "delete_queue", "admin"
    ),
}


@pytest.fixture
def ids(console, rsmq: RedisSMQ) -> list[str]:
    """q1 with three messages, the first in flight; q2 empty."""
    for q in ("q1", "q2"):
        rsmq.create_queue(q)
    ids = rsmq.send_messages("q1", ["one", "two", "three"])
    rsmq.receive_message("q1", vt=60)
    return ids


@pytest.fixture
def client_for(settings) -> Callable[[str], Client]:
    def make(who: str) -> Client:
        if who == "no token":
            return Client()
        role = "admin" if who in ("admin, read-only", "revoked") else who
        row, token = tokens.mint(f"bot-{role}", role, "test", 10_000)
        if who == "revoked":
            row.revoked_at = timezone.now()
            row.save()
        settings.RSMQ_READ_ONLY = who == "admin, read-only"
        return Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    return make


def send(client: Client, call: Call, ids: list[str]) -> Any:
    kwargs: dict[str, Any] = {}
    body = call.body(ids) if callable(call.body) else call.body
    if body is not None:
        kwargs = {"data": json.dumps(body), "content_type": "application/json"}
    return getattr(client, call.method.lower())(call.path(ids), **kwargs)


@pytest.mark.parametrize("who", ROLES)
@pytest.mark.parametrize("name", list(CALLS))
def test_each_action_for_each_token(ids, client_for, ns_state, name: str, who: str) -> None:
    call = CALLS[name]
    client = client_for(who)
    before = ns_state()
    response = send(client, call, ids)
    allowed = who in RANK and RANK[who] >= RANK[call.needs]
    if allowed:
        assert response.status_code in (200, 201), response.content
        row = AuditEntry.objects.get()
        assert (row.action, row.outcome, row.username) == (
            call.audited_as,
            "ok",
            f"token:bot-{who}",
        )
        assert ns_state() != before
        return
    assert ns_state() == before
    assert "error" in response.json()
    if who in ("no token", "revoked"):
        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Bearer")
        row = AuditEntry.objects.get()
        assert (row.action, row.outcome, row.username) == (call.audited_as, "denied", "anonymous")
        assert row.detail.startswith("401: ") and row.params == {"repeats": 1}
        return
    assert response.status_code == 403
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome) == (call.audited_as, "denied")
    assert ("read-only" in row.detail) is (who == "admin, read-only")


@pytest.mark.parametrize("who", ROLES)
@pytest.mark.parametrize(
    "path", ["/api/queues/", "/api/queues/q1/", "/api/rest-rsmq/queues", "/api/rest-rsmq/queues/q1"]
)
def test_reading_for_each_token(ids, client_for, path: str, who: str) -> None:
    response = client_for(who).get(path)
    assert response.status_code == (401 if who in ("no token", "revoked") else 200)
