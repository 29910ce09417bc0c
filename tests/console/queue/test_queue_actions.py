"""The queue page's POST view: one view for every action, htmx or plain form; what is
not an action. Each family of actions has its own file (test_send.py, …)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

NEXT = "?state=inflight&page=1"


def test_it_redirects_a_plain_form_back_to_next(console, q1, operator: Client) -> None:
    back = console.queue("q1", NEXT)
    response = operator.post(console.act(), {"action": "requeue", "ids": q1[:1], "next": back})
    assert response.status_code == 302
    assert response["Location"] == back


def test_it_redirects_to_the_queue_page_without_next(console, q1, operator: Client) -> None:
    response = operator.post(console.act(), {"action": "requeue", "ids": q1[:1]})
    assert response["Location"] == console.queue()


def test_it_shows_the_outcome_after_the_redirect(console, q1, operator: Client) -> None:
    response = operator.post(console.act(), {"action": "requeue", "ids": q1[:2]}, follow=True)
    assert console.flashes(response) == ["Requeued 2 messages."]


def test_it_ignores_a_next_on_another_site(console, q1, operator: Client) -> None:
    data = {"action": "requeue", "ids": q1[:1], "next": "https://evil.example/"}
    response = operator.post(console.act(), data)
    assert response["Location"] == console.queue()


def test_it_ignores_a_next_with_three_slashes(console, q1, operator: Client) -> None:
    data = {"action": "requeue", "ids": q1[:1], "next": "///evil.example/"}
    response = operator.post(console.act(), data)
    assert response["Location"] == console.queue()


def test_it_answers_htmx_with_the_content_partial(console, q1, operator: Client) -> None:
    response = operator.post(console.act(), {"action": "requeue", "ids": q1[:2]}, **console.htmx())
    assert response.status_code == 200
    page = response.content.decode()
    assert page.lstrip().startswith('<div id="content">')
    assert "<html" not in page
    assert console.flashes(response) == ["Requeued 2 messages."]


def test_it_rerenders_the_tab_htmx_posted_from(console, q1, operator: Client) -> None:
    current = console.queue("q1", "?state=visible")
    response = operator.post(
        console.act(), {"action": "requeue", "ids": q1[:1]}, **console.htmx(current)
    )
    page = response.content.decode()
    assert re.search(r'class="active" aria-current="page">\s*Visible', page)
    assert q1[0] in page and q1[1] not in page  # q1[1] is still in flight


HTMX_ACTIONS = {
    "requeue": ({"action": "requeue", "ids": [0, 1]}, "Requeued 2 messages."),
    "delete": ({"action": "delete", "ids": [2]}, "Deleted 1 message."),
    "move": ({"action": "move", "ids": [0], "to": "q2"}, "Moved 1 message to q2."),
    "requeue_all": (
        {"action": "requeue_all", "state": "inflight", "all-confirm": "q1"},
        "Requeued 2 messages (inflight).",
    ),
    "delete_all": (
        {"action": "delete_all", "state": "all", "all-confirm": "q1"},
        "Deleted 3 messages (all).",
    ),
    "edit": (
        {"action": "edit", "vt": "9", "delay": "0", "maxsize": "-1"},
        "Saved: vt 9 s, delay 0 s, maxsize -1.",
    ),
    "purge": ({"action": "purge", "purge-confirm": "q1"}, "Purged 3 messages from q1."),
}


@pytest.mark.parametrize("name", list(HTMX_ACTIONS))
def test_it_answers_every_htmx_action_with_its_outcome_in_the_partial(
    console, q1, admin: Client, name: str
) -> None:
    data, flash = HTMX_ACTIONS[name]
    if "ids" in data:
        data = data | {"ids": [q1[i] for i in data["ids"]]}
    response = admin.post(console.act(), data, **console.htmx())
    assert response.status_code == 200
    assert "<html" not in response.content.decode()
    assert console.flashes(response) == [flash]


def test_it_answers_an_htmx_send_with_its_outcome_in_the_partial(
    console, q1, operator: Client, rsmq: RedisSMQ, states
) -> None:
    response = operator.post(console.act(), {"action": "send", "body": "hi"}, **console.htmx())
    (new_id,) = set(states()) - set(q1)
    assert response.status_code == 200
    assert console.flashes(response) == [f"Sent message {new_id}."]
    assert new_id in response.content.decode()  # the re-rendered list shows it


def test_it_keeps_the_tab_in_the_page_links_after_an_htmx_action(
    console, settings, operator: Client, rsmq: RedisSMQ
) -> None:
    settings.RSMQ_PAGE_SIZE = 5
    rsmq.create_queue("q1")
    ids = rsmq.send_messages("q1", [str(i) for i in range(12)])
    rsmq.receive_messages("q1", 12, vt=60)
    current = console.queue("q1", "?state=inflight")
    response = operator.post(
        console.act(), {"action": "requeue", "ids": ids[:1]}, **console.htmx(current)
    )
    page = response.content.decode()
    # Next is a keyset cursor link: it keeps the tab (state=inflight) and goes on after
    # the page's last message.
    assert re.search(r'<a href="\?state=inflight&amp;after=[^"]+" rel="next"[^>]*>Next →</a>', page)


@pytest.mark.parametrize("action", ["", "explode", "REQUEUE"])
def test_it_answers_404_to_an_unknown_action(
    console, q1, admin: Client, ns_state, action: str
) -> None:
    before = ns_state()
    response = admin.post(console.act(), {"action": action, "ids": q1})
    assert response.status_code == 404
    assert ns_state() == before
    assert not AuditEntry.objects.exists()


def test_it_rejects_get(console, q1, admin: Client) -> None:
    assert admin.get(console.act()).status_code == 405


def test_it_handles_a_queue_deleted_meanwhile(
    console, q1, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_queue("q1")
    response = operator.post(console.act(), {"action": "send", "body": "x"})
    assert response.status_code == 404
    assert "Queue q1 does not exist (any more)." in response.content.decode()


def test_it_audits_a_send_to_a_queue_deleted_meanwhile(
    console, q1, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_queue("q1")
    operator.post(console.act(), {"action": "send", "body": "x"})
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.detail) == ("send", "error", "Queue not found: q1")
