"""Undo (dashboard/acting/undo.py): a destructive action's answer carries an Undo (the flash,
htmx or plain, and its audit-log row while it lives); the Undo is the admin's, confirmed,
audited with what it restored and skipped, done once; an expired one offers nothing; past
RSMQ_UNDO_MAX_MB the confirmation says "this cannot be undone" and nothing is kept.
Restores are compared in raw Redis."""

from __future__ import annotations

import datetime as dt

import pytest
import redis
from django.test import Client
from django.utils import timezone

from dashboard.models import AuditEntry, UndoEntry
from dashboard.serving.checks import problems
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def raw(r: redis.Redis, ns: str, qname: str) -> tuple[dict[str, str], list[tuple[str, float]]]:
    return r.hgetall(f"{ns}:{qname}:Q"), r.zrange(f"{ns}:{qname}", 0, -1, withscores=True)


def test_purge_then_undo_from_its_answer(
    console, q1, admin: Client, r: redis.Redis, ns: str
) -> None:
    before = raw(r, ns, "q1")
    response = admin.post(console.act(), {"action": "purge", "purge-confirm": "q1"}, follow=True)
    assert console.flashes(response) == ["Purged 3 messages from q1."]
    action, token = console.undo_button(response)
    assert action == console.act("q1")
    e = UndoEntry.objects.get()
    purge_row = AuditEntry.objects.get(action="purge")
    assert (e.token, e.action, e.queue, e.count, e.audit_id) == (
        token,
        "purge",
        "q1",
        3,
        purge_row.id,
    )
    assert r.zcard(f"{ns}:q1") == 0

    response = admin.post(
        action, {"action": "undo", "undo-token": token, "undo-confirm": "yes"}, follow=True
    )

    assert console.flashes(response) == ["Undid the purge of q1: put back 3 messages."]
    assert raw(r, ns, "q1") == before
    row = AuditEntry.objects.get(action="undo")
    assert (row.outcome, row.queue, row.count) == ("ok", "q1", 3)
    assert row.params["restored"] == 3 and row.params["skipped"] == {
        "present": 0, "gone": 0, "taken": 0, "foreign": 0
    }  # fmt: skip
    assert row.params["of"] == purge_row.id
    e.refresh_from_db()
    assert e.undone_at is not None and e.undone_by == row.username


def test_the_htmx_answer_carries_the_undo_and_the_undo_goes_to_the_queue(
    console, q1, admin: Client, r: redis.Redis, ns: str
) -> None:
    before = raw(r, ns, "q1")
    response = admin.post(console.act(), {"action": "delete", "ids": q1[:2]}, **console.htmx())
    assert response.status_code == 200
    assert console.flashes(response) == ["Deleted 2 messages."]
    action, token = console.undo_button(response)
    asked = 'data-confirm="Undo: put back the 2 messages this removed from q1?"'
    assert asked in response.content.decode()

    response = admin.post(
        action, {"action": "undo", "undo-token": token, "undo-confirm": "yes"}, **console.htmx()
    )

    assert response.status_code == 204 and response["HX-Redirect"] == console.queue("q1")
    assert raw(r, ns, "q1") == before


