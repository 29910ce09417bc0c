"""Requeueing one message from its page (visible now, rc kept)."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


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
    assert (row.user, row.username) == (operator.user, "otto")
    assert (row.connection, row.namespace, row.queue) == ("default", console.ns, "q1")
    assert (row.action, row.ids, row.count, row.params, row.outcome, row.detail) == (
        "requeue",
        [mid],
        1,
        {},
        "ok",
        "Requeued: visible now.",
    )
