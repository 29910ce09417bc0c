"""Requeue, delete and move over a selection of messages on the queue page."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def test_it_requeues_the_selection(console, q1, operator: Client, rsmq: RedisSMQ, states) -> None:
    operator.post(console.act(), {"action": "requeue", "ids": q1[:2]})
    assert states() == {q1[0]: "visible", q1[1]: "visible", q1[2]: "visible"}


def test_it_keeps_the_receive_count_when_requeueing(
    console, q1, operator: Client, rsmq: RedisSMQ
) -> None:
    operator.post(console.act(), {"action": "requeue", "ids": q1[:1]})
    assert rsmq.get_message("q1", q1[0]).rc == 1


def test_it_audits_a_requeue(console, q1, operator: Client) -> None:
    operator.post(console.act(), {"action": "requeue", "ids": q1[:2]})
    row = AuditEntry.objects.get()
    assert (row.queue, row.action, row.ids, row.count, row.params, row.outcome, row.detail) == (
        "q1",
        "requeue",
        q1[:2],
        2,
        {},
        "ok",
        "Requeued 2 messages.",
    )


def test_it_reports_selected_messages_that_left_the_queue(
    console, q1, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_message("q1", q1[1])  # another consumer was quicker
    response = operator.post(console.act(), {"action": "requeue", "ids": q1[:2]}, follow=True)
    assert response.status_code == 200
    assert console.flashes(response) == ["Requeued 1 message. 1 had already left the queue."]


def test_it_asks_for_a_selection(console, q1, operator: Client, ns_state) -> None:
    before = ns_state()
    response = operator.post(console.act(), {"action": "requeue"}, follow=True)
    assert console.flashes(response) == ["Select at least one message."]
    assert ns_state() == before
    assert AuditEntry.objects.get().outcome == "invalid"  # refused, and recorded


def test_it_ignores_ids_that_are_not_message_ids(console, q1, operator: Client) -> None:
    response = operator.post(
        console.act(), {"action": "delete", "ids": ["nope", "../../x"]}, follow=True
    )
    assert console.flashes(response) == ["Select at least one message."]


def test_it_deletes_the_selection(console, q1, operator: Client, rsmq: RedisSMQ, states) -> None:
    response = operator.post(console.act(), {"action": "delete", "ids": q1[1:]}, follow=True)
    assert console.flashes(response) == ["Deleted 2 messages."]
    assert list(states()) == [q1[0]]


def test_it_audits_a_delete(console, q1, operator: Client) -> None:
    operator.post(console.act(), {"action": "delete", "ids": q1[1:]})
    row = AuditEntry.objects.get()
    assert (row.action, row.ids, row.count, row.outcome) == ("delete", q1[1:], 2, "ok")


def test_it_moves_the_selection(console, q1, operator: Client, rsmq: RedisSMQ, states) -> None:
    response = operator.post(
        console.act(), {"action": "move", "ids": q1[:2], "to": "q2"}, follow=True
    )
    assert console.flashes(response) == ["Moved 2 messages to q2."]
    assert list(states()) == [q1[2]]
    assert states("q2") == {q1[0]: "visible", q1[1]: "visible"}


def test_it_audits_a_move(console, q1, operator: Client) -> None:
    operator.post(console.act(), {"action": "move", "ids": q1[:2], "to": "q2"})
    row = AuditEntry.objects.get()
    assert (row.action, row.ids, row.count, row.params, row.outcome) == (
        "move",
        q1[:2],
        2,
        {"to": "q2", "keep_counts": False},
        "ok",
    )


def test_it_reports_a_move_to_a_queue_deleted_meanwhile(
    console, q1, operator: Client, rsmq: RedisSMQ, states
) -> None:
    rsmq.delete_queue("q2")
    response = operator.post(
        console.act(), {"action": "move", "ids": q1[:2], "to": "q2"}, follow=True
    )
    assert console.flashes(response) == ["Queue not found: q2"]
    assert set(states()) == set(q1)


@pytest.fixture
def oversized(console, q1, rsmq: RedisSMQ) -> list[str]:
    """Two 2,000-byte messages in q1 and a queue "small" that takes at most 1,024 bytes."""
    rsmq.create_queue("small", maxsize=1024)
    return rsmq.send_messages("q1", ["x" * 2000, "y" * 2000])


def test_it_reports_selected_messages_too_large_to_move(
    console, q1, oversized, operator: Client, rsmq: RedisSMQ, states
) -> None:
    data = {"action": "move", "ids": [q1[2], *oversized], "to": "small"}
    response = operator.post(console.act(), data, follow=True)
    assert console.flashes(response) == [
        "Moved 1 message to small. 2 were gone or too large for small."
    ]
    assert set(oversized) <= set(states())


def test_it_reports_one_message_too_large_to_move_in_the_singular(
    console, q1, oversized, operator: Client
) -> None:
    data = {"action": "move", "ids": [q1[2], oversized[0]], "to": "small"}
    response = operator.post(console.act(), data, follow=True)
    assert console.flashes(response) == [
        "Moved 1 message to small. 1 was gone or too large for small."
    ]


def test_it_audits_a_failed_move(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    rsmq.delete_queue("q2")
    operator.post(console.act(), {"action": "move", "ids": q1[:2], "to": "q2"})
    row = AuditEntry.objects.get()
    assert (row.action, row.ids, row.count, row.params, row.outcome, row.detail) == (
        "move",
        q1[:2],
        None,
        {"to": "q2", "keep_counts": False},
        "error",
        "Queue not found: q2",
    )


def test_it_rejects_a_bad_queue_name_to_move_to(console, q1, operator: Client, ns_state) -> None:
    before = ns_state()
    response = operator.post(console.act(), {"action": "move", "ids": q1[:2], "to": "no way"})
    assert response.status_code == 422
    assert "(1 to 160 characters of a-z A-Z 0-9 _ -)" in response.content.decode()
    assert ns_state() == before


def test_it_reports_moving_to_the_same_queue(console, q1, operator: Client, ns_state) -> None:
    before = ns_state()
    response = operator.post(
        console.act(), {"action": "move", "ids": q1[:1], "to": "q1"}, follow=True
    )
    assert console.flashes(response) == ["dst must be a different queue from src"]
    assert ns_state() == before
