"""The console in a real browser: Debian's chromium driven by Playwright against live_server.

Each test is a flow an operator does, asserting what they see on the page and what Redis
holds afterwards. ``RSMQ_BROWSER_SHOTS=DIR`` saves a screenshot of every flow to DIR; the
README's screenshots come from test_ux_screenshots.py (``RSMQ_SCREENSHOTS=1``).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from support.browser import CHROMIUM, PASSWORD, role_group

from dashboard.models import Preference
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ
from queues.server import free_port

if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)",
        allow_module_level=True,
    )

from playwright.sync_api import (  # noqa: E402  (after the skip: no chromium, no import)
    Page,
    expect,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("RSMQ_BROWSER_SHOTS", "")


def shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


# -- helpers -------------------------------------------------------------------------------


def _headers(page: Page) -> list[str]:
    # text_content, not inner_text: the headers are upper-cased by CSS.
    return [
        re.sub(r"[▲▼]", "", h).strip()
        for h in page.locator("table.queues thead th").all_text_contents()
    ]


def _row(page: Page, qname: str):
    return page.locator("table.queues tbody tr").filter(
        has=page.get_by_role("link", name=qname, exact=True)
    )


def overview_row(page: Page, qname: str) -> dict[str, str]:
    """The overview table's row for a queue, as {column header: cell text}."""
    cells = [c.strip() for c in _row(page, qname).locator("td").all_inner_texts()]
    return dict(zip(_headers(page), cells, strict=True))


def overview_cell(page: Page, qname: str, column: str):
    return _row(page, qname).locator("td").nth(_headers(page).index(column))


def browser_rows(page: Page) -> list[tuple[str, str]]:
    """(id, state) of every row the message browser shows."""
    rows = page.locator("table.messages tbody tr")
    ids = rows.locator("td.mono a").all_inner_texts()
    states = rows.locator("span.state").all_inner_texts()
    return list(zip(ids, states, strict=True))


def count(page: Page, name: str):
    return page.locator(f"#live [data-count={name}]")


def mark_page(page: Page) -> None:
    """Set a flag that only survives if the page is not reloaded."""
    page.evaluate("window.__noReload = 'still here'")


def assert_not_reloaded(page: Page) -> None:
    assert page.evaluate("window.__noReload") == "still here", "the page was reloaded"


# -- 1. log in ---------------------------------------------------------------------------


def test_log_in_and_see_the_queue_counts_on_the_overview(
    console, make_user, new_context, rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.send_messages(queue, [f"job {i}" for i in range(5)])
    rsmq.receive_messages(queue, 2, vt=300)
    rsmq.create_queue("empty")
    make_user("viewer", "vera")

    page = new_context().new_page()
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login/\?next="))
    page.fill("#id_username", "vera")
    page.fill("#id_password", "wrong password")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".flash.error")).to_contain_text("didn't match")

    page.fill("#id_username", "vera")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(re.escape(console) + "/$"))
    expect(page.get_by_role("heading", name=re.compile("^Queues"))).to_be_visible()
    expect(page.locator("header")).to_contain_text("vera")
    row = overview_row(page, queue)
    assert row["Messages"] == "5"
    assert row["Visible"] == "3"
    assert row["In flight"] == "2"
    assert row["Delayed"] == "0"
    assert row["Sent"] == "5"
    assert row["Received"] == "2"
    assert overview_row(page, "empty")["Messages"] == "0"
    shot(page, "01-overview")


# -- 2. browse ---------------------------------------------------------------------------


