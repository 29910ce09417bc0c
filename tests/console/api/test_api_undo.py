"""POST /api/undo/{token}/ (and /api/c/<conn>/<ns>/undo/{token}/): an admin token puts
back what a console action kept, once, audited as ``undo``; its answer has a schema."""

from __future__ import annotations

import pytest
import redis
from django.test import Client

from dashboard.access import tokens
from dashboard.models import AuditEntry, UndoEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def bearer(role: str) -> Client:
    _, token = tokens.mint(f"bot-{role}", role, "test", 10_000)
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}", enforce_csrf_checks=True)


@pytest.fixture
def purged(console, rsmq: RedisSMQ, admin: Client, r: redis.Redis, ns: str):
    """q1's three messages purged from the console (kept): (raw q1 before, the token)."""
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", ["a", "b", "c"])
    before = r.hgetall(f"{ns}:q1:Q"), r.zrange(f"{ns}:q1", 0, -1, withscores=True)
    admin.post(console.act(), {"action": "purge", "purge-confirm": "q1"})
    AuditEntry.objects.all().delete()
    return before, UndoEntry.objects.get().token


def test_an_admin_token_undoes_once(console, purged, r: redis.Redis, ns: str) -> None:
    before, token = purged
    api = bearer("admin")

    response = api.post(f"/api/c/default/{ns}/undo/{token}/")

    assert response.status_code == 200
    body = response.json()
    assert body["text"] == "Undid the purge of q1: put back 3 messages."
    assert (body["restored"], body["skipped"], body["already"]) == (
        3, {"present": 0, "gone": 0, "taken": 0, "foreign": 0}, False,
    )  # fmt: skip
    assert (r.hgetall(f"{ns}:q1:Q"), r.zrange(f"{ns}:q1", 0, -1, withscores=True)) == before
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.username, row.count) == (
        "undo",
        "ok",
        "token:bot-admin",
        3,
    )
    assert row.params["restored"] == 3

    again = api.post(f"/api/c/default/{ns}/undo/{token}/").json()
    assert again["already"] and again["restored"] == 0


def test_an_operator_token_may_not_and_nothing_changes(console, purged, ns_state, ns: str) -> None:
    _, token = purged
    before = ns_state()
    response = bearer("operator").post(f"/api/c/default/{ns}/undo/{token}/")
    assert response.status_code == 403
    assert ns_state() == before and not UndoEntry.objects.get().undone_at


@pytest.mark.parametrize("token", ["a" * 32, "not-a-token"])
def test_an_unknown_token_is_a_404(console, purged, ns_state, ns: str, token: str) -> None:
    before = ns_state()
    response = bearer("admin").post(f"/api/c/default/{ns}/undo/{token}/")
    assert response.status_code == 404 and "no action kept one" in response.json()["error"]
    assert ns_state() == before


def test_the_schema_describes_it(console) -> None:
    doc = Client().get("/api/schema/").json()
    ok = doc["paths"]["/api/undo/{token}/"]["post"]["responses"]["200"]
    assert ok["content"]["application/json"]["schema"]["$ref"].endswith("/UndoOut")
    assert {"restored", "skipped", "already"} <= set(
        doc["components"]["schemas"]["UndoOut"]["properties"]
    )


# the API's own destructive routes keep what they remove: their answer carries the token


def raw_q(r: redis.Redis, ns: str, qname: str) -> tuple[dict, list]:
    return r.hgetall(f"{ns}:{qname}:Q"), r.zrange(f"{ns}:{qname}", 0, -1, withscores=True)


def test_an_api_purge_answers_an_undo_token_that_puts_them_back(
    console, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", ["a", "b", "c"])
    rsmq.receive_message("q1", vt=100)
    before = raw_q(r, ns, "q1")
    api = bearer("admin")

    purged = api.post(f"/api/c/default/{ns}/queues/q1/purge/").json()
    assert purged["count"] == 3 and purged["undo"] and purged["undo_why"] == ""
    assert rsmq.get_queue_attributes("q1").msgs == 0
    row = AuditEntry.objects.get(action="purge")
    assert row.undo.token == purged["undo"]  # type: ignore[attr-defined]

    done = api.post(f"/api/c/default/{ns}/undo/{purged['undo']}/").json()
    assert done["restored"] == 3
    assert raw_q(r, ns, "q1") == before


def test_an_api_delete_queue_and_move_answer_their_undo(
    console, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    rsmq.create_queue("q1")
    rsmq.create_queue("q2")
    ids = rsmq.send_messages("q1", ["a", "b", "c"])
    before = raw_q(r, ns, "q1"), raw_q(r, ns, "q2")
    admin, operator = bearer("admin"), bearer("operator")

    moved = operator.post(
        f"/api/c/default/{ns}/queues/q1/move/",
        {"ids": ids[:2], "to": "q2"},
        content_type="application/json",
    ).json()
    assert moved["count"] == 2 and moved["undo"]
    assert admin.post(f"/api/c/default/{ns}/undo/{moved['undo']}/").json()["restored"] == 2
    assert (raw_q(r, ns, "q1"), raw_q(r, ns, "q2")) == before

    gone = admin.delete(f"/api/c/default/{ns}/queues/q1/").json()
    assert gone["count"] == 3 and gone["undo"]
    assert "q1" not in rsmq.list_queues()
    assert admin.post(f"/api/c/default/{ns}/undo/{gone['undo']}/").status_code == 200
    assert raw_q(r, ns, "q1") == before[0]


def test_past_the_bound_the_answer_says_why_nothing_was_kept(
    console, rsmq: RedisSMQ, r: redis.Redis, ns: str, settings
) -> None:
    settings.RSMQ_UNDO_MAX_MB = 0
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", ["a"])
    purged = bearer("admin").post(f"/api/c/default/{ns}/queues/q1/purge/").json()
    assert purged["count"] == 1 and purged["undo"] is None
    assert "RSMQ_UNDO_MAX_MB" in purged["undo_why"]
    assert not list(r.scan_iter(f"{ns}:@undo:*")) and not UndoEntry.objects.exists()


def test_the_schema_says_the_destructive_routes_answer_an_undo(console) -> None:
    doc = Client().get("/api/schema/").json()
    for path, method in [
        ("/api/queues/{qname}/purge/", "post"),
        ("/api/queues/{qname}/", "delete"),
        ("/api/queues/{qname}/move/", "post"),
    ]:
        ok = doc["paths"][path][method]["responses"]["200"]
        assert ok["content"]["application/json"]["schema"]["$ref"].endswith("/KeptOut")
    props = doc["components"]["schemas"]["KeptOut"]["properties"]
    assert {"count", "undo", "undo_why"} <= set(props) and "undo" in props["undo"]["description"]
