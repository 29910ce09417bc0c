"""The message page's POST view: requeue, change visibility, delete, move one message,
including a message another consumer deleted first."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytest_plugins = ["console_fixtures"]
pytestmark = pytest.mark.django_db


@pytest.fixture
def mid(console, rsmq: RedisSMQ) -> str:
    """One message in q1, received once and in flight for a minute; an empty q2."""
    rsmq.create_queue("q1")
    rsmq.create_queue("q2")
    mid = rsmq.send_message("q1", "payload")
    rsmq.send_message("q1", "other")
    rsmq.receive_message("q1", vt=60)
    return mid


def _gone(mid: str) -> str:
    return f"Message {mid} is no longer in queue q1: another consumer deleted it."


# -- requeue -----------------------------------------------------------------------------


def test_it_requeues_the_message(console, mid, operator: Client, rsmq: RedisSMQ) -> None:
    operator.post(console.message_act(mid), {"action": "requeue"})
    m = rsmq.get_message("q1", mid)
    assert (m.state, m.rc) == ("visible", 1)


def test_it_redirects_back_to_the_message(console, mid, operator: Client) -> None:
    response = operator.post(console.message_act(mid), {"action": "requeue"})
    assert response.status_code == 302
    assert response["Location"] == console.message(mid)


def test_it_confirms_a_requeue(console, mid, operator: Client) -> None:
    response = operator.post(console.message_act(mid), {"action": "requeue"}, follow=True)
    assert console.flashes(response) == ["Requeued: visible now."]


def test_it_answers_htmx_with_the_content_partial(console, mid, operator: Client) -> None:
    response = operator.post(
        console.message_act(mid), {"action": "requeue"}, **console.htmx(console.message(mid))
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert page.lstrip().startswith('<div id="content">')
    assert "<html" not in page
    assert console.flashes(response) == ["Requeued: visible now."]
    assert '<span class="state visible">visible</span>' in page


def test_it_audits_a_requeue(console, mid, operator: Client) -> None:
    operator.post(console.message_act(mid), {"action": "requeue"})
    row = AuditEntry.objects.get()
    assert (row.user, row.username, row.connection, row.namespace, row.queue) == (
        operator.user,
        "otto",
        "default",
        console.ns,
        "q1",
    )
    assert (row.action, row.ids, row.count, row.params, row.outcome, row.detail) == (
        "requeue",
        [mid],
        1,
        {},
        "ok",
        "Requeued: visible now.",
    )


# -- visibility --------------------------------------------------------------------------


def test_it_changes_the_visibility(console, mid, operator: Client, rsmq: RedisSMQ) -> None:
    operator.post(console.message_act(mid), {"action": "visibility", "vt": "120"})
    m = rsmq.get_message("q1", mid)
    assert m.state == "inflight"
    assert 119_000 <= m.visible_at - m.read_at <= 120_000


def test_it_makes_the_message_visible_now_with_zero(
    console, mid, operator: Client, rsmq: RedisSMQ
) -> None:
    operator.post(console.message_act(mid), {"action": "visibility", "vt": "0"})
    assert rsmq.get_message("q1", mid).state == "visible"


def test_it_confirms_a_visibility_change(console, mid, operator: Client) -> None:
    response = operator.post(
        console.message_act(mid), {"action": "visibility", "vt": "120"}, follow=True
    )
    assert console.flashes(response) == ["Visible again in 120 s."]


def test_it_audits_a_visibility_change(console, mid, operator: Client) -> None:
    operator.post(console.message_act(mid), {"action": "visibility", "vt": "120"})
    row = AuditEntry.objects.get()
    assert (row.action, row.ids, row.count, row.params, row.outcome) == (
        "visibility",
        [mid],
        1,
        {"vt": 120},
        "ok",
    )


@pytest.mark.parametrize(
    ("vt", "error"),
    [
        ("-1", "vt must be an integer between 0 and 9999999"),
        ("10000000", "vt must be an integer between 0 and 9999999"),
        ("soon", "Enter a whole number."),
        ("", "This field is required."),
    ],
)
def test_it_rejects_a_bad_visibility(
    console, mid, operator: Client, ns_state, vt: str, error: str
) -> None:
    before = ns_state()
    response = operator.post(console.message_act(mid), {"action": "visibility", "vt": vt})
    assert response.status_code == 422
    assert error in response.content.decode()
    assert ns_state() == before
    assert not AuditEntry.objects.exists()


# -- delete ------------------------------------------------------------------------------


def test_it_deletes_the_message(console, mid, operator: Client, rsmq: RedisSMQ) -> None:
    operator.post(console.message_act(mid), {"action": "delete"})
    assert rsmq.get_message("q1", mid) is None


def test_it_goes_to_the_queue_after_deleting(console, mid, operator: Client) -> None:
    response = operator.post(console.message_act(mid), {"action": "delete"}, follow=True)
    assert response.redirect_chain == [(console.queue(), 302)]
    assert console.flashes(response) == [f"Deleted message {mid}."]


def test_it_tells_htmx_to_go_to_the_queue_after_deleting(console, mid, operator: Client) -> None:
    response = operator.post(
        console.message_act(mid), {"action": "delete"}, **console.htmx(console.message(mid))
    )
    assert response.status_code == 204
    assert response["HX-Redirect"] == console.queue()


def test_it_audits_a_delete(console, mid, operator: Client) -> None:
    operator.post(console.message_act(mid), {"action": "delete"})
    row = AuditEntry.objects.get()
    assert (row.action, row.ids, row.count, row.outcome, row.detail) == (
        "delete",
        [mid],
        1,
        "ok",
        f"Deleted message {mid}.",
    )


# -- move --------------------------------------------------------------------------------


def test_it_moves_the_message(console, mid, operator: Client, rsmq: RedisSMQ) -> None:
    operator.post(console.message_act(mid), {"action": "move", "to": "q2"})
    assert rsmq.get_message("q1", mid) is None
    moved = rsmq.get_message("q2", mid)
    assert (moved.message, moved.rc, moved.state) == ("payload", 1, "visible")


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
        {"to": "q2"},
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
        {"to": "q2"},
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


# -- a message another consumer deleted first --------------------------------------------


@pytest.mark.parametrize(
    "data", [{"action": "requeue"}, {"action": "visibility", "vt": "10"}, {"action": "delete"}]
)
def test_it_reports_a_message_that_vanished(
    console, mid, operator: Client, rsmq: RedisSMQ, data: dict
) -> None:
    rsmq.delete_message("q1", mid)
    response = operator.post(console.message_act(mid), data, follow=True)
    assert response.status_code == 200
    assert response.redirect_chain == [(console.queue(), 302)]
    assert console.flashes(response) == [_gone(mid)]


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
    console, mid, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_message("q1", mid)
    operator.post(console.message_act(mid), {"action": "requeue"})
    row = AuditEntry.objects.get()
    assert (row.action, row.ids, row.count, row.outcome, row.detail) == (
        "requeue",
        [mid],
        0,
        "ok",
        _gone(mid),
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


# -- what is not an action ---------------------------------------------------------------


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
