"""Requeue all / delete all messages in a state (admins)."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def test_it_requeues_all_in_flight(console, q1, admin: Client, rsmq: RedisSMQ, states) -> None:
    response = admin.post(
        console.act(),
        {"action": "requeue_all", "state": "inflight", "all-confirm": "q1"},
        follow=True,
    )
    assert console.flashes(response) == ["Requeued 2 messages (inflight)."]
    assert set(states().values()) == {"visible"}


def test_it_audits_a_requeue_all(console, q1, admin: Client) -> None:
    admin.post(console.act(), {"action": "requeue_all", "state": "inflight", "all-confirm": "q1"})
    row = AuditEntry.objects.get()
    assert (row.action, row.ids, row.count, row.params, row.outcome) == (
        "requeue_all",
        [],
        2,
        {"state": "inflight"},
        "ok",
    )


def test_it_refuses_to_requeue_all_visible(console, q1, admin: Client, ns_state) -> None:
    before = ns_state()
    data = {"action": "requeue_all", "state": "all", "all-confirm": "q1"}
    response = admin.post(console.act(), data, follow=True)
    assert console.flashes(response) == ["requeue all: state must be hidden, inflight or delayed"]
    assert ns_state() == before
    assert AuditEntry.objects.get().outcome == "error"


def test_it_deletes_all_in_a_state(console, q1, admin: Client, rsmq: RedisSMQ, states) -> None:
    data = {"action": "delete_all", "state": "inflight", "all-confirm": "q1"}
    response = admin.post(console.act(), data, follow=True)
    assert console.flashes(response) == ["Deleted 2 messages (inflight)."]
    assert list(states()) == [q1[2]]


def test_it_audits_a_delete_all(console, q1, admin: Client) -> None:
    admin.post(console.act(), {"action": "delete_all", "state": "all", "all-confirm": "q1"})
    row = AuditEntry.objects.get()
    assert (row.action, row.count, row.params, row.outcome, row.detail) == (
        "delete_all",
        3,
        {"state": "all"},
        "ok",
        "Deleted 3 messages (all).",
    )


@pytest.mark.parametrize("action", ["requeue_all", "delete_all"])
@pytest.mark.parametrize("typed", [None, "yes", "q1 ", "Q1"])
def test_it_wants_the_queue_name_typed_to_act_on_a_whole_state(
    console, q1, admin: Client, ns_state, action: str, typed: str | None
) -> None:
    before = ns_state()
    data = {"action": action, "state": "inflight"}
    if typed is not None:
        data["all-confirm"] = typed
    response = admin.post(console.act(), data, follow=True)
    verb = "requeue" if action == "requeue_all" else "delete"
    assert console.flashes(response) == [f"Type q1 exactly to {verb} every message."]
    assert ns_state() == before
    assert AuditEntry.objects.get().outcome == "invalid"  # refused, and recorded


def test_it_rejects_an_unknown_state(console, q1, admin: Client, ns_state) -> None:
    before = ns_state()
    data = {"action": "delete_all", "state": "sideways", "all-confirm": "q1"}
    response = admin.post(console.act(), data, follow=True)
    assert console.flashes(response) == [
        "state must be one of all, visible, hidden, inflight, delayed."
    ]
    assert ns_state() == before