def test_a_second_undo_says_it_was_done_and_changes_nothing(
    console, q1, admin: Client, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    admin.post(console.act(), {"action": "delete", "ids": q1[2:]})
    token = UndoEntry.objects.get().token
    data = {"action": "undo", "undo-token": token, "undo-confirm": "yes"}
    admin.post(console.act(), data)
    before = raw(r, ns, "q1")

    response = admin.post(console.act(), data, follow=True)

    text = console.flashes(response)[-1]  # the earlier answers' flashes come first
    who = AuditEntry.objects.get(action="delete").username
    assert text.startswith("Already undone: the delete of q1 was undone at ") and text.endswith(
        f" by {who}. Nothing to do."
    )
    assert raw(r, ns, "q1") == before
    assert AuditEntry.objects.filter(action="undo").count() == 2


def test_an_expired_undo_offers_nothing_and_does_nothing(
    console, q1, admin: Client, r: redis.Redis, ns: str
) -> None:
    admin.post(console.act(), {"action": "purge", "purge-confirm": "q1"})
    UndoEntry.objects.update(expires=timezone.now() - dt.timedelta(seconds=1))
    token = UndoEntry.objects.get().token
    before = raw(r, ns, "q1")

    page = admin.get("/audit/").content.decode()
    assert "Undo expired." in page and "undo-token" not in page
    response = admin.post(
        console.act(), {"action": "undo", "undo-token": token, "undo-confirm": "yes"}, follow=True
    )

    assert console.flashes(response)[-1] == "The undo of the purge of q1 expired: nothing is kept."
    assert raw(r, ns, "q1") == before


def test_the_audit_page_offers_the_undo_while_it_lives(
    console, q1, admin: Client, operator: Client, r: redis.Redis, ns: str
) -> None:
    before = raw(r, ns, "q1")
    admin.post(console.act(), {"action": "move", "ids": q1, "to": "q2"})
    token = UndoEntry.objects.get().token

    page = admin.get("/audit/").content.decode()
    action, found = console.undo_button(type("R", (), {"content": page.encode()})())
    assert found == token and action == console.act("q1")
    assert "undo-token" not in operator.get("/audit/").content.decode()  # an admin's

    admin.post(action, {"action": "undo", "undo-token": token, "undo-confirm": "yes"})

    assert raw(r, ns, "q1") == before and r.zcard(f"{ns}:q2") == 0
    page = admin.get("/audit/").content.decode()
    who = AuditEntry.objects.get(action="undo").username
    assert page.count('name="undo-token"') == 0, page[page.find("undo-token") - 500 :][:900]
    assert "Undone " in page and f" by {who}." in page


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"undo-token": "x", "undo-confirm": "yes"}, "token must be 32 lowercase hex digits."),
        ({"undo-token": "a" * 32}, "This field is required."),
        ({"undo-token": "a" * 32, "undo-confirm": "no"}, "confirm must be yes"),
    ],
)
def test_bad_undo_input_is_refused_naming_the_field_and_changes_nothing(
    console, q1, admin: Client, ns_state, data: dict[str, str], error: str
) -> None:
    admin.post(console.act(), {"action": "delete", "ids": q1[:1]})
    AuditEntry.objects.all().delete()
    before = ns_state()

    response = admin.post(console.act(), {"action": "undo", **data})

    assert response.status_code == 422
    assert ns_state() == before
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome) == ("undo", "invalid") and error in row.detail


def test_an_unknown_token_is_refused(console, q1, admin: Client, ns_state) -> None:
    before = ns_state()
    response = admin.post(
        console.act(),
        {"action": "undo", "undo-token": "b" * 32, "undo-confirm": "yes"},
        follow=True,
    )
    assert console.flashes(response) == ["token: no Undo of an action on q1 has this token."]
    assert ns_state() == before


