"""The API's own routes (/api/queues/<name>/…): each action does what the console's does,
bad input is a 400 naming the field and its range with nothing changed, a token is held
to its rate (429, Retry-After), only a token acts (no session, so no CSRF to forge), and
/api/schema/ describes it all."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import pytest
from django.test import Client

from dashboard.access import tokens
from dashboard.models import ApiToken, AuditEntry
from queues import RedisSMQ
from queues.server import free_port

pytestmark = pytest.mark.django_db


class Api:
    def __init__(self, role: str = "admin", per_minute: int = 10_000) -> None:
        self.row, token = tokens.mint(f"bot-{role}", role, "test", per_minute)
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", enforce_csrf_checks=True)

    def __call__(self, method: str, path: str, body: Any = None) -> Any:
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs = {"data": json.dumps(body), "content_type": "application/json"}
        self.response = getattr(self.client, method.lower())("/api/queues/" + path, **kwargs)
        self.status = self.response.status_code
        return self.response.json()


@pytest.fixture
def api(console) -> Api:
    return Api()


@pytest.fixture
def q1(console, rsmq: RedisSMQ) -> RedisSMQ:
    rsmq.create_queue("q1", maxsize=1024)
    rsmq.create_queue("q2")
    return rsmq


def test_it_sends_one_message_and_a_batch_in_order(api: Api, q1: RedisSMQ) -> None:
    one = api("POST", "q1/messages/", {"message": "hello", "delay": 0})
    assert api.status == 201 and list(one) == ["id"]
    batch = api("POST", "q1/messages/", {"messages": ["a", "b", "c"]})
    assert api.status == 201 and batch["ids"] == sorted(batch["ids"])
    got = [m.message for m in q1.receive_messages("q1", 10)]
    assert got == ["hello", "a", "b", "c"]


def test_it_receives_then_changes_visibility_deletes_and_requeues(api: Api, q1) -> None:
    ids = q1.send_messages("q1", ["a", "b", "c"])
    got = api("POST", "q1/receive/", {"n": 2, "vt": 60})["messages"]
    assert [(m["id"], m["message"], m["rc"]) for m in got] == [(ids[0], "a", 1), (ids[1], "b", 1)]
    assert api("POST", f"q1/messages/{ids[0]}/visibility/", {"vt": 0}) == {"result": True}
    assert api("DELETE", f"q1/messages/{ids[2]}/") == {"result": True}
    assert api("DELETE", f"q1/messages/{ids[2]}/") == {"result": False}
    assert api("POST", "q1/requeue/", {"ids": [ids[1]]}) == {"count": 1}
    assert [(m.id, m.rc) for m in q1.receive_messages("q1", 5)] == [(ids[0], 2), (ids[1], 2)]


def test_it_moves_purges_creates_and_deletes_queues(api: Api, q1: RedisSMQ) -> None:
    ids = q1.send_messages("q1", ["a", "b", "c"])
    # each answers its Undo's token too (tests/console/api/test_api_undo.py undoes them)
    moved = api("POST", "q1/move/", {"ids": ids[:2], "to": "q2"})
    assert moved["count"] == 2 and len(moved["undo"]) == 32 and moved["undo_why"] == ""
    purged = api("POST", "q1/purge/")
    assert purged["count"] == 1 and len(purged["undo"]) == 32
    assert api("PUT", "q3/", {"vt": 5, "delay": 1, "maxsize": -1}) == {"result": True}
    assert api.status == 201
    assert api("PUT", "q3/", {}) == {"error": api.response.json()["error"]} and api.status == 409
    deleted = api("DELETE", "q2/")
    assert deleted["count"] == 2 and len(deleted["undo"]) == 32
    a = q1.get_queue_attributes("q3")
    assert (a.vt, a.delay, a.maxsize) == (5, 1, -1)
    assert sorted(q1.list_queues()) == ["q1", "q3"]
    actions = list(AuditEntry.objects.order_by("id").values_list("action", "outcome", "count"))
    assert actions == [
        ("move", "ok", 2), ("purge", "ok", 1), ("create_queue", "ok", None),
        ("create_queue", "error", None), ("delete_queue", "ok", 2),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "body", "error"),
    [
        (
            "POST",
            "q1/messages/",
            {"message": "x", "delay": 10_000_000},
            "delay must be an integer between 0 and 9999999",
        ),
        (
            "POST",
            "q1/messages/",
            {"message": "x", "delay": "soon"},
            "delay must be an integer between 0 and 9999999",
        ),
        ("POST", "q1/messages/", {"message": 5}, "message must be a string"),
        ("POST", "q1/messages/", {"messages": ["ok", "x" * 2000]}, None),
        (
            "POST",
            "q1/messages/",
            {},
            "Give message (one message) or messages (a batch): one of the two",
        ),
        ("POST", "q1/receive/", {"n": 0}, "n must be an integer between 1 and 1000"),
        ("POST", "q1/receive/", {"vt": -1}, "vt must be an integer between 0 and 9999999"),
        (
            "PUT",
            "q9/",
            {"maxsize": 5},
            "maxsize must be between 1024 and 65536 bytes, or -1 for unlimited",
        ),
        ("PUT", "bad!name/", {}, None),
        ("POST", "q1/move/", {"ids": ["nope"], "to": "q2"}, None),
        ("POST", "q1/move/", {"ids": [], "to": "q2"}, "ids must hold 1 to 1000 message ids"),
        (
            "POST",
            "q1/requeue/",
            {"ids": "abc"},
            "ids must be a list of message ids (32 characters of a-z A-Z 0-9 :)",
        ),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_changes_nothing(
    api: Api, q1: RedisSMQ, ns_state, method: str, path: str, body: Any, error: str | None
) -> None:
    q1.send_message("q1", "already here")
    before = ns_state()
    answer = api(method, path, body)
    assert api.status == 400, answer
    if error:
        assert answer == {"error": error}
    else:
        field = {"messages": "Message", "PUT": "qname", "move/": "ids"}
        assert any(k in answer["error"] for k in field.values()), answer
    assert ns_state() == before


def test_invalid_input_that_reaches_the_action_is_audited(api: Api, q1: RedisSMQ) -> None:
    api("POST", "q1/messages/", {"message": "x", "delay": 10_000_000})
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.username) == ("send", "invalid", "token:bot-admin")
    assert "delay must be" in row.detail


def test_a_missing_queue_is_a_404_and_an_unknown_place_too(api: Api, q1) -> None:
    assert "nosuch" in api("POST", "nosuch/receive/", {})["error"] and api.status == 404
    response = api.client.post("/api/c/elsewhere/x/queues/q1/purge/")
    assert response.status_code == 404 and "elsewhere" in response.json()["error"]
    assert api("POST", "bad!name/purge/")["error"] and api.status == 404


def test_a_token_is_held_to_its_rate(console, q1: RedisSMQ, ns_state) -> None:
    api = Api("operator", per_minute=2)
    while time.time() % 60 > 55:  # the three calls in one minute's window
        time.sleep(0.5)
    api("POST", "q1/messages/", {"message": "a"})
    api("POST", "q1/messages/", {"message": "b"})
    before = ns_state()
    answer = api("POST", "q1/messages/", {"message": "c"})
    assert api.status == 429
    assert 1 <= int(api.response["Retry-After"]) <= 60
    assert "2 requests a minute" in answer["error"]
    assert ns_state() == before
    outcomes = list(AuditEntry.objects.order_by("id").values_list("outcome", flat=True))
    assert outcomes == ["ok", "ok", "throttled"]  # the refusal audited too (issue 23)


def test_a_session_never_acts_so_no_csrf_token_is_needed_or_forgeable(
    console, q1: RedisSMQ, admin: Client, ns_state
) -> None:
    before = ns_state()
    response = admin.post("/api/queues/q1/purge/", data="{}", content_type="application/json")
    assert response.status_code == 401
    assert ns_state() == before


def test_only_the_hash_of_a_token_is_kept(console) -> None:
    row, token = tokens.mint("kept", "viewer", "test", 10)
    stored = ApiToken.objects.get(pk=row.pk)
    assert stored.digest == hashlib.sha256(token.encode()).hexdigest()
    assert token not in {str(getattr(stored, f.attname)) for f in ApiToken._meta.fields}


def test_the_openapi_document_describes_every_route(console) -> None:
    doc = Client().get("/api/schema/").json()
    assert doc["openapi"].startswith("3.")
    paths = doc["paths"]
    for path, method in [
        ("/api/queues/", "get"), ("/api/queues/{qname}/", "put"),
        ("/api/queues/{qname}/", "delete"), ("/api/queues/{qname}/messages/", "post"),
        ("/api/queues/{qname}/receive/", "post"),
        ("/api/queues/{qname}/messages/{msg_id}/", "delete"),
        ("/api/queues/{qname}/messages/{msg_id}/visibility/", "post"),
        ("/api/queues/{qname}/requeue/", "post"), ("/api/queues/{qname}/move/", "post"),
        ("/api/queues/{qname}/purge/", "post"),
        ("/api/c/{conn}/{ns}/queues/{qname}/messages/", "post"),
        ("/api/rest-rsmq/queues", "get"), ("/api/rest-rsmq/queues/{qname}", "post"),
        ("/api/rest-rsmq/messages/{qname}", "get"), ("/api/rest-rsmq/messages/{qname}", "post"),
        ("/api/rest-rsmq/messages/{qname}/{msg_id}", "delete"),
        ("/api/rest-rsmq/message/{qname}/{msg_id}", "put"),
    ]:  # fmt: skip
        assert method in paths[path], (path, method)
    send = paths["/api/queues/{qname}/messages/"]["post"]
    assert send["security"] == [{"TokenAuth": []}]
    assert {"201", "400", "401", "403", "429"} <= set(send["responses"])
    assert doc["components"]["securitySchemes"]["TokenAuth"]["scheme"] == "bearer"


def test_the_read_api_still_answers_head_as_it_did(console, viewer: Client) -> None:
    path = f"/api/c/default/{console.ns}/queues/"
    assert viewer.head(path).status_code == 200
    assert viewer.options(path).status_code == 405


def test_redis_down_is_a_503_audited_as_failed(settings, api: Api) -> None:
    down = f"redis://:pw@127.0.0.1:{free_port()}/0"
    settings.RSMQ_CONNECTIONS = [{"name": "default", "url": down, "namespaces": ["rsmq"]}]
    answer = api("POST", "q1/messages/", {"message": "x"})
    assert api.status == 503
    assert answer["error"].startswith("Redis is unavailable at ") and "pw@" not in answer["error"]
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome) == ("send", "error")


def test_receive_and_create_need_no_body(api: Api, q1: RedisSMQ) -> None:
    mid = q1.send_message("q1", "a")
    # as curl -X POST sends it: no body at all
    got = api.client.generic("POST", "/api/queues/q1/receive/", b"").json()
    assert [m["id"] for m in got["messages"]] == [mid]
    assert api.client.generic("PUT", "/api/queues/q5/", b"").status_code == 201
    assert q1.get_queue_attributes("q5").vt == 30


def test_a_body_that_is_no_json_is_a_400(api: Api, q1: RedisSMQ, ns_state) -> None:
    before = ns_state()
    response = api.client.post(
        "/api/queues/q1/messages/", data="{not json", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": "body must be JSON: Expecting property name enclosed in double quotes:"
        " line 1 column 2 (char 1)"
    }
    assert ns_state() == before
