"""Actions that confirm and answer where you click, a live refresh that doesn't fight the
operator, the keyboard: in Debian's chromium, against live_server and a real Redis.

Each confirmation appears with its count and consequence, and cancelling it changes
nothing (in Redis, and in the audit log); each action's answer is in the viewport, in an
``aria-live`` region, and focused; ticks survive a refresh.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Dialog, Page, expect

from dashboard.models import AuditEntry, Preference
from queues import RedisSMQ

# The browser, the users and the logged-in pages of the main browser module.
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class Dialogs:
    """Answers every confirm() of a page, accepting or cancelling, and notes what it asked."""

    def __init__(self, page: Page) -> None:
        self.asked: list[str] = []
        self.accept = False
        page.on("dialog", self.answer)

    def answer(self, d: Dialog) -> None:
        self.asked.append(d.message)
        if self.accept:
            d.accept()
        else:
            d.dismiss()


def in_flight(rsmq: RedisSMQ, qname: str, n: int) -> list[str]:
    rsmq.send_messages(qname, [f"m{i}" for i in range(n)])
    return [m.id for m in rsmq.receive_messages(qname, n, vt=3600)]


def feedback_shown(page: Page, text: str) -> None:
    """The answer is next to the button, in view and focused, read out, and said once."""
    note = page.locator("[data-feedback]")
    expect(note.locator("p").first).to_have_text(text)  # (an Undo may follow it)
    expect(note).to_be_in_viewport()
    expect(note).to_be_focused()
    expect(note).to_have_attribute("role", re.compile("^(status|alert)$"))
    expect(page.get_by_text(text, exact=True)).to_have_count(1)


@pytest.fixture
def admin_page(make_user, page_as) -> Page:
    return page_as(make_user("admin"), viewport={"width": 1280, "height": 720})


def test_requeue_all_asks_with_the_count_and_consequence_and_cancel_changes_nothing(
    console, admin_page: Page, rsmq: RedisSMQ, queue: str
) -> None:
    in_flight(rsmq, queue, 3)
    page = admin_page
    page.goto(f"{console}/q/{queue}/?state=inflight")
    page.locator("[data-all-guard]").fill(queue)

    dialogs = Dialogs(page)
    page.get_by_role("button", name="Requeue all").click()
    assert dialogs.asked == [
        f"Requeue 3 in-flight messages of {queue}: they will be delivered again."
    ]
    page.wait_for_timeout(300)
    assert rsmq.get_queue_attributes(queue).hiddenmsgs == 3
    assert not AuditEntry.objects.exists()

    dialogs.accept = True
    page.get_by_role("button", name="Requeue all").click()
    feedback_shown(page, "Requeued 3 messages (inflight).")
    assert rsmq.get_queue_attributes(queue).hiddenmsgs == 0
    assert page.errors == []  # type: ignore[attr-defined]


def test_delete_all_asks_and_cancel_changes_nothing(
    console, admin_page: Page, rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.send_messages(queue, ["a", "b"])
    page = admin_page
    page.goto(f"{console}/q/{queue}/")
    page.locator("[data-all-guard]").fill(queue)
    dialogs = Dialogs(page)
    page.get_by_role("button", name="Delete all").click()
    assert dialogs.asked == [f"Delete all 2 messages of {queue}: an Undo is offered for 24 h."]
    page.wait_for_timeout(300)
    assert rsmq.get_queue_attributes(queue).msgs == 2
    assert not AuditEntry.objects.exists()


def test_delete_all_without_the_name_typed_is_refused_by_the_server(
    console, admin_page: Page, rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.send_messages(queue, ["a", "b"])
    page = admin_page
    page.goto(f"{console}/q/{queue}/")
    page.locator("[data-all-guard]").fill("not-it")
    Dialogs(page).accept = True
    page.get_by_role("button", name="Delete all").click()
    feedback_shown(page, f"Type {queue} exactly to delete every message.")
    assert rsmq.get_queue_attributes(queue).msgs == 2


def test_delete_selected_asks_with_the_count_and_cancel_keeps_the_ticks(
    console, make_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    ids = rsmq.send_messages(queue, ["a", "b", "c"])
    page = page_as(make_user("operator"))
    page.goto(f"{console}/q/{queue}/")
    for mid in ids[:2]:
        page.get_by_role("checkbox", name=f"Select {mid}").check()
    expect(page.locator("[data-selected-count]")).to_have_text("2 selected")

    dialogs = Dialogs(page)
    page.get_by_role("button", name="Delete", exact=True).click()
    assert dialogs.asked == [  # an operator's page: the Undo is an admin's
        f"Delete 2 selected messages of {queue}? An admin can undo it within 24 h."
    ]
    page.wait_for_timeout(300)
    assert rsmq.get_queue_attributes(queue).msgs == 3
    expect(page.locator("#live input[name=ids]:checked")).to_have_count(2)

    dialogs.accept = True
    page.get_by_role("button", name="Delete", exact=True).click()
    feedback_shown(page, "Deleted 2 messages.")
    assert rsmq.get_queue_attributes(queue).msgs == 1
    expect(page.locator("[data-selected-count]")).to_have_text("0 selected")


def test_select_all_matching_leads_to_the_guarded_bar(
    console, settings, admin_page: Page, rsmq: RedisSMQ, queue: str
) -> None:
    settings.RSMQ_PAGE_SIZE = 2
    rsmq.send_messages(queue, ["a", "b", "c", "d", "e"])
    page = admin_page
    page.goto(f"{console}/q/{queue}/")
    matching = page.locator("[data-select-matching]")
    expect(matching).to_be_hidden()
    page.locator("input[data-select-all]").check()
    expect(page.locator("[data-selected-count]")).to_have_text("2 selected")
    expect(matching).to_have_text("Select all 5 messages")
    matching.click()
    expect(page.locator("[data-all-guard]")).to_be_focused()


@pytest.mark.parametrize(
    ("button", "fill", "answer"),
    [
        ("Send", {"#id_body": "hello"}, "Sent message "),
        ("Save", {"#id_vt": "45"}, "Saved: vt 45 s, delay 0 s, maxsize 65536."),
        (
            "Save policy",
            {"#id_dlq": "dead", "#id_maxrc": "3"},
            "Messages received 3 times now go to dead.",
        ),
        ("Purge queue", {"#id_purge-confirm": "QUEUE"}, "Purged 1 message from QUEUE."),
    ],
)
def test_the_answer_to_a_side_panel_action_is_in_view_and_focused(
    console, make_user, page_as, rsmq: RedisSMQ, queue: str, button: str, fill, answer: str
) -> None:
    rsmq.create_queue("dead")
    rsmq.send_messages(queue, [f"m{i}" for i in range(60)])  # a long page: the panel is low
    rsmq.delete_messages(queue, [m.id for m in rsmq.receive_messages(queue, 59, vt=1)])
    page = page_as(make_user("admin"), viewport={"width": 1280, "height": 600})
    page.goto(f"{console}/q/{queue}/")
    if button == "Save policy":
        page.get_by_text("Set a policy").click()
    for selector, value in fill.items():
        page.fill(selector, value.replace("QUEUE", queue))
    page.get_by_role("button", name=button, exact=True).scroll_into_view_if_needed()
    page.get_by_role("button", name=button, exact=True).click()
    note = page.locator("[data-feedback]")
    expect(note).to_contain_text(answer.replace("QUEUE", queue))
    expect(note).to_be_in_viewport()
    expect(note).to_be_focused()
    expect(page.get_by_text(answer.replace("QUEUE", queue))).to_have_count(1)
    assert page.errors == []  # type: ignore[attr-defined]


def test_an_invalid_form_focuses_its_field(console, make_user, page_as, queue: str) -> None:
    page = page_as(make_user("admin"))
    page.goto(f"{console}/q/{queue}/")
    page.fill("#id_vt", "99999999")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#id_vt")).to_be_focused()
    expect(page.locator("#id_vt")).to_be_in_viewport()


# -- live refresh -----------------------------------------------------------------------------


@pytest.fixture
def live_operator(make_user):
    user = make_user("operator")
    Preference.objects.create(user=user, refresh_seconds=2)
    return user


def test_ticks_survive_a_reload_and_pause_the_refresh_visibly(
    console, live_operator, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    ids = rsmq.send_messages(queue, ["a", "b"])
    page = page_as(live_operator)
    page.goto(f"{console}/q/{queue}/")
    state = page.locator("[data-live-state]")
    expect(state).to_have_text("Live")
    page.get_by_role("checkbox", name=f"Select {ids[1]}").check()
    expect(state).to_have_text("Paused: 1 selected")
    page.reload()
    expect(page.get_by_role("checkbox", name=f"Select {ids[1]}")).to_be_checked()
    expect(page.get_by_role("checkbox", name=f"Select {ids[0]}")).not_to_be_checked()
    expect(state).to_have_text("Paused: 1 selected")
    page.get_by_role("checkbox", name=f"Select {ids[1]}").uncheck()
    expect(state).to_have_text("Live")
    page.get_by_role("button", name="Pause").click()
    expect(state).to_have_text("Paused")
    rsmq.send_message(queue, "c")
    page.wait_for_timeout(2600)
    expect(page.locator("#live [data-count=msgs]")).to_have_text("2")  # no refresh while paused
    page.get_by_role("button", name="Resume").click()
    expect(page.locator("#live [data-count=msgs]")).to_have_text("3")  # at once


def test_the_live_refresh_keeps_a_text_selection(
    console, live_operator, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    ids = rsmq.send_messages(queue, ["a"])
    page = page_as(live_operator)
    page.goto(f"{console}/q/{queue}/")
    page.evaluate(
        """(id) => { const a = Array.from(document.querySelectorAll('#live td.mono a'))
             .find((e) => e.textContent === id);
           const r = document.createRange(); r.selectNodeContents(a);
           const s = getSelection(); s.removeAllRanges(); s.addRange(r); }""",
        ids[0],
    )
    rsmq.send_message(queue, "b")
    expect(page.locator("#live [data-count=msgs]")).to_have_text("2", timeout=6000)  # refreshed
    assert page.evaluate("getSelection().toString()") == ids[0]


def test_a_tab_coming_back_into_view_refreshes_at_once(
    console, make_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    user = make_user("viewer")
    Preference.objects.create(user=user, refresh_seconds=60)
    page = page_as(user)
    page.goto(f"{console}/")
    rsmq.send_messages(queue, ["a", "b", "c"])
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    expect(page.locator("#totals .count").nth(1).locator(".value")).to_have_text("3")


# -- keyboard ---------------------------------------------------------------------------------


def test_the_keyboard_reaches_search_rows_and_ticks(
    console, make_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    ids = rsmq.send_messages(queue, ["a", "b"])
    page = page_as(make_user("operator"))
    page.goto(f"{console}/q/{queue}/")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Enter")
    page.keyboard.press("/")
    expect(page.locator("main input[type=search]").first).to_be_focused()
    page.locator("main input[type=search]").first.blur()
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(page.locator("table.messages tbody tr.current")).to_have_count(1)
    page.keyboard.press("x")
    checked = page.locator("#live input[name=ids]:checked")
    expect(checked).to_have_count(1)
    expect(checked).to_have_value(ids[1])
    page.keyboard.press("k")
    page.keyboard.press("x")
    expect(checked).to_have_count(2)


def test_a_typed_confirmation_is_not_refreshed_away(
    console, make_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    user = make_user("admin")
    Preference.objects.create(user=user, refresh_seconds=2)
    rsmq.send_messages(queue, ["a"])
    page = page_as(user)
    page.goto(f"{console}/q/{queue}/")
    page.locator("[data-all-guard]").fill(queue)
    page.keyboard.press("Tab")  # focus leaves the field, for the next button
    expect(page.locator("[data-live-state]")).to_have_text("Paused: unsent input")
    rsmq.send_message(queue, "b")
    page.wait_for_timeout(2600)
    expect(page.locator("[data-all-guard]")).to_have_value(queue)
    expect(page.locator("#live [data-count=msgs]")).to_have_text("1")


def test_the_live_refresh_keeps_the_focus(
    console, live_operator, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.send_messages(queue, ["a"])
    page = page_as(live_operator)
    page.goto(f"{console}/")
    page.keyboard.press("j")  # the first row's link
    link = page.locator("table.queues tbody tr").first.get_by_role("link", name=queue)
    expect(link).to_be_focused()
    rsmq.send_message(queue, "b")
    expect(page.locator("#totals .count").nth(1).locator(".value")).to_have_text("2", timeout=6000)
    expect(link).to_be_focused()
    expect(page.locator("[data-live-state]")).to_have_text("Live")
