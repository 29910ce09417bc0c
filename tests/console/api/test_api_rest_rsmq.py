"""rest-rsmq's README, example by example, against our mount (/api/rest-rsmq/): the same
requests give answers of the same shape (ids are ours: 32 characters, as rsmq 0.12.4
makes them; the README's are an older rsmq's). Plus what rest-rsmq had not: a token."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from dashboard.access import tokens
from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

BASE = "/api/rest-rsmq"


class Rest:
    """A rest-rsmq client: JSON in, JSON out, with an admin's token."""

    def __init__(self) -> None:
        _, token = tokens.mint("rest-client", "admin", "test", 10_000)
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def __call__(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs = {"data": json.dumps(body), "content_type": "application/json"}
        response = getattr(self.client, method.lower())(BASE + path, **kwargs)
        assert response["Content-Type"].startswith("application/json"), response.content
        self.status = response.status_code
        return response.json()


@pytest.fixture
def rest(console) -> Rest:
    return Rest()


def test_create_queue(rest: Rest, rsmq: RedisSMQ) -> None:
    # POST /queues/myqueue {"vt": 30, "delay": 0, "maxsize": 2048} → {"result": 1}
    assert rest("POST", "/queues/myqueue", {"vt": 30, "delay": 0, "maxsize": 2048}) == {"result": 1}
    a = rsmq.get_queue_attributes("myqueue")
    assert (a.vt, a.delay, a.maxsize) == (30, 0, 2048)


def test_create_queue_takes_the_defaults(rest: Rest, rsmq: RedisSMQ) -> None:
    assert rest("POST", "/queues/myqueue", {}) == {"result": 1}
    a = rsmq.get_queue_attributes("myqueue")
    assert (a.vt, a.delay, a.maxsize) == (30, 0, 65536)


def test_list_queues(rest: Rest, rsmq: RedisSMQ) -> None:
    # GET /queues → {"queues": ["myqueue", "someOtherQueue"]}
    rsmq.create_queue("myqueue")
    rsmq.create_queue("someOtherQueue")
    answer = rest("GET", "/queues")
    assert list(answer) == ["queues"]
    assert sorted(answer["queues"]) == ["myqueue", "someOtherQueue"]


def test_get_queue_attributes(rest: Rest, rsmq: RedisSMQ) -> None:
    # GET /queues/myqueue → vt, delay, maxsize, totalrecv, totalsent, created, modified,
    # msgs, hiddenmsgs
    rsmq.create_queue("myqueue")
    rsmq.send_messages("myqueue", ["a", "b", "c", "d"])
    rsmq.receive_messages("myqueue", 2)
    a = rsmq.get_queue_attributes("myqueue")
    assert rest("GET", "/queues/myqueue") == {
        "vt": 30, "delay": 0, "maxsize": 65536, "totalrecv": 2, "totalsent": 4,
        "created": a.created, "modified": a.modified, "msgs": 4, "hiddenmsgs": 2,
    }  # fmt: skip


def test_send_message(rest: Rest, rsmq: RedisSMQ) -> None:
    # POST /messages/myqueue {"message": "Hello World!", "delay": 0} → {"id": "…"}
    rsmq.create_queue("myqueue")
    answer = rest("POST", "/messages/myqueue", {"message": "Hello World!", "delay": 0})
    assert list(answer) == ["id"] and len(answer["id"]) == 32
    assert rsmq.receive_message("myqueue").id == answer["id"]  # type: ignore[union-attr]


def test_receive_message(rest: Rest, rsmq: RedisSMQ) -> None:
    # GET /messages/myqueue?vt=30 → {"id", "message": "Hello World!", "rc": 1, "fr", "sent"}
    rsmq.create_queue("myqueue")
    mid = rsmq.send_message("myqueue", "Hello World!")
    answer = rest("GET", "/messages/myqueue?vt=30")
    assert set(answer) == {"id", "message", "rc", "fr", "sent"}
    assert (answer["id"], answer["message"], answer["rc"]) == (mid, "Hello World!", 1)
    assert answer["sent"] <= answer["fr"]
    info = rsmq.get_message("myqueue", mid)
    assert info is not None and info.visible_at == answer["fr"] + 30_000


def test_receive_message_from_an_empty_queue_is_an_empty_object(rest: Rest, rsmq) -> None:
    rsmq.create_queue("myqueue")
    assert rest("GET", "/messages/myqueue") == {}


def test_change_message_visibility(rest: Rest, rsmq: RedisSMQ) -> None:
    # PUT /message/myqueue/<id>?vt=5 → {"result": 1}
    rsmq.create_queue("myqueue")
    mid = rsmq.send_message("myqueue", "Hello World!")
    assert rest("PUT", f"/message/myqueue/{mid}?vt=5") == {"result": 1}
    info = rsmq.get_message("myqueue", mid)
    assert info is not None and info.state == "delayed"
    # its server's path (/messages/…) too; a message not there: 0
    assert rest("PUT", f"/messages/myqueue/{mid}?vt=0") == {"result": 1}
    rsmq.delete_message("myqueue", mid)
    assert rest("PUT", f"/message/myqueue/{mid}?vt=5") == {"result": 0}


def test_delete_message(rest: Rest, rsmq: RedisSMQ) -> None:
    # DELETE /messages/myqueue/<id> → {"result": 1}
    rsmq.create_queue("myqueue")
    mid = rsmq.send_message("myqueue", "Hello World!")
    assert rest("DELETE", f"/messages/myqueue/{mid}") == {"result": 1}
    assert rsmq.get_queue_attributes("myqueue").msgs == 0
    assert rest("DELETE", f"/messages/myqueue/{mid}") == {"result": 0}


def test_delete_queue(rest: Rest, rsmq: RedisSMQ) -> None:
    # DELETE /queues/myqueue → {"result": 1}
    rsmq.create_queue("myqueue")
    rsmq.send_message("myqueue", "x")
    assert rest("DELETE", "/queues/myqueue") == {"result": 1}
    assert rsmq.list_queues() == []


def test_it_takes_form_encoded_bodies_as_rest_rsmq_did(rest: Rest, rsmq: RedisSMQ) -> None:
    c = rest.client
    form = "application/x-www-form-urlencoded"
    created = c.post(BASE + "/queues/myqueue", "vt=45&maxsize=2048", content_type=form)
    assert created.json() == {"result": 1}
    a = rsmq.get_queue_attributes("myqueue")
    assert (a.vt, a.delay, a.maxsize) == (45, 0, 2048)
    sent = c.post(BASE + "/messages/myqueue", "message=Hello+World%21&delay=0", content_type=form)
    assert rsmq.receive_message("myqueue").message == "Hello World!"  # type: ignore[union-attr]
    assert list(sent.json()) == ["id"]
    bad = c.post(BASE + "/messages/myqueue", "message=x&delay=soon", content_type=form)
    assert (bad.status_code, bad.json()) == (
        400, {"error": "delay must be an integer between 0 and 9999999"}
    )  # fmt: skip


def test_it_answers_errors_as_json_naming_the_field(rest: Rest, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("myqueue")
    answer = rest("POST", "/queues/myqueue", {})
    assert rest.status == 409 and "myqueue" in answer["error"]
    answer = rest("POST", "/queues/other", {"vt": 10_000_000})
    assert (rest.status, answer) == (400, {"error": "vt must be an integer between 0 and 9999999"})
    answer = rest("GET", "/messages/nosuchqueue")
    assert rest.status == 404 and "nosuchqueue" in answer["error"]
    assert rsmq.list_queues() == ["myqueue"]


def test_each_call_is_audited_under_the_tokens_name(rest: Rest, rsmq: RedisSMQ) -> None:
    rest("POST", "/queues/myqueue", {})
    rest("POST", "/messages/myqueue", {"message": "Hello World!"})
    rest("GET", "/messages/myqueue")
    rows = list(AuditEntry.objects.order_by("id").values_list("username", "action", "outcome"))
    assert rows == [
        ("token:rest-client", "create_queue", "ok"),
        ("token:rest-client", "send", "ok"),
        ("token:rest-client", "receive", "ok"),
    ]


def test_it_mounts_at_a_named_connection_and_namespace_too(console, rest: Rest, rsmq) -> None:
    rsmq.create_queue("myqueue")
    response = rest.client.get(f"/api/c/default/{console.ns}/rest-rsmq/queues")
    assert response.json() == {"queues": ["myqueue"]}


def test_it_refuses_a_call_without_a_token(console, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("myqueue")
    response = Client().get(BASE + "/messages/myqueue")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert rsmq.get_queue_attributes("myqueue").totalrecv == 0
