"""Pause, throttle and resume on the queue page (dashboard/acting/flow.py): the operator's,
with a reason and an expiry, audited; the page says who honours the flag and warns
about receives that bypass it."""

from __future__ import annotations

import pytest
import redis
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


@pytest.fixture
def q(console, rsmq: RedisSMQ) -> str:
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", ["a", "b", "c"])
    return "q1"


def test_an_operator_pauses_a_queue_for_an_hour_with_a_reason(
    console, q: str, operator: Client, rsmq: RedisSMQ
) -> None:
    data = {"action": "pause", "reason": "deploy 42", "duration": "1h"}
    response = operator.post(console.act(), data, follow=True)
    assert response.status_code == 200
    flow = rsmq.queue_flow(q)
    assert flow is not None and flow.paused and flow.reason == "deploy 42"
    assert flow.until == flow.since + 3_600_000 and flow.by == operator.user.username
    assert rsmq.receive_message(q) is None
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.queue) == ("pause_queue", "ok", q)
    assert row.params == {"state": "paused", "rate": None, "reason": "deploy 42",
                          "seconds": 3600.0, "until": flow.until}  # fmt: skip
    page = response.content.decode()
    assert 'data-flow-state="paused"' in page and "deploy 42" in page
    assert console.flashes(response)[0].startswith("Paused until")


def test_a_throttle_needs_its_rate(console, q: str, operator: Client, rsmq: RedisSMQ) -> None:
    response = operator.post(console.act(), {"action": "throttle", "rate": ""}, **console.htmx())
    assert response.status_code == 422
    assert "rate: receives a second" in response.content.decode()
    assert rsmq.queue_flow(q) is None
    assert AuditEntry.objects.get().outcome == "invalid"
    response = operator.post(console.act(), {"action": "throttle", "rate": "2.5"}, **console.htmx())
    assert response.status_code == 200
    flow = rsmq.queue_flow(q)
    assert flow is not None and flow.rate == 2.5 and flow.until is None


def test_a_bad_duration_is_said_under_its_field(console, q: str, operator: Client) -> None:
    response = operator.post(
        console.act(), {"action": "pause", "duration": "soon"}, **console.htmx()
    )
    assert response.status_code == 422
    assert "for must be seconds (90) or a number with a unit" in response.content.decode()


def test_resume_takes_the_flag_away_audited(
    console, q: str, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.pause_queue(q, reason="x")
    response = operator.post(console.act(), {"action": "resume"}, follow=True)
    assert console.flashes(response) == ["Resumed q1: its consumers receive as usual again."]
    assert rsmq.queue_flow(q) is None
    assert AuditEntry.objects.get().params["state"] == "resumed"


def test_a_viewer_may_not_pause(console, q: str, viewer: Client, rsmq: RedisSMQ) -> None:
    assert viewer.post(console.act(), {"action": "pause"}).status_code == 403
    assert rsmq.queue_flow(q) is None
    assert AuditEntry.objects.get().outcome == "denied"


def test_the_page_names_the_workers_that_honour_it_and_warns_of_a_bypass(
    console, q: str, operator: Client, rsmq: RedisSMQ, r: redis.Redis
) -> None:
    rsmq.register_worker("w1", "box", 41, {q: 2}, 0, 30)
    rsmq.pause_queue(q, reason="incident")
    page = operator.get(console.queue()).content.decode()
    assert "<code>box:41</code>" in page and "data-flow-honour" in page
    assert "none of them has received from this queue since it was set" in page
    r.hincrby(f"{console.ns}:{q}:Q", "totalrecv", 3)  # Node rsmq receiving meanwhile
    page = operator.get(console.queue()).content.decode()
    assert "Bypassed: 3 messages were received" in page
    assert "Its alerts are held while it is paused since" in page


def test_a_queue_that_runs_freely_offers_the_forms_to_an_operator_only(
    console, q: str, operator: Client, viewer: Client
) -> None:
    assert "data-flow-forms" in operator.get(console.queue()).content.decode()
    page = viewer.get(console.queue()).content.decode()
    assert "data-flow-forms" not in page and "data-flow-none" in page


def test_node_rsmq_still_receives_from_a_paused_queue_and_the_page_shows_it(
    console, q: str, operator: Client, rsmq: RedisSMQ, node
) -> None:
    rsmq.pause_queue(q, reason="deploy 42")
    assert rsmq.receive_message(q) is None  # ours: held
    got = node.run(("receiveMessage", {"qname": q}), ("receiveMessage", {"qname": q}))
    assert all(g["id"] for g in got)  # Node rsmq: never reads the flag
    page = operator.get(console.queue()).content.decode()
    assert "Bypassed: 2 messages were received" in page
    assert "Node rsmq or another port is consuming this queue" in page
