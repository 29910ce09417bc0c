"""Changing one message's visibility from its page."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


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
        ("soon", "vt must be seconds (90) or a number with a unit"),
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
    assert AuditEntry.objects.get().outcome == "invalid"  # refused, and recorded


def test_it_reads_a_visibility_in_minutes(console, mid, operator: Client, rsmq: RedisSMQ) -> None:
    response = operator.post(console.message_act(mid), {"action": "visibility", "vt": "5m"})
    assert response.status_code == 302
    m = rsmq.get_message("q1", mid)
    assert 299_000 <= m.visible_at - m.read_at <= 300_000
