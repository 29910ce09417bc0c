"""POST /api/queues/<q>/messages/<id>/resend/: edit and re-send for machines, as the
message page does it (same action row, same audit row with both bodies)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from dashboard.access import tokens
from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


class Api:
    """An operator's token calling /api/queues/…: the answer's JSON; ``status`` kept."""

    def __init__(self, role: str) -> None:
        self.row, token = tokens.mint(f"bot-{role}", role, "test", 10_000)
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def __call__(self, method: str, path: str, body: Any = None) -> Any:
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs = {"data": json.dumps(body), "content_type": "application/json"}
        self.response = getattr(self.client, method.lower())("/api/queues/" + path, **kwargs)
        self.status = self.response.status_code
        return self.response.json()


@pytest.fixture
def api(console) -> Api:
    return Api("operator")


@pytest.fixture
def q1(console, rsmq: RedisSMQ) -> RedisSMQ:
    rsmq.create_queue("q1")
    rsmq.create_queue("q2", maxsize=1024)
    return rsmq


def test_it_resends_and_deletes_the_original(api: Api, q1: RedisSMQ) -> None:
    old = q1.send_message("q1", '{"a": 1}')
    got = api("POST", f"q1/messages/{old}/resend/", {"message": '{"a": 2}', "to": "q2",
                                                     "delete_original": True})  # fmt: skip
    assert api.status == 201 and list(got) == ["id"]
    assert q1.get_message("q1", old) is None
    assert q1.get_message("q2", got["id"]).message == '{"a": 2}'
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.ids, row.params["new_id"]) == (
        "resend", "ok", [old], got["id"]
    )  # fmt: skip
    assert row.params["bodies"]["before"]["text"] == '{"a": 1}'
    assert row.params["bodies"]["after"]["text"] == '{"a": 2}'


def test_it_defaults_to_this_queue_and_keeps_the_original(api: Api, q1: RedisSMQ) -> None:
    old = q1.send_message("q1", "x")
    new = api("POST", f"q1/messages/{old}/resend/", {"message": "y"})["id"]
    assert sorted(m.message for m in q1.browse("q1").items) == ["x", "y"]
    assert q1.get_message("q1", new).rc == 0


def test_an_original_gone_meanwhile_is_a_404_with_nothing_sent(
    api: Api, q1: RedisSMQ, ns_state
) -> None:
    old = q1.send_message("q1", "x")
    q1.delete_message("q1", old)
    before = ns_state()
    got = api("POST", f"q1/messages/{old}/resend/", {"message": "y", "to": "q2",
                                                     "delete_original": True})  # fmt: skip
    assert api.status == 404 and old in got["error"]
    assert ns_state() == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"message": "y", "to": "bad name!"}, "to"),
        ({"message": "y", "delay": -1}, "delay"),
        ({"message": "y" * 2000, "to": "q2"}, "too long"),
        ({"message": 5}, "message"),
        ({"message": "y", "colour": "red"}, "colour"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    api: Api, q1: RedisSMQ, ns_state, body: dict[str, object], field: str
) -> None:
    old = q1.send_message("q1", "x")
    before = ns_state()
    got = api("POST", f"q1/messages/{old}/resend/", body)
    assert api.status == 400 and field in got["error"].lower()
    assert ns_state() == before
