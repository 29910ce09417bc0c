"""Every field a call's body names is applied or refused — never ignored: the API's own
routes refuse a field they don't take with a 400 naming it and what they take, nothing
changed and nothing run (rest-rsmq's routes: tests/console/api/test_rest_rsmq_suite.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from dashboard.access import tokens
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


@pytest.fixture
def call(console):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {tokens.mint('bot', 'admin', 'test', 10_000)[1]}")

    def call(method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        r = getattr(client, method.lower())(
            "/api/queues/" + path, data=json.dumps(body), content_type="application/json"
        )
        return r.status_code, r.json()

    return call


def test_a_create_applies_every_field_it_names(call, rsmq: RedisSMQ) -> None:
    assert call("PUT", "q/", {"vt": 20, "delay": 3, "maxsize": 2048})[0] == 201
    a = rsmq.get_queue_attributes("q")
    assert (a.vt, a.delay, a.maxsize) == (20, 3, 2048)


@pytest.mark.parametrize(
    ("method", "path", "body", "unknown", "takes"),
    [
        ("PUT", "r/", {"vt": 20, "maxSize": 2048}, "maxSize", "vt, delay, maxsize"),
        ("POST", "q/messages/", {"message": "m", "dealy": 5}, "dealy", "message, messages, delay"),
        ("POST", "q/receive/", {"n": 1, "visibility": 5}, "visibility", "n, vt"),
        ("POST", "q/requeue/", {"ids": [], "all": True}, "all", "ids"),
        ("POST", "q/move/", {"ids": [], "to": "q", "dest": "r"}, "dest", "ids, to, keep_counts"),
    ],
)  # fmt: skip
def test_a_field_a_call_does_not_take_is_refused_naming_it(
    call, rsmq: RedisSMQ, method: str, path: str, body: dict[str, Any], unknown: str, takes: str
) -> None:
    rsmq.create_queue("q")
    rsmq.send_message("q", "kept")
    status, answer = call(method, path, body)
    error = f"{unknown}: not a field here (it takes {takes}); nothing changed"
    assert (status, answer) == (400, {"error": error})
    assert rsmq.list_queues() == ["q"]
    a = rsmq.get_queue_attributes("q")
    assert (a.totalsent, a.totalrecv, a.msgs) == (1, 0, 1)
