"""The queue page's dead letters: the policy and its link, setting it, redriving."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


@pytest.fixture
def queues(console, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("q1")
    rsmq.create_queue("dead")


def dead_letter_one(rsmq: RedisSMQ) -> str:
    rsmq.set_dead_letter_policy("q1", "dead", 1)
    mid = rsmq.send_message("q1", "poison")
    rsmq.receive_message("q1", vt=0)
    assert rsmq.receive_message("q1") is None  # its 2nd receive sent it to "dead"
    return mid


def test_it_shows_the_policy_with_a_link_to_the_dead_letter_queue(
    console, queues, rsmq: RedisSMQ, viewer: Client
) -> None:
    dead_letter_one(rsmq)
    page = viewer.get(console.queue("q1")).content.decode()
    assert f'href="{console.queue("dead")}"' in page
    assert "After <strong>1</strong> receive a message goes to" in page
    assert "1 dead-lettered so far." in page


def test_it_says_when_there_is_no_policy(console, queues, viewer: Client) -> None:
    assert "No dead-letter policy" in viewer.get(console.queue("q1")).content.decode()


def test_an_admin_sets_and_removes_the_policy(
    console, queues, rsmq: RedisSMQ, admin: Client
) -> None:
    response = admin.post(console.act("q1"), {"action": "policy", "dlq": "dead", "maxrc": "3"})
    assert response.status_code == 302
    policy = rsmq.get_dead_letter_policy("q1")
    assert (policy.dlq, policy.maxrc) == ("dead", 3)
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.params) == (
        "set_policy", "ok", {"dlq": "dead", "maxrc": 3},
    )  # fmt: skip

    admin.post(console.act("q1"), {"action": "policy", "dlq": "", "maxrc": ""})
    assert rsmq.get_dead_letter_policy("q1") is None


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"dlq": "dead", "maxrc": ""}, "Give both a dead-letter queue and a receive count."),
        ({"dlq": "dead", "maxrc": "0"}, "maxrc must be an integer between 1 and 1000"),
        ({"dlq": "dead", "maxrc": "1001"}, "maxrc must be an integer between 1 and 1000"),
        ({"dlq": "bad name", "maxrc": "3"}, "(1 to 160 characters of a-z A-Z 0-9 _ -)"),
    ],
)
def test_it_rejects_a_bad_policy_and_changes_nothing(
    console, queues, rsmq: RedisSMQ, admin: Client, data: dict, error: str
) -> None:
    response = admin.post(console.act("q1"), {"action": "policy", **data})
    assert response.status_code == 422
    assert error in response.content.decode()
    assert rsmq.get_dead_letter_policy("q1") is None


def test_a_policy_naming_a_missing_queue_is_an_audited_error(
    console, queues, rsmq: RedisSMQ, admin: Client
) -> None:
    response = admin.post(console.act("q1"), {"action": "policy", "dlq": "nope", "maxrc": "3"})
    assert response.status_code == 422
    assert "Queue not found: nope" in response.content.decode()
    assert AuditEntry.objects.get().outcome == "error"


def test_an_operator_may_not_set_a_policy(console, queues, rsmq: RedisSMQ, operator: Client):
    response = operator.post(console.act("q1"), {"action": "policy", "dlq": "dead", "maxrc": "3"})
    assert response.status_code == 403
    assert rsmq.get_dead_letter_policy("q1") is None
    assert AuditEntry.objects.get().outcome == "denied"


def test_an_operator_redrives_dead_letters_back_to_their_queue(
    console, queues, rsmq: RedisSMQ, operator: Client
) -> None:
    mid = dead_letter_one(rsmq)
    response = operator.post(
        console.act("dead"), {"action": "redrive", "to": "", "confirm": "dead"}
    )
    assert response.status_code == 302
    back = rsmq.get_message("q1", mid)
    assert back is not None and (back.state, back.rc) == ("visible", 0)
    row = AuditEntry.objects.get()
    assert (row.action, row.queue, row.count, row.detail) == (
        "redrive", "dead", 1, "Redrove 1 message to the queues they came from.",
    )  # fmt: skip


def test_a_viewer_may_not_redrive(console, queues, rsmq: RedisSMQ, viewer: Client) -> None:
    mid = dead_letter_one(rsmq)
    assert viewer.post(console.act("dead"), {"action": "redrive"}).status_code == 403
    assert rsmq.get_message("dead", mid) is not None


def test_redrive_with_nothing_to_redrive_says_so(console, queues, rsmq, operator: Client):
    rsmq.set_dead_letter_policy("q1", "dead", 1)
    rsmq.send_message("dead", "no source")
    response = operator.post(
        console.act("dead"), {"action": "redrive", "confirm": "dead"},
        **console.htmx(current=console.queue("dead")),
    )  # fmt: skip
    assert "Nothing to redrive" in " ".join(console.flashes(response))


def test_an_operator_may_not_redrive_a_queue_that_is_no_dead_letter_queue(
    console, queues, rsmq: RedisSMQ, operator: Client
) -> None:
    mid = rsmq.send_message("q1", "ordinary")
    response = operator.post(console.act("q1"), {"action": "redrive", "to": "dead"})
    assert response.status_code == 403
    assert rsmq.get_message("q1", mid) is not None
    row = AuditEntry.objects.get()
    assert (row.action, row.queue, row.outcome, row.detail) == (
        "redrive", "q1", "denied", "This needs the admin role.",
    )  # fmt: skip


def test_an_admin_redrives_a_plain_queue_only_with_its_name_typed(
    console, queues, rsmq: RedisSMQ, admin: Client
) -> None:
    mid = rsmq.send_message("q1", "ordinary")
    refused = admin.post(console.act("q1"), {"action": "redrive", "to": "dead", "confirm": "q"})
    assert refused.status_code == 422
    assert "Type q1 exactly to confirm." in refused.content.decode()
    assert rsmq.get_message("q1", mid) is not None
    done = admin.post(console.act("q1"), {"action": "redrive", "to": "dead", "confirm": "q1"})
    assert done.status_code == 302
    assert rsmq.get_message("dead", mid) is not None
    rows = AuditEntry.objects.order_by("id")
    assert [(r.action, r.outcome) for r in rows] == [("redrive", "invalid"), ("redrive", "ok")]
    assert rows[0].detail == "confirm: Type q1 exactly to confirm."


def test_redrive_leaves_a_message_in_flight_in_the_dead_letter_queue(
    console, queues, rsmq: RedisSMQ, operator: Client
) -> None:
    mid = dead_letter_one(rsmq)
    other = rsmq.send_message("dead", "held")
    held = rsmq.receive_message("dead", vt=60)
    assert held is not None and held.id in {mid, other}
    operator.post(console.act("dead"), {"action": "redrive", "to": "q1", "confirm": "dead"})
    assert rsmq.get_message("dead", held.id) is not None
    assert AuditEntry.objects.get().count == 1


@pytest.mark.parametrize(
    ("role", "queue", "offered", "confirmed"),
    [
        ("viewer", "dead", False, False),
        ("operator", "dead", True, True),
        ("operator", "q1", False, False),
        ("admin", "dead", True, True),
        ("admin", "q1", True, True),
    ],
)
def test_the_redrive_form_is_offered_only_where_it_applies(
    console, queues, rsmq: RedisSMQ, as_role, role, queue, offered, confirmed
) -> None:
    rsmq.set_dead_letter_policy("q1", "dead", 1)
    rsmq.send_message("dead", "x")
    rsmq.send_message("q1", "x")
    page = as_role(role).get(console.queue(queue)).content.decode()
    assert ('value="redrive"' in page) is offered
    assert ('name="confirm"' in page) is confirmed


def test_a_dead_letter_redrive_states_its_count_and_wants_the_name_typed(
    console, queues, rsmq: RedisSMQ, operator: Client
) -> None:
    """One click used to move every dead letter, uncounted, unconfirmed."""
    mids = [dead_letter_one(rsmq) for _ in range(3)]
    page = operator.get(console.queue("dead")).content.decode()
    assert 'data-redrive-count="3"' in page and "Redrive 3 visible" in page

    unconfirmed = operator.post(console.act("dead"), {"action": "redrive", "to": ""})
    refused = operator.post(console.act("dead"), {"action": "redrive", "confirm": "deda"})

    assert (unconfirmed.status_code, refused.status_code) == (422, 422)
    assert "Type dead exactly to confirm." in refused.content.decode()
    assert rsmq.get_queue_attributes("dead").msgs == 3
    done = operator.post(console.act("dead"), {"action": "redrive", "to": "", "confirm": "dead"})
    assert done.status_code == 302
    assert {rsmq.get_message("q1", m).state for m in mids} == {"visible"}  # type: ignore[union-attr]
