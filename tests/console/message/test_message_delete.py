"""Deleting one message from its page."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


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
