"""Moving one message to another queue from its page."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def test_it_moves_the_message_with_a_fresh_receive_count(
    console, mid, operator: Client, rsmq: RedisSMQ
) -> None:
    operator.post(console.message_act(mid), {"action": "move", "to": "q2"})
    assert rsmq.get_message("q1", mid) is None
    moved = rsmq.get_message("q2", mid)
    assert (moved.message, moved.rc, moved.state) == ("payload", 0, "visible")


def test_it_keeps_the_receive_count_when_asked(
    console, mid, operator: Client, rsmq: RedisSMQ
) -> None:
    operator.post(console.message_act(mid), {"action": "move", "to": "q2", "keep_counts": "on"})
    moved = rsmq.get_message("q2", mid)
    assert (moved.message, moved.rc) == ("payload", 1)
    assert AuditEntry.objects.get().params == {"to": "q2", "keep_counts": True}


def test_it_follows_the_message_to_its_new_queue(console, mid, operator: Client) -> None:
    response = operator.post(console.message_act(mid), {"action": "move", "to": "q2"}, follow=True)
    assert response.redirect_chain == [(console.message(mid, "q2"), 302)]
    assert console.flashes(response) == ["Moved to q2."]


def test_it_tells_htmx_to_follow_the_message(console, mid, operator: Client) -> None:
    response = operator.post(
        console.message_act(mid), {"action": "move", "to": "q2"}, **console.htmx()
    )
    assert response.status_code == 204
    assert response["HX-Redirect"] == console.message(mid, "q2")


def test_it_audits_a_move(console, mid, operator: Client) -> None:
    operator.post(console.message_act(mid), {"action": "move", "to": "q2"})
    row = AuditEntry.objects.get()
    assert (row.action, row.ids, row.count, row.params, row.outcome) == (
        "move",
        [mid],
        1,
        {"to": "q2", "keep_counts": False},
        "ok",
    )


def test_it_reports_a_move_to_a_queue_deleted_meanwhile(
    console, mid, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_queue("q2")
    response = operator.post(console.message_act(mid), {"action": "move", "to": "q2"}, follow=True)
    assert response.redirect_chain == [(console.message(mid), 302)]
    assert console.flashes(response) == ["Queue not found: q2"]
    assert rsmq.get_message("q1", mid).message == "payload"


def test_it_audits_a_failed_move(console, mid, operator: Client, rsmq: RedisSMQ) -> None:
    rsmq.delete_queue("q2")
    operator.post(console.message_act(mid), {"action": "move", "to": "q2"})
    row = AuditEntry.objects.get()
    assert (row.action, row.ids, row.count, row.params, row.outcome, row.detail) == (
        "move",
        [mid],
        None,
        {"to": "q2", "keep_counts": False},
        "error",
        "Queue not found: q2",
    )


def test_it_reports_a_message_too_large_for_the_target(
    console, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("q1")
    rsmq.create_queue("small", maxsize=1024)
    big = rsmq.send_message("q1", "x" * 2000)
    response = operator.post(
        console.message_act(big), {"action": "move", "to": "small"}, follow=True
    )
    assert console.flashes(response) == ["Not moved: gone, or too large for small."]
    assert rsmq.get_message("q1", big) is not None


def test_it_rejects_a_bad_queue_name_to_move_to(console, mid, operator: Client, ns_state) -> None:
    before = ns_state()
    response = operator.post(console.message_act(mid), {"action": "move", "to": "no way"})
    assert response.status_code == 422
    assert "(1 to 160 characters of a-z A-Z 0-9 _ -)" in response.content.decode()
    assert ns_state() == before


def test_it_reports_a_move_to_the_same_queue(console, mid, operator: Client, ns_state) -> None:
    before = ns_state()
    response = operator.post(console.message_act(mid), {"action": "move", "to": "q1"}, follow=True)
    assert console.flashes(response) == ["dst must be a different queue from src"]
    assert ns_state() == before
