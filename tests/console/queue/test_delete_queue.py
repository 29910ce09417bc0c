"""Deleting a queue (admins, typed confirmation)."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def test_it_deletes_the_queue(console, q1, admin: Client, rsmq: RedisSMQ) -> None:
    admin.post(console.act(), {"action": "delete_queue", "delete-confirm": "q1"})
    assert rsmq.list_queues() == ["q2"]


def test_it_redirects_to_the_overview_after_deleting_the_queue(console, q1, admin: Client) -> None:
    response = admin.post(console.act(), {"action": "delete_queue", "delete-confirm": "q1"})
    assert response.status_code == 302
    assert response["Location"] == console.overview()


def test_it_says_how_many_messages_went_with_the_queue(console, q1, admin: Client) -> None:
    response = admin.post(
        console.act(), {"action": "delete_queue", "delete-confirm": "q1"}, follow=True
    )
    assert console.flashes(response) == ["Deleted queue q1 and its 3 messages."]


def test_it_tells_htmx_to_go_to_the_overview(console, q1, admin: Client) -> None:
    response = admin.post(
        console.act(), {"action": "delete_queue", "delete-confirm": "q1"}, **console.htmx()
    )
    assert response.status_code == 204
    assert response["HX-Redirect"] == console.overview()


def test_it_audits_a_queue_deletion(console, q1, admin: Client) -> None:
    admin.post(console.act(), {"action": "delete_queue", "delete-confirm": "q1"})
    row = AuditEntry.objects.get()
    assert (row.queue, row.action, row.count, row.outcome) == ("q1", "delete_queue", 3, "ok")


def test_it_wants_the_queue_name_typed_to_delete_it(console, q1, admin: Client, ns_state) -> None:
    before = ns_state()
    response = admin.post(console.act(), {"action": "delete_queue", "delete-confirm": "q2"})
    assert response.status_code == 422
    assert "Type q1 exactly to confirm." in response.content.decode()
    assert ns_state() == before


def test_it_audits_deleting_a_queue_deleted_meanwhile(
    console, q1, admin: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_queue("q1")
    admin.post(console.act(), {"action": "delete_queue", "delete-confirm": "q1"})
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.detail) == ("delete_queue", "error", "Queue not found: q1")
