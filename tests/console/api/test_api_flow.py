"""Pause, throttle, resume and what is coming due over the API (api/flow.py); the API's
receive (native, rest-rsmq, and the fast path: the same script) honours the pause."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from django.test import Client
from support.asgi import console as served_console

from dashboard.access import tokens
from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db(transaction=True)


class Api:
    def __init__(self, role: str) -> None:
        self.row, self.token = tokens.mint(f"bot-{role}", role, "test", 10_000)
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {self.token}")

    def __call__(self, method: str, path: str, body: Any = None) -> Any:
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs = {"data": json.dumps(body), "content_type": "application/json"}
        self.response = getattr(self.client, method.lower())("/api/" + path, **kwargs)
        self.status = self.response.status_code
        return self.response.json()


@pytest.fixture
def q(console, rsmq: RedisSMQ) -> str:
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", ["a", "b", "c"])
    return "q1"


def test_a_token_pauses_for_a_while_and_the_apis_receive_gets_nothing_at_once(
    console, q: str, rsmq: RedisSMQ
) -> None:
    api = Api("operator")
    flow = api("POST", "queues/q1/pause/", {"reason": "deploy 42", "duration": "10m"})
    assert api.status == 200, flow
    assert (flow["state"], flow["reason"], flow["by"]) == (
        "paused",
        "deploy 42",
        "token:bot-operator",
    )
    assert flow["until"] is not None
    assert api("POST", "queues/q1/receive/", {"n": 3}) == {"messages": []}
    assert api("GET", "rest-rsmq/messages/q1") == {}
    row = AuditEntry.objects.filter(action="pause_queue").get()
    assert (row.outcome, row.params["seconds"]) == ("ok", 600.0)
    assert rsmq.get_queue_attributes(q).totalrecv == 0
    read = api("GET", "queues/q1/flow/")
    assert read["flow"]["held"] == 2 and read["flow"]["bypassed"] == 0
    assert "Node rsmq" in read["bypassed_by"]


def test_the_fast_path_honours_the_pause_too(console, q: str, rsmq: RedisSMQ) -> None:
    api = Api("operator")
    rsmq.pause_queue(q)
    served = served_console(fast=True)
    try:
        served("GET", "/api/rest-rsmq/queues", token=api.token)  # its token read
        answer = served("POST", "/api/queues/q1/receive/", {"n": 2}, token=api.token)
        assert answer.fast and answer.json() == {"messages": []}
        rsmq.resume_queue(q)
        answer = served("POST", "/api/queues/q1/receive/", {"n": 2}, token=api.token)
        assert answer.fast and len(answer.json()["messages"]) == 2
    finally:
        served.close()


def test_a_throttle_then_resume(console, q: str, rsmq: RedisSMQ) -> None:
    api = Api("operator")
    flow = api("POST", "queues/q1/throttle/", {"rate": 1})
    assert api.status == 200 and flow["rate"] == 1 and flow["until"] is None
    assert len(api("POST", "queues/q1/receive/", {"n": 3})["messages"]) == 1
    assert api("POST", "queues/q1/receive/", {"n": 3})["messages"] == []
    done = api("POST", "queues/q1/resume/")
    assert done["resumed"] is True and done["was"]["granted"] == 1
    assert api("POST", "queues/q1/resume/") == {"resumed": False, "was": None}


@pytest.mark.parametrize(
    ("path", "body", "text"),
    [
        ("throttle/", {"rate": 0}, "rate: receives a second"),
        ("throttle/", {}, "rate"),
        ("pause/", {"duration": "soon"}, "for must be seconds"),
        ("pause/", {"reason": "x" * 501}, "reason"),
        ("pause/", {"until": "tomorrow"}, "until: not a field here"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    console, q: str, rsmq: RedisSMQ, path: str, body: dict[str, Any], text: str
) -> None:
    api = Api("operator")
    answer = api("POST", f"queues/q1/{path}", body)
    assert api.status == 400 and text in answer["error"], answer
    assert rsmq.queue_flow(q) is None


def test_a_viewer_token_may_read_but_not_pause(console, q: str, rsmq: RedisSMQ) -> None:
    api = Api("viewer")
    api("POST", "queues/q1/pause/")
    assert api.status == 403 and rsmq.queue_flow(q) is None
    assert api("GET", "queues/q1/flow/")["flow"] is None


def test_due_by_the_hour_with_its_peak(console, q: str, rsmq: RedisSMQ, r: redis.Redis) -> None:
    rsmq.send_messages(q, ["later"] * 4, delay=3 * 3600)
    api = Api("viewer")
    due = api("GET", "queues/q1/due/?scale=hour")
    assert api.status == 200, due
    assert len(due["buckets"]) == 48 and due["visible"] == 3 and due["hidden"] == 4
    assert due["peak"]["count"] == 4 and due["peak_text"].startswith("4 due ")
    api("GET", "queues/q1/due/?scale=week")
    assert api.status == 400