def test_browse_messages_by_state_and_page(
    console, settings, make_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    settings.RSMQ_PAGE_SIZE = 4
    settings.RSMQ_REFRESH_SECONDS = 0
    sent = rsmq.send_messages(queue, [json.dumps({"n": i}) for i in range(4)])
    inflight = [m.id for m in rsmq.receive_messages(queue, 2, vt=300)]
    visible = [i for i in sent if i not in inflight]
    delayed = rsmq.send_messages(queue, ['{"later": 1}', '{"later": 2}'], delay=600)
    assert inflight == sent[:2]

    page = page_as(make_user("viewer"))
    page.goto(f"{console}/q/{queue}/")
    tabs = page.locator("nav.tabs a")
    expect(tabs).to_have_text(
        [re.compile(p) for p in ("All 6", "Visible 2", "In flight 2", "Delayed 2")]
    )
    expect(page.locator("nav.tabs a[aria-current=page]")).to_contain_text("All")
    expect(page.locator(".pagination")).to_contain_text("Page 1 of 2 · 6 messages")
    first = browser_rows(page)
    assert len(first) == 4

    page.get_by_role("link", name="Next →").click()
    expect(page).to_have_url(re.compile(r"after="))  # keyset: after the last one shown
    expect(page.locator(".pagination")).to_contain_text("Page 2 of 2")
    second = browser_rows(page)
    assert len(second) == 2
    assert {i for i, _ in first + second} == set(sent + delayed)
    assert dict(first + second) == {
        **dict.fromkeys(visible, "visible"),
        **dict.fromkeys(inflight, "in flight"),
        **dict.fromkeys(delayed, "delayed"),
    }
    page.get_by_role("link", name="← Previous").click()
    expect(page.locator(".pagination")).to_contain_text("Page 1 of 2")

    for tab, ids, state in (
        ("Visible", visible, "visible"),
        ("In flight", inflight, "in flight"),
        ("Delayed", delayed, "delayed"),
    ):
        page.locator("nav.tabs a", has_text=tab).click()
        expect(page.locator("nav.tabs a[aria-current=page]")).to_contain_text(tab)
        expect(page.locator("table.messages tbody tr")).to_have_count(len(ids))
        assert sorted(browser_rows(page)) == sorted((i, state) for i in ids)
        expect(page.locator(".pagination a")).to_have_count(0)  # one page only
    shot(page, "02-browse-delayed")

    page.locator("nav.tabs a", has_text="All").click()
    expect(page.locator("table.messages tbody tr")).to_have_count(4)
    assert page.errors == []  # type: ignore[attr-defined]


# -- 3. requeue ----------------------------------------------------------------------------


def test_requeue_a_message_in_flight_with_htmx(
    console, make_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.send_messages(queue, ["a", "b", "c"])
    mid = rsmq.receive_message(queue, vt=300).id
    page = page_as(make_user("operator"))
    page.goto(f"{console}/q/{queue}/?state=inflight")
    expect(page.locator("table.messages tbody tr")).to_have_count(1)
    mark_page(page)

    page.get_by_role("checkbox", name=f"Select {mid}").check()
    with page.expect_response(lambda r: r.url.endswith("/act/")) as posted:
        page.get_by_role("button", name="Requeue", exact=True).click()
    assert posted.value.request.headers.get("hx-request") == "true"
    assert posted.value.status == 200
    expect(page.locator("[data-feedback]")).to_have_text("Requeued 1 message.")
    assert_not_reloaded(page)
    msg = rsmq.get_message(queue, mid)
    assert msg.state == "visible"
    assert msg.rc == 1  # requeue keeps the receive count
    # The page now shows it: the in-flight tab is empty and the counts moved.
    expect(page.locator("#live .empty")).to_have_text("No in-flight messages.")
    expect(count(page, "inflight")).to_have_text("0")
    expect(count(page, "visible")).to_have_text("3")
    shot(page, "03-requeued-htmx")
    assert page.errors == []  # type: ignore[attr-defined]


def test_requeue_works_without_javascript(
    console, make_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.send_messages(queue, ["a", "b", "c"])
    mid = rsmq.receive_message(queue, vt=300).id
    page = page_as(make_user("operator"), java_script_enabled=False)
    page.goto(f"{console}/q/{queue}/")
    page.get_by_role("checkbox", name=f"Select {mid}").check()
    with page.expect_response(lambda r: r.url.endswith("/act/")) as posted:
        page.get_by_role("button", name="Requeue", exact=True).click()
    assert posted.value.status == 302  # a plain form post, then back to the page
    assert "hx-request" not in posted.value.request.headers
    expect(page).to_have_url(re.compile(re.escape(f"{console}/q/{queue}/") + "$"))
    expect(page.locator("#flash")).to_have_text("Requeued 1 message.")
    assert rsmq.get_message(queue, mid).state == "visible"
    expect(count(page, "inflight")).to_have_text("0")
    shot(page, "03-requeued-nojs")


def test_requeue_a_message_on_its_page_with_htmx(
    console, make_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.create_queue("elsewhere")
    rsmq.send_message(queue, "a")
    mid = rsmq.receive_message(queue, vt=300).id
    page = page_as(make_user("operator"))
    page.goto(f"{console}/q/{queue}/m/{mid}/")
    expect(page.locator("#move-targets option")).to_have_count(1)
    mark_page(page)

    page.get_by_role("button", name="Requeue (visible now)").click()
    expect(page.locator("[data-feedback]")).to_have_text("Requeued: visible now.")
    expect(page.locator(".state")).to_have_text("visible")
    assert_not_reloaded(page)
    # The answer left the "move to" suggestions out (not read again); the page keeps its own
    # (an hx-preserve'd list crashed Chromium: htmx moves it with moveBefore).
    expect(page.locator("#move-targets option")).to_have_count(1)
    assert page.errors == []  # type: ignore[attr-defined]


# -- 4. purge ------------------------------------------------------------------------------


def test_purge_needs_the_queue_name_typed(console, make_user, page_as, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("q1", vt=45, delay=0, maxsize=4096)
    rsmq.send_messages("q1", [f"m{i}" for i in range(5)])
    rsmq.receive_messages("q1", 2, vt=300)
    page = page_as(make_user("admin"))
    page.goto(f"{console}/q/q1/")
    mark_page(page)

    page.fill("#id_purge-confirm", "Q1")
    page.get_by_role("button", name="Purge queue").click()
    expect(page.locator(".danger-zone .error")).to_have_text("Type q1 exactly to confirm.")
    assert rsmq.get_queue_attributes("q1").msgs == 5
    expect(count(page, "msgs")).to_have_text("5")
    shot(page, "04-purge-wrong-name")

    page.fill("#id_purge-confirm", "q1")
    page.get_by_role("button", name="Purge queue").click()
    expect(page.locator("[data-feedback] p").first).to_have_text("Purged 5 messages from q1.")
    assert_not_reloaded(page)
    a = rsmq.get_queue_attributes("q1")
    assert (a.msgs, a.hiddenmsgs) == (0, 0)
    assert (a.totalsent, a.totalrecv) == (5, 2)
    assert (a.vt, a.delay, a.maxsize) == (45, 0, 4096)
    expect(count(page, "msgs")).to_have_text("0")
    expect(count(page, "totalsent")).to_have_text("5")
    expect(page.locator("#live .empty")).to_have_text("No messages.")
    expect(page.locator("#id_purge-confirm")).to_have_value("")
    shot(page, "04-purged")
    assert page.errors == []  # type: ignore[attr-defined]


# -- 5. live refresh -------------------------------------------------------------------------


@pytest.fixture
def live_user(make_user):
    user = make_user("operator")
    Preference.objects.create(user=user, refresh_seconds=2)
    return user


def test_live_refresh_updates_the_queue_page_and_the_overview(
    console, live_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.send_messages(queue, ["one", "two", "three"])
    page = page_as(live_user)
    page.goto(f"{console}/q/{queue}/")
    trigger = page.locator("#live").get_attribute("hx-trigger")
    assert "every 2s" in trigger
    # console.js pauses it (hidden tab, selection): no filter in the trigger (that is eval)
    assert page.locator("#live").get_attribute("data-poll") is not None
    expect(count(page, "msgs")).to_have_text("3")
    mark_page(page)
    rsmq.send_message(queue, "from outside")
    expect(count(page, "msgs")).to_have_text("4", timeout=8_000)
    expect(page.locator("table.messages tbody tr")).to_have_count(4)
    assert_not_reloaded(page)

    page.goto(f"{console}/")
    expect(overview_cell(page, queue, "Messages")).to_have_text("4")
    mark_page(page)
    rsmq.send_message(queue, "and another")
    expect(overview_cell(page, queue, "Messages")).to_have_text("5", timeout=8_000)
    assert_not_reloaded(page)
    assert page.errors == []  # type: ignore[attr-defined]


def hide(page: Page) -> None:
    """What the browser reports when the operator switches to another tab."""
    page.evaluate(
        """() => {
            const hidden = {value: "hidden", configurable: true};
            Object.defineProperty(document, "visibilityState", hidden);
            document.dispatchEvent(new Event("visibilitychange"));
        }"""
    )


def unhide(page: Page) -> None:
    page.evaluate(
        """() => {
            delete document.visibilityState;
            document.dispatchEvent(new Event("visibilitychange"));
        }"""
    )


def record_polls(page: Page) -> list[str]:
    polls: list[str] = []
    page.on("request", lambda r: polls.append(r.url) if r.headers.get("hx-request") else None)
    return polls


def test_live_refresh_pauses_while_choosing_messages_or_while_the_tab_is_hidden(
    console, live_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    mid = rsmq.send_message(queue, "pick me")
    choosing, hidden = page_as(live_user), page_as(live_user)
    for page in (choosing, hidden):
        page.goto(f"{console}/q/{queue}/")
        assert page.evaluate("rsmqIdle()") is True
    box = choosing.get_by_role("checkbox", name=f"Select {mid}")
    box.check()
    hide(hidden)
    assert hidden.evaluate("rsmqIdle()") is False
    polls = {"choosing": record_polls(choosing), "hidden": record_polls(hidden)}

    rsmq.send_message(queue, "meanwhile")
    choosing.wait_for_timeout(5_000)  # two and a half refresh periods
    expect(box).to_be_checked()
    for page in (choosing, hidden):
        expect(count(page, "msgs")).to_have_text("1")  # not re-rendered
    assert polls == {"choosing": [], "hidden": []}

    # Done choosing (and clicked elsewhere); back on the tab: the refresh resumes.
    box.uncheck()
    choosing.locator(".count .label").first.click()
    unhide(hidden)
    for page in (choosing, hidden):
        expect(count(page, "msgs")).to_have_text("2", timeout=8_000)
    expect(box).not_to_be_checked()


def test_live_refresh_resumes_when_the_last_box_is_unticked(
    console, live_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    mid = rsmq.send_message(queue, "pick me")
    page = page_as(live_user)
    page.goto(f"{console}/q/{queue}/")
    box = page.get_by_role("checkbox", name=f"Select {mid}")
    box.check()
    assert page.evaluate("rsmqIdle()") is False  # choosing: paused
    box.uncheck()  # changed their mind: nothing is selected any more
    assert page.evaluate("rsmqIdle()") is True, "live refresh still paused"


def test_a_tick_made_while_a_refresh_is_in_flight_is_kept(
    console, live_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    mid = rsmq.send_message(queue, "pick me")
    page = page_as(live_user)
    held = []  # a slow Redis: the next refresh is held until the operator has ticked
    page.route(
        re.compile(rf".*/q/{queue}/(\?.*)?$"),
        lambda route: (
            held.append(route) if route.request.headers.get("hx-request") else route.continue_()
        ),
    )
    page.goto(f"{console}/q/{queue}/")
    deadline = time.monotonic() + 6
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert held, "no refresh started"
    box = page.get_by_role("checkbox", name=f"Select {mid}")
    box.check()
    with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true"):
        held[0].continue_()
    page.wait_for_timeout(300)  # the swap
    assert box.is_checked(), "the tick was lost to a refresh"


# -- 6. roles ------------------------------------------------------------------------------

ACTION_BUTTONS = {
    # button name: the least role that sees it
    "Requeue": "operator",
    "Delete": "operator",
    "Send": "operator",
    "Save": "admin",
    "Purge queue": "admin",
    "Delete queue": "admin",
    "Delete all": "admin",
}
ORDER = ["viewer", "operator", "admin"]


@pytest.mark.parametrize("role", ORDER)
def test_each_role_sees_only_its_actions(
    console, role: str, make_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.send_messages(queue, ["x", "y"])
    page = page_as(make_user(role))
    page.goto(f"{console}/q/{queue}/")
    expect(page.locator("table.messages tbody tr")).to_have_count(2)
    for name, least in ACTION_BUTTONS.items():
        buttons = page.get_by_role("button", name=name, exact=True)
        allowed = ORDER.index(role) >= ORDER.index(least)
        expect(buttons, f"{role} and {name!r}").to_have_count(1 if allowed else 0)
    expect(page.locator("input[name=ids]")).to_have_count(0 if role == "viewer" else 2)
    shot(page, f"06-queue-as-{role}")

    page.goto(f"{console}/")
    expect(page.locator("details.create")).to_have_count(1 if role == "admin" else 0)

    if role != "admin":
        # Hidden is not enough: the server refuses too (403), and nothing changes.
        action = "requeue" if role == "viewer" else "purge"
        status = page.evaluate(
            """async ([url, action]) => {
                const token = JSON.parse(document.body.getAttribute("hx-headers"))["x-csrftoken"];
                const body = new URLSearchParams({action, "purge-confirm": "q1"});
                const r = await fetch(url, {method: "POST", body, headers: {"x-csrftoken": token}});
                return r.status;
            }""",
            [f"{console}/q/{queue}/act/", action],
        )
        assert status == 403
        assert rsmq.get_queue_attributes(queue).msgs == 2


# -- 7. message page -----------------------------------------------------------------------


def test_message_page_pretty_prints_json_and_escapes_html(
    console, make_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    order = {"order_id": 10_042, "customer": {"email": "ana@example.com"}, "total": 99.5}
    json_id = rsmq.send_message(queue, json.dumps(order, separators=(",", ":")))
    evil = "<img src=x onerror=alert(1)>"
    html_id = rsmq.send_message(queue, evil)
    page = page_as(make_user("viewer"))
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

    page.goto(f"{console}/q/{queue}/m/{json_id}/")
    body = page.locator("pre.body-full")
    # a viewer reads an e-mail address masked (RSMQ_MASKING's default: docs/bodies.md)
    masked = {**order, "customer": {"email": "[masked]"}}
    expect(body).to_have_text(json.dumps(masked, indent=2))
    assert "\n" in body.inner_text()  # really laid out, not one line
    expect(page.locator(".attrs")).to_contain_text("visible")
    shot(page, "07-message-json")

    page.goto(f"{console}/q/{queue}/m/{html_id}/")
    expect(body).to_have_text(evil)
    expect(page.locator("main img")).to_have_count(0)
    page.goto(f"{console}/q/{queue}/")  # the browser's preview column too
    expect(page.locator("table.messages td.body").filter(has_text=evil)).to_have_count(1)
    expect(page.locator("main img")).to_have_count(0)
    page.wait_for_timeout(300)
    assert dialogs == []
    assert page.errors == []  # type: ignore[attr-defined]


# -- 8. Redis down -------------------------------------------------------------------------


def test_redis_down_shows_a_banner(settings, make_user, page_as) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    settings.RSMQ_CONNECTIONS = [{"name": "default", "url": url, "namespaces": ["rsmq"]}]
    page = page_as(make_user("viewer"))
    response = page.goto("/")
    assert response.status == 503
    banner = page.get_by_role("alert")
    expect(banner).to_contain_text("Redis is unavailable")
    expect(banner).to_contain_text(f"127.0.0.1:{url.rsplit(':', 1)[1].split('/')[0]}")
    expect(page.locator("body")).not_to_contain_text("Traceback")
    shot(page, "08-redis-down")


def test_redis_going_down_under_an_open_page_shows_a_banner_and_recovers(
    console, settings, redis_url: str, ns: str, live_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.send_message(queue, "hello")
    page = page_as(live_user)
    page.goto(f"{console}/q/{queue}/")
    expect(count(page, "msgs")).to_have_text("1")
    up = settings.RSMQ_CONNECTIONS
    down = f"redis://127.0.0.1:{free_port()}/0"
    settings.RSMQ_CONNECTIONS = [{"name": "default", "url": down, "namespaces": [ns]}]
    expect(page.get_by_role("alert")).to_contain_text("Redis is unavailable", timeout=8_000)
    shot(page, "08-redis-down-live")
    # One page: the 503 page is not nested inside the open one.
    assert page.locator("header.top").count() == 1
    assert page.locator("main").count() == 1
    # Redis is back: the page catches up by itself.
    rsmq.send_message(queue, "while it was down")
    settings.RSMQ_CONNECTIONS = up
    expect(count(page, "msgs")).to_have_text("2", timeout=8_000)


def test_queue_deleted_under_an_open_page_says_so(
    console, live_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    page = page_as(live_user)
    page.goto(f"{console}/q/{queue}/")
    expect(count(page, "msgs")).to_have_text("0")
    rsmq.delete_queue(queue)
    gone = page.get_by_text(f"Queue {queue} does not exist (any more).")
    expect(gone).to_be_visible(timeout=8_000)
    shot(page, "08-queue-deleted-live")
    assert page.locator("header.top").count() == 1
    assert page.locator("main").count() == 1


@pytest.mark.parametrize("trouble", ["redis down", "role revoked"])
def test_an_action_that_cannot_run_shows_one_clear_page(
    console, settings, trouble: str, make_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    mid = rsmq.send_message(queue, "x")
    user = make_user("operator")
    page = page_as(user)
    page.goto(f"{console}/q/{queue}/")
    page.get_by_role("checkbox", name=f"Select {mid}").check()
    if trouble == "redis down":
        down = f"redis://127.0.0.1:{free_port()}/0"
        settings.RSMQ_CONNECTIONS = [
            {"name": "default", "url": down, "namespaces": [console.rsplit("/", 1)[1]]}
        ]
        expected = "Redis is unavailable"
    else:
        user.groups.set([role_group("viewer")])
        expected = "This needs the operator role."
    with page.expect_response(lambda r: r.url.endswith("/act/")) as posted:
        page.get_by_role("button", name="Requeue", exact=True).click()
    assert posted.value.status == (503 if trouble == "redis down" else 403)
    expect(page.get_by_text(expected)).to_be_visible()
    shot(page, f"08-action-{trouble.replace(' ', '-')}")
    assert page.locator("header.top").count() == 1
    assert page.locator("main").count() == 1


# -- 9. charts -----------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_queue_page_charts_the_snapshots(
    console, lake, settings, scheme: str, make_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    settings.RSMQ_SNAPSHOT_INTERVAL = 10
    for _ in range(4):  # what the Celery task does every interval, while messages arrive
        rsmq.send_messages(queue, [f"job {i}" for i in range(5)])
        take_snapshot()
        time.sleep(0.25)
    rsmq.receive_messages(queue, 3, vt=600)
    take_snapshot()
    page = page_as(make_user("viewer"), color_scheme=scheme)
    page.goto(f"{console}/q/{queue}/")

    backlog = page.get_by_role("img", name=re.compile("^Backlog"))
    expect(backlog).to_have_accessible_name("Backlog: visible 17, in flight 3, delayed 0")
    expect(backlog.locator("polyline.s-visible")).to_have_count(1)
    points = backlog.locator("polyline.s-visible").get_attribute("points").split()
    assert len(points) == 5
    rates = page.get_by_role("img", name=re.compile("^Messages per second"))
    expect(rates.locator("polyline.s-sent")).to_have_count(1)
    legend = page.locator("#charts ul.legend").first
    expect(legend).to_contain_text("visible 17")
    # Drawn in the theme's colours: the visible line is green on either background.
    stroke = backlog.locator("polyline.s-visible").evaluate("e => getComputedStyle(e).stroke")
    assert stroke == {"light": "rgb(6, 118, 71)", "dark": "rgb(71, 205, 137)"}[scheme]
    shot(page, f"09-charts-{scheme}")

    # Another range: only the charts change, and the address remembers it.
    mark_page(page)
    page.get_by_role("link", name="last day").click()
    expect(page.locator("#charts a[aria-current]")).to_have_text("last day")
    expect(page).to_have_url(re.compile(r"\?range=day$"))
    # A day is drawn in 4-minute buckets, each with its largest counts: one point here.
    expect(backlog).to_have_accessible_name("Backlog: visible 20, in flight 3, delayed 0")
    expect(page.locator("#charts .note")).to_have_text("one point per 4 min")
    assert_not_reloaded(page)

    page.goto(f"{console}/")
    expect(overview_cell(page, queue, "Last hour").locator("svg.spark")).to_have_count(1)
    assert page.errors == []  # type: ignore[attr-defined]


# -- Content-Security-Policy ---------------------------------------------------------------

CSP_WATCH = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


def test_no_page_breaks_the_content_security_policy(
    console, settings, make_user, new_context, rsmq: RedisSMQ, queue: str, django_user_model
) -> None:
    """Every page, with its live refresh and an htmx action, under the strict policy:
    no violation reported by the browser (the event, and the console's own words)."""
    settings.RSMQ_REFRESH_SECONDS = 2
    rsmq.create_queue("dead")
    rsmq.set_dead_letter_policy(queue, "dead", 1)
    mid = rsmq.send_message(queue, '{"order": 1}')
    admin = make_user("admin")
    admin.is_staff = admin.is_superuser = True
    admin.save()
    for user, paths in [
        (None, ["/login/"]),
        (admin, [f"{console}/", f"{console}/q/{queue}/", f"{console}/q/{queue}/m/{mid}/",
                 "/audit/", "/admin/", "/admin/dashboard/auditentry/", "/admin/auth/user/"]),
    ]:  # fmt: skip
        ctx = new_context(user)
        ctx.add_init_script(CSP_WATCH)
        page = ctx.new_page()
        said: list[str] = []
        page.on("console", lambda m, said=said: said.append(m.text))
        for path in paths:
            response = page.goto(path)
            assert response is not None and response.status == 200, path
            assert "script-src 'self'" in response.headers["content-security-policy"]
            if path.endswith(f"/q/{queue}/"):
                page.wait_for_timeout(2500)  # one live refresh, swapped in by htmx
                page.get_by_role("button", name="Send").click()  # an htmx action
                page.wait_for_load_state("networkidle")
            assert page.evaluate("window.__csp") == [], path
        assert not [m for m in said if "Content Security Policy" in m], said
