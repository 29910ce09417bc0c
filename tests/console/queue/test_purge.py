"""Purging a queue (admins, typed confirmation)."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def test_it_purges_the_queue(console, q1, admin: Client, rsmq: RedisSMQ) -> None:
    response = admin.post(console.act(), {"action": "purge", "purge-confirm": "q1"}, follow=True)
    assert console.flashes(response) == ["Purged 3 messages from q1."]
    a = rsmq.get_queue_attributes("q1")
    assert (a.msgs, a.totalsent, a.totalrecv) == (0, 3, 2)


def test_it_audits_a_purge(console, q1, admin: Client) -> None:
    admin.post(console.act(), {"action": "purge", "purge-confirm": "q1"})
    row = AuditEntry.objects.get()
    assert (row.queue, row.action, row.count, row.outcome, row.detail) == (
        "q1",
        "purge",
        3,
        "ok",
        "Purged 3 messages from q1.",
    )


@pytest.mark.parametrize("typed", ["", "Q1", "q2", "q1q1"])
def test_it_wants_the_queue_name_typed_to_purge(
    console, q1, admin: Client, ns_state, typed: str
) -> None:
    before = ns_state()
    response = admin.post(console.act(), {"action": "purge", "purge-confirm": typed})
    assert response.status_code == 422
    error = "Type q1 exactly to confirm." if typed else "This field is required."
    assert error in response.content.decode()
    assert ns_state() == before
    assert AuditEntry.objects.get().outcome == "invalid"  # refused, and recorded
