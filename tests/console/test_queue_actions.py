"""The queue page's POST view: send, requeue / delete / move over a selection, requeue /
delete all in a state, edit attributes, purge, delete queue; htmx and plain forms."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytest_plugins = ["console_fixtures"]
pytestmark = pytest.mark.django_db

NEXT = "?state=inflight&page=1"


@pytest.fixture
def q1(console, rsmq: RedisSMQ) -> list[str]:
    """q1 with three messages: the first two in flight, the third visible; an empty q2."""
    rsmq.create_queue("q1")
    rsmq.create_queue("q2")
    ids = rsmq.send_messages("q1", ["one", "two", "three"])
    rsmq.receive_messages("q1", 2, vt=60)
    return ids


def _states(rsmq: RedisSMQ, qname: str = "q1") -> dict[str, str]:
    return {m.id: m.state for m in rsmq.list_messages(qname, limit=100).items}


# -- the plain form and htmx -------------------------------------------------------------


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
        {"action": "requeue_all", "state": "inflight"},
        "Requeued 2 messages (inflight).",
    ),
    "delete_all": (
        {"action": "delete_all", "state": "all", "confirm_all": "yes"},
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
    console, q1, operator: Client, rsmq: RedisSMQ
) -> None:
    response = operator.post(console.act(), {"action": "send", "body": "hi"}, **console.htmx())
    (new_id,) = set(_states(rsmq)) - set(q1)
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
    assert 'href="?state=inflight&amp;page=2">Next →</a>' in response.content.decode()


# -- send --------------------------------------------------------------------------------


def test_it_sends_a_message(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    operator.post(console.act(), {"action": "send", "body": "hello", "delay": ""})
    page = rsmq.list_messages("q1", state="visible", limit=10)
    assert [m.message for m in page.items] == ["three", "hello"]


def test_it_says_which_message_it_sent(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    response = operator.post(console.act(), {"action": "send", "body": "hello"}, follow=True)
    (new_id,) = set(_states(rsmq)) - set(q1)
    assert console.flashes(response) == [f"Sent message {new_id}."]


def test_it_sends_a_message_with_a_delay(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    operator.post(console.act(), {"action": "send", "body": "later", "delay": "60"})
    (delayed,) = rsmq.list_messages("q1", state="delayed").items
    assert delayed.message == "later"
    assert 59_000 <= delayed.visible_at - delayed.read_at <= 60_000


def test_it_keeps_a_bodys_whitespace(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    operator.post(console.act(), {"action": "send", "body": "  padded\n"})
    assert rsmq.list_messages("q1", state="visible").items[-1].message == "  padded\n"


def test_it_audits_a_send(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    operator.post(console.act(), {"action": "send", "body": "hello", "delay": "5"})
    (new_id,) = set(_states(rsmq)) - set(q1)
    row = AuditEntry.objects.get()
    assert (row.user, row.username, row.connection, row.namespace, row.queue) == (
        operator.user,
        "otto",
        "default",
        console.ns,
        "q1",
    )
    assert (row.action, row.ids, row.count, row.params, row.outcome, row.detail) == (
        "send",
        [],
        1,
        {"delay": 5, "bytes": 5},
        "ok",
        f"Sent message {new_id}.",
    )


@pytest.mark.parametrize(
    ("delay", "error"),
    [
        ("-1", "delay must be an integer between 0 and 9999999"),
        ("10000000", "delay must be an integer between 0 and 9999999"),
        ("soon", "Enter a whole number."),
    ],
)
def test_it_rejects_a_bad_delay(
    console, q1, operator: Client, ns_state, delay: str, error: str
) -> None:
    before = ns_state()
    response = operator.post(console.act(), {"action": "send", "body": "x", "delay": delay})
    assert response.status_code == 422
    assert error in response.content.decode()
    assert ns_state() == before
    assert not AuditEntry.objects.exists()


def test_it_rejects_an_empty_body(console, q1, operator: Client, ns_state) -> None:
    before = ns_state()
    response = operator.post(console.act(), {"action": "send", "body": ""})
    assert response.status_code == 422
    assert "This field is required." in response.content.decode()
    assert ns_state() == before


def test_it_answers_htmx_form_errors_with_the_partial(console, q1, operator: Client) -> None:
    response = operator.post(
        console.act(), {"action": "send", "body": "x", "delay": "-1"}, **console.htmx()
    )
    assert response.status_code == 422
    assert "<html" not in response.content.decode()
    assert "delay must be an integer between 0 and 9999999" in response.content.decode()


def test_it_reports_a_body_too_large_for_the_queue(
    console, q1, operator: Client, rsmq: RedisSMQ, ns_state
) -> None:
    rsmq.set_queue_attributes("q1", maxsize=1024)
    before = ns_state()
    response = operator.post(console.act(), {"action": "send", "body": "x" * 2000})
    assert response.status_code == 422
    assert console.flashes(response) == [
        "Message too long: 2000 bytes, the queue's maxsize is 1024"
    ]
    assert ns_state() == before


def test_it_audits_a_failed_send(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    rsmq.set_queue_attributes("q1", maxsize=1024)
    operator.post(console.act(), {"action": "send", "body": "x" * 2000})
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.count, row.detail) == (
        "send",
        "error",
        None,
        "Message too long: 2000 bytes, the queue's maxsize is 1024",
    )


# -- requeue / delete / move a selection -------------------------------------------------


def test_it_requeues_the_selection(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    operator.post(console.act(), {"action": "requeue", "ids": q1[:2]})
    assert _states(rsmq) == {q1[0]: "visible", q1[1]: "visible", q1[2]: "visible"}


def test_it_keeps_the_receive_count_when_requeueing(
    console, q1, operator: Client, rsmq: RedisSMQ
) -> None:
    operator.post(console.act(), {"action": "requeue", "ids": q1[:1]})
    assert rsmq.get_message("q1", q1[0]).rc == 1


def test_it_audits_a_requeue(console, q1, operator: Client) -> None:
    operator.post(console.act(), {"action": "requeue", "ids": q1[:2]})
    row = AuditEntry.objects.get()
    assert (row.queue, row.action, row.ids, row.count, row.params, row.outcome, row.detail) == (
        "q1",
        "requeue",
        q1[:2],
        2,
        {},
        "ok",
        "Requeued 2 messages.",
    )


def test_it_reports_selected_messages_that_left_the_queue(
    console, q1, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_message("q1", q1[1])  # another consumer was quicker
    response = operator.post(console.act(), {"action": "requeue", "ids": q1[:2]}, follow=True)
    assert response.status_code == 200
    assert console.flashes(response) == ["Requeued 1 message. 1 had already left the queue."]


def test_it_asks_for_a_selection(console, q1, operator: Client, ns_state) -> None:
    before = ns_state()
    response = operator.post(console.act(), {"action": "requeue"}, follow=True)
    assert console.flashes(response) == ["Select at least one message."]
    assert ns_state() == before
    assert not AuditEntry.objects.exists()


def test_it_ignores_ids_that_are_not_message_ids(console, q1, operator: Client) -> None:
    response = operator.post(
        console.act(), {"action": "delete", "ids": ["nope", "../../x"]}, follow=True
    )
    assert console.flashes(response) == ["Select at least one message."]


def test_it_deletes_the_selection(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    response = operator.post(console.act(), {"action": "delete", "ids": q1[1:]}, follow=True)
    assert console.flashes(response) == ["Deleted 2 messages."]
    assert list(_states(rsmq)) == [q1[0]]


def test_it_audits_a_delete(console, q1, operator: Client) -> None:
    operator.post(console.act(), {"action": "delete", "ids": q1[1:]})
    row = AuditEntry.objects.get()
    assert (row.action, row.ids, row.count, row.outcome) == ("delete", q1[1:], 2, "ok")


def test_it_moves_the_selection(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    response = operator.post(
        console.act(), {"action": "move", "ids": q1[:2], "to": "q2"}, follow=True
    )
    assert console.flashes(response) == ["Moved 2 messages to q2."]
    assert list(_states(rsmq)) == [q1[2]]
    assert _states(rsmq, "q2") == {q1[0]: "visible", q1[1]: "visible"}


def test_it_audits_a_move(console, q1, operator: Client) -> None:
    operator.post(console.act(), {"action": "move", "ids": q1[:2], "to": "q2"})
    row = AuditEntry.objects.get()
    assert (row.action, row.ids, row.count, row.params, row.outcome) == (
        "move",
        q1[:2],
        2,
        {"to": "q2"},
        "ok",
    )


def test_it_reports_a_move_to_a_queue_deleted_meanwhile(
    console, q1, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_queue("q2")
    response = operator.post(
        console.act(), {"action": "move", "ids": q1[:2], "to": "q2"}, follow=True
    )
    assert console.flashes(response) == ["Queue not found: q2"]
    assert set(_states(rsmq)) == set(q1)


@pytest.fixture
def oversized(console, q1, rsmq: RedisSMQ) -> list[str]:
    """Two 2,000-byte messages in q1 and a queue "small" that takes at most 1,024 bytes."""
    rsmq.create_queue("small", maxsize=1024)
    return rsmq.send_messages("q1", ["x" * 2000, "y" * 2000])


def test_it_reports_selected_messages_too_large_to_move(
    console, q1, oversized, operator: Client, rsmq: RedisSMQ
) -> None:
    data = {"action": "move", "ids": [q1[2], *oversized], "to": "small"}
    response = operator.post(console.act(), data, follow=True)
    assert console.flashes(response) == [
        "Moved 1 message to small. 2 were gone or too large for small."
    ]
    assert set(oversized) <= set(_states(rsmq))


def test_it_reports_one_message_too_large_to_move_in_the_singular(
    console, q1, oversized, operator: Client
) -> None:
    data = {"action": "move", "ids": [q1[2], oversized[0]], "to": "small"}
    response = operator.post(console.act(), data, follow=True)
    assert console.flashes(response) == [
        "Moved 1 message to small. 1 was gone or too large for small."
    ]


def test_it_audits_a_failed_move(console, q1, operator: Client, rsmq: RedisSMQ) -> None:
    rsmq.delete_queue("q2")
    operator.post(console.act(), {"action": "move", "ids": q1[:2], "to": "q2"})
    row = AuditEntry.objects.get()
    assert (row.action, row.ids, row.count, row.params, row.outcome, row.detail) == (
        "move",
        q1[:2],
        None,
        {"to": "q2"},
        "error",
        "Queue not found: q2",
    )


def test_it_rejects_a_bad_queue_name_to_move_to(console, q1, operator: Client, ns_state) -> None:
    before = ns_state()
    response = operator.post(console.act(), {"action": "move", "ids": q1[:2], "to": "no way"})
    assert response.status_code == 422
    assert "(1 to 160 characters of a-z A-Z 0-9 _ -)" in response.content.decode()
    assert ns_state() == before


def test_it_reports_moving_to_the_same_queue(console, q1, operator: Client, ns_state) -> None:
    before = ns_state()
    response = operator.post(
        console.act(), {"action": "move", "ids": q1[:1], "to": "q1"}, follow=True
    )
    assert console.flashes(response) == ["dst must be a different queue from src"]
    assert ns_state() == before


# -- requeue all / delete all in a state -------------------------------------------------


def test_it_requeues_all_in_flight(console, q1, admin: Client, rsmq: RedisSMQ) -> None:
    response = admin.post(
        console.act(), {"action": "requeue_all", "state": "inflight"}, follow=True
    )
    assert console.flashes(response) == ["Requeued 2 messages (inflight)."]
    assert set(_states(rsmq).values()) == {"visible"}


def test_it_audits_a_requeue_all(console, q1, admin: Client) -> None:
    admin.post(console.act(), {"action": "requeue_all", "state": "inflight"})
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
    response = admin.post(console.act(), {"action": "requeue_all", "state": "all"}, follow=True)
    assert console.flashes(response) == ["requeue all: state must be hidden, inflight or delayed"]
    assert ns_state() == before
    assert AuditEntry.objects.get().outcome == "error"


def test_it_deletes_all_in_a_state(console, q1, admin: Client, rsmq: RedisSMQ) -> None:
    data = {"action": "delete_all", "state": "inflight", "confirm_all": "yes"}
    response = admin.post(console.act(), data, follow=True)
    assert console.flashes(response) == ["Deleted 2 messages (inflight)."]
    assert list(_states(rsmq)) == [q1[2]]


def test_it_audits_a_delete_all(console, q1, admin: Client) -> None:
    admin.post(console.act(), {"action": "delete_all", "state": "all", "confirm_all": "yes"})
    row = AuditEntry.objects.get()
    assert (row.action, row.count, row.params, row.outcome, row.detail) == (
        "delete_all",
        3,
        {"state": "all"},
        "ok",
        "Deleted 3 messages (all).",
    )


def test_it_wants_the_box_ticked_to_delete_all(console, q1, admin: Client, ns_state) -> None:
    before = ns_state()
    response = admin.post(console.act(), {"action": "delete_all", "state": "all"}, follow=True)
    assert console.flashes(response) == ["Tick “I mean all of them” to delete every message."]
    assert ns_state() == before
    assert not AuditEntry.objects.exists()


def test_it_rejects_an_unknown_state(console, q1, admin: Client, ns_state) -> None:
    before = ns_state()
    data = {"action": "delete_all", "state": "sideways", "confirm_all": "yes"}
    response = admin.post(console.act(), data, follow=True)
    assert console.flashes(response) == [
        "state must be one of all, visible, hidden, inflight, delayed."
    ]
    assert ns_state() == before


# -- edit attributes ---------------------------------------------------------------------

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
    assert not AuditEntry.objects.exists()


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


# -- purge -------------------------------------------------------------------------------


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
    assert not AuditEntry.objects.exists()


# -- delete queue ------------------------------------------------------------------------


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


# -- what is not an action ---------------------------------------------------------------


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