def test_delete_queue_then_undo_from_the_overview(
    console, q1, admin: Client, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    before = raw(r, ns, "q1")
    response = admin.post(
        console.act(), {"action": "delete_queue", "delete-confirm": "q1"}, follow=True
    )
    assert console.flashes(response) == ["Deleted queue q1 and its 3 messages."]
    action, token = console.undo_button(response)
    assert "q1" not in rsmq.list_queues()

    response = admin.post(
        action, {"action": "undo", "undo-token": token, "undo-confirm": "yes"}, follow=True
    )

    assert console.flashes(response) == [
        "Undid the delete queue of q1: queue q1 is back with its attributes, totals and 3 messages."
    ]
    assert raw(r, ns, "q1") == before and "q1" in rsmq.list_queues()


def test_redrive_and_a_message_pages_delete_are_undone(
    console, admin: Client, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    for q in ("work", "dead"):
        rsmq.create_queue(q)
    rsmq.set_dead_letter_policy("work", "dead", 1)
    mid = rsmq.send_message("work", "x")
    rsmq.receive_message("work", vt=0)
    assert rsmq.receive_message("work") is None  # dead-lettered
    before = raw(r, ns, "dead"), raw(r, ns, "work")
    redrive = {"action": "redrive", "confirm": "dead"}
    response = admin.post(console.act("dead"), redrive, follow=True)
    _, token = console.undo_button(response)
    admin.post(
        console.act("dead"),
        {"action": "undo", "undo-token": token, "undo-confirm": "yes"},
        follow=True,
    )
    assert (raw(r, ns, "dead"), raw(r, ns, "work")) == before

    response = admin.post(console.message_act(mid, "dead"), {"action": "delete"}, follow=True)
    assert console.flashes(response)[-1] == f"Deleted message {mid}."
    _, token = console.undo_button(response)
    admin.post(console.act("dead"), {"action": "undo", "undo-token": token, "undo-confirm": "yes"})
    assert raw(r, ns, "dead") == before[0]


def test_past_the_bound_the_confirmation_says_it_cannot_be_undone_and_nothing_is_kept(
    console, q1, admin: Client, operator: Client, settings, r: redis.Redis, ns: str
) -> None:
    page = admin.get(console.queue("q1")).content.decode()
    assert "An Undo is offered for 24 h." in page and "cannot be undone" not in page
    # to an operator, whose answer offers no Undo button: who can undo it
    assert "An admin can undo it within 24 h." in operator.get(console.queue("q1")).content.decode()
    settings.RSMQ_UNDO_MAX_MB = 0.0001  # 104 bytes: less than q1's three messages

    page = admin.get(console.queue("q1")).content.decode()
    assert page.count("This cannot be undone.") >= 2  # purge, delete queue
    assert "Delete 3 selected messages" not in page
    assert "? This cannot be undone." in page  # the selection's question
    assert "of q1: this cannot be undone." in page  # delete all's question

    response = admin.post(console.act(), {"action": "purge", "purge-confirm": "q1"}, follow=True)

    assert console.flashes(response) == [
        "Purged 3 messages from q1. Not kept for Undo: more than RSMQ_UNDO_MAX_MB (0.0001 MB)"
        " to keep: it cannot be undone."
    ]
    assert "undo-token" not in response.content.decode()
    assert not UndoEntry.objects.exists() and not list(r.scan_iter(f"{ns}:@undo:*"))


def test_a_failed_action_keeps_no_stash(
    console, q1, admin: Client, r: redis.Redis, ns: str
) -> None:
    admin.post(console.act(), {"action": "move", "ids": q1[:1], "to": "nosuch"})
    assert not UndoEntry.objects.exists() and not list(r.scan_iter(f"{ns}:@undo:*"))


def test_the_settings_are_checked(settings, tmp_path) -> None:
    settings.DATA_DIR = tmp_path
    settings.RSMQ_UNDO_HOURS = 0
    settings.RSMQ_UNDO_MAX_MB = "lots"
    assert problems() == [
        "RSMQ_UNDO_HOURS is 0: it must be a number more than 0 up to 720",
        "RSMQ_UNDO_MAX_MB is 'lots': it must be a number from 0 up to 1e+06",
    ]


def test_undo_off_says_so_before_and_after(
    console, q1, admin: Client, settings, r: redis.Redis, ns: str
) -> None:
    settings.RSMQ_UNDO_MAX_MB = 0
    page = admin.get(console.queue("q1")).content.decode()
    assert "This cannot be undone." in page and "An Undo is offered" not in page

    response = admin.post(console.act(), {"action": "delete", "ids": q1[:1]}, follow=True)

    assert console.flashes(response) == [
        "Deleted 1 message. Not kept for Undo: undo is off (RSMQ_UNDO_MAX_MB is 0)."
    ]
    assert not UndoEntry.objects.exists() and not list(r.scan_iter(f"{ns}:@undo:*"))
