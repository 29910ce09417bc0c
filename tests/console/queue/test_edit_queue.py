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
        ("delay", "x", "delay must be seconds (90) or a number with a unit"),
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


@pytest.mark.parametrize(
    ("vt", "delay", "seconds"),
    [("90s", "0", (90, 0)), ("5m", "2 min", (300, 120)), ("2h", "1h30m", (7200, 5400)),
     ("1d", "45 sec", (86400, 45)), (" 10M ", "0s", (600, 0))],
)  # fmt: skip
def test_it_reads_the_visibility_and_delay_with_a_unit(
    console, q1, admin: Client, rsmq: RedisSMQ, vt: str, delay: str, seconds: tuple[int, int]
) -> None:
    response = admin.post(console.act(), ATTRS | {"vt": vt, "delay": delay})
    assert response.status_code == 302
    a = rsmq.get_queue_attributes("q1")
    assert (a.vt, a.delay) == seconds


@pytest.mark.parametrize("vt", ["5x", "m5", "1h 30", "1.5h", "5m5m5", "116d"])
def test_a_duration_it_cannot_read_or_out_of_range_names_the_forms_and_the_range(
    console, q1, admin: Client, ns_state, vt: str
) -> None:
    before = ns_state()
    response = admin.post(console.act(), ATTRS | {"vt": vt})
    assert response.status_code == 422
    page = response.content.decode()
    assert "between 0 and 9999999" in page and "5m" in page and " d)" in page
    assert ns_state() == before


def test_the_form_shows_the_visibility_in_its_largest_exact_unit(
    console, admin: Client, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("q2", vt=7200, delay=90)
    page = admin.get(console.queue("q2")).content.decode()
    assert 'name="vt" value="2h"' in page and 'name="delay" value="90"' in page
    rsmq.set_queue_attributes("q2", vt=300)
    assert 'name="vt" value="5m"' in admin.get(console.queue("q2")).content.decode()
