"""Editing a queue's attributes (admins)."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


ATTRS = {"action": "edit", "vt": "60", "delay": "5", "maxsize": "2048"}


def test_it_edits_the_attributes(console, q1, admin: Client, rsmq: RedisSMQ) -> None:
    admin.post(console.act(), ATTRS)
    a = rsmq.get_queue_attributes("q1")
    assert (a.vt, a.delay, a.maxsize) == (60, 5, 2048)


def test_it_confirms_the_saved_attributes(console, q1, admin: Client) -> None:
    response = admin.post(console.act(), ATTRS, follow=True)
    assert console.flashes(response) == ["Saved: vt 60 s, delay 5 s, maxsize 2048."]


def test_it_accepts_an_unlimited_maxsize(console, q1, admin: Client, rsmq: RedisSMQ) -> None:
    admin.post(console.act(), ATTRS | {"maxsize": "-1"})
    assert rsmq.get_queue_attributes("q1").maxsize == -1


def test_it_audits_an_edit(console, q1, admin: Client) -> None:
    admin.post(console.act(), ATTRS)
    row = AuditEntry.objects.get()
    assert (row.queue, row.action, row.params, row.outcome) == (
        "q1",
        "edit_queue",
        {"vt": 60, "delay": 5, "maxsize": 2048},
        "ok",
    )


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("vt", "-1", "vt must be an integer between 0 and 9999999"),
        ("vt", "10000000", "vt must be an integer between 0 and 9999999"),
        ("delay", "x", "Enter a whole number."),
        ("maxsize", "100", "maxsize must be between 1024 and 65536 bytes, or -1 for unlimited"),
        ("maxsize", "70000", "maxsize must be between 1024 and 65536 bytes, or -1 for unlimited"),
    ],
)
def test_it_rejects_bad_attributes(
    console, q1, admin: Client, ns_state, field: str, value: str, error: str
) -> None:
    before = ns_state()
    response = admin.post(console.act(), ATTRS | {field: value})
    assert response.status_code == 422
    assert error in response.content.decode()
    assert ns_state() == before
    assert AuditEntry.objects.get().outcome == "invalid"  # refused, and recorded


def test_it_reports_an_edit_of_a_queue_deleted_meanwhile(
    console, q1, admin: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_queue("q1")
    response = admin.post(console.act(), ATTRS, follow=True)
    assert response.status_code == 404
    assert "Queue q1 does not exist (any more)." in response.content.decode()


def test_it_audits_an_edit_of_a_queue_deleted_meanwhile(
    console, q1, admin: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_queue("q1")
    admin.post(console.act(), ATTRS)
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.detail) == ("edit_queue", "error", "Queue not found: q1")
