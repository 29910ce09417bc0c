"""Sending a message from the queue page."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def test_it_sends_a_message(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    operator.post(console.act(), {"action": "send", "body": "hello", "delay": ""})
    page = rsmq.list_messages("q1", state="visible", limit=10)
    assert [m.message for m in page.items] == ["three", "hello"]


def test_it_says_which_message_it_sent(
    console, q1, operator: Client, rsmq: RedisSMQ, states
) -> None:
    response = operator.post(console.act(), {"action": "send", "body": "hello"}, follow=True)
    (new_id,) = set(states()) - set(q1)
    assert console.flashes(response) == [f"Sent message {new_id}."]


def test_it_sends_a_message_with_a_delay(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    operator.post(console.act(), {"action": "send", "body": "later", "delay": "60"})
    (delayed,) = rsmq.list_messages("q1", state="delayed").items
    assert delayed.message == "later"
    assert 59_000 <= delayed.visible_at - delayed.read_at <= 60_000


def test_it_keeps_a_bodys_whitespace(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    operator.post(console.act(), {"action": "send", "body": "  padded\n"})
    assert rsmq.list_messages("q1", state="visible").items[-1].message == "  padded\n"


def test_it_audits_a_send(console, q1, operator: Client, rsmq: RedisSMQ, states) -> None:
    operator.post(console.act(), {"action": "send", "body": "hello", "delay": "5"})
    (new_id,) = set(states()) - set(q1)
    row = AuditEntry.objects.get()
    assert (row.user, row.username) == (operator.user, "otto")
    assert (row.connection, row.namespace, row.queue) == ("default", console.ns, "q1")
    assert (row.action, row.ids, row.count, row.params, row.outcome, row.detail) == (
        "send",
        [],
        1,
        {"delay": 5, "bytes": 5},
        "ok",
        f"Sent message {new_id}.",
    )


@pytest.mark.parametrize(
    ("delay", "error"),
    [
        ("-1", "delay must be an integer between 0 and 9999999"),
        ("10000000", "delay must be an integer between 0 and 9999999"),
        ("soon", "delay must be seconds (90) or a number with a unit"),
    ],
)
def test_it_rejects_a_bad_delay(
    console, q1, operator: Client, ns_state, delay: str, error: str
) -> None:
    before = ns_state()
    response = operator.post(console.act(), {"action": "send", "body": "x", "delay": delay})
    assert response.status_code == 422
    assert error in response.content.decode()
    assert ns_state() == before
    assert AuditEntry.objects.get().outcome == "invalid"  # refused, and recorded


def test_it_rejects_an_empty_body(console, q1, operator: Client, ns_state) -> None:
    before = ns_state()
    response = operator.post(console.act(), {"action": "send", "body": ""})
    assert response.status_code == 422
    assert "This field is required." in response.content.decode()
    assert ns_state() == before


def test_it_answers_htmx_form_errors_with_the_partial(console, q1, operator: Client) -> None:
    response = operator.post(
        console.act(), {"action": "send", "body": "x", "delay": "-1"}, **console.htmx()
    )
    assert response.status_code == 422
    assert "<html" not in response.content.decode()
    assert "delay must be an integer between 0 and 9999999" in response.content.decode()


def test_it_reports_a_body_too_large_for_the_queue(
    console, q1, operator: Client, rsmq: RedisSMQ, ns_state
) -> None:
    rsmq.set_queue_attributes("q1", maxsize=1024)
    before = ns_state()
    response = operator.post(console.act(), {"action": "send", "body": "x" * 2000})
    assert response.status_code == 422
    assert console.flashes(response) == [
        "Message too long: 2000 bytes, the queue's maxsize is 1024"
    ]
    assert ns_state() == before


def test_it_audits_a_failed_send(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    rsmq.set_queue_attributes("q1", maxsize=1024)
    operator.post(console.act(), {"action": "send", "body": "x" * 2000})
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.count, row.detail) == (
        "send",
        "error",
        None,
        "Message too long: 2000 bytes, the queue's maxsize is 1024",
    )
