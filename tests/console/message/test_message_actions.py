"""The message page's POST view: one view for its four actions; a message another
consumer deleted first; what is not an action. Each action has its own file
(test_message_requeue.py, test_message_visibility.py, …)."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "data", [{"action": "requeue"}, {"action": "visibility", "vt": "10"}, {"action": "delete"}]
)
def test_it_reports_a_message_that_vanished(
    console, mid, operator: Client, rsmq: RedisSMQ, data: dict, gone_text
) -> None:
    rsmq.delete_message("q1", mid)
    response = operator.post(console.message_act(mid), data, follow=True)
    assert response.status_code == 200
    assert response.redirect_chain == [(console.queue(), 302)]
    assert console.flashes(response) == [gone_text(mid)]


@pytest.mark.parametrize(
    "data", [{"action": "requeue"}, {"action": "visibility", "vt": "10"}, {"action": "delete"}]
)
def test_it_tells_htmx_to_go_to_the_queue_when_the_message_vanished(
    console, mid, operator: Client, rsmq: RedisSMQ, data: dict
) -> None:
    rsmq.delete_message("q1", mid)
    response = operator.post(console.message_act(mid), data, **console.htmx(console.message(mid)))
    assert response.status_code == 204
    assert response["HX-Redirect"] == console.queue()


def test_it_audits_an_action_on_a_vanished_message_as_a_no_op(
    console, mid, operator: Client, rsmq: RedisSMQ, gone_text
) -> None:
    rsmq.delete_message("q1", mid)
    operator.post(console.message_act(mid), {"action": "requeue"})
    row = AuditEntry.objects.get()
    assert (row.action, row.ids, row.count, row.outcome, row.detail) == (
        "requeue",
        [mid],
        0,
        "ok",
        gone_text(mid),
    )


def test_it_reports_moving_a_message_that_vanished(
    console, mid, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_message("q1", mid)
    response = operator.post(console.message_act(mid), {"action": "move", "to": "q2"}, follow=True)
    assert response.redirect_chain == [(console.queue(), 302)]
    assert console.flashes(response) == ["Not moved: gone, or too large for q2."]


def test_it_handles_a_queue_deleted_meanwhile(
    console, mid, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_queue("q1")
    response = operator.post(console.message_act(mid), {"action": "requeue"})
    assert response.status_code == 404
    assert "Queue q1 does not exist (any more)." in response.content.decode()


def test_it_audits_an_action_in_a_queue_deleted_meanwhile(
    console, mid, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_queue("q1")
    operator.post(console.message_act(mid), {"action": "requeue"})
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.detail) == ("requeue", "error", "Queue not found: q1")


@pytest.mark.parametrize("action", ["", "purge", "receive"])
def test_it_answers_404_to_an_unknown_action(
    console, mid, operator: Client, ns_state, action: str
) -> None:
    before = ns_state()
    response = operator.post(console.message_act(mid), {"action": action})
    assert response.status_code == 404
    assert ns_state() == before
    assert not AuditEntry.objects.exists()


def test_it_answers_404_to_an_invalid_message_id(console, mid, operator: Client) -> None:
    response = operator.post(console.message_act("not-an-id"), {"action": "delete"})
    assert response.status_code == 404
    assert not AuditEntry.objects.exists()


def test_it_answers_404_for_an_invalid_queue_name(console, mid, login) -> None:
    client = login("oscar", "operator")
    client.raise_request_exception = False
    response = client.post(console.message_act(mid, "bad.name"), {"action": "requeue"})
    assert response.status_code == 404


def test_it_rejects_get(console, mid, operator: Client) -> None:
    assert operator.get(console.message_act(mid)).status_code == 405
